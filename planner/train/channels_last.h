/* channels_last.h — channels-last activations as a plan property (--layout nhwc).
 *
 * cuDNN's fastest convolutions (tensor cores, TF32 or half) read and write
 * (N, H, W, C); with (N, C, H, W) tensors cuDNN transposes inside or picks
 * slower kernels. This pass, on the forward graph before autodiff, makes
 * every 2-d Conv, ConvRelu and ConvTranspose channels-last (filters
 * (K, C, R, S) -> (K, R, S, C): cuDNN's NHWC filter format, for ConvTranspose's
 * (C, M, R, S) alike) and carries the layout downstream through the
 * nodes that can take it: BatchNormalization, BatchNormRelu, MaxPool (one
 * output), AveragePool, GlobalAveragePool (also when they read the model's
 * input or a parameter directly), Concat of channels-last tensors (their
 * channels_last attribute: ir.h) and the elementwise ops whose inputs all have the output's shape (or
 * one element): Relu, Add, Mul, ... (no attribute: the layout does not
 * matter to them). Dropout is not taken (its mask follows the element order).
 * Where the layout changes, an explicit Transpose converts — the model's
 * input before the first Conv, each Conv's filter (K, C, R, S) -> (K, R, S, C),
 * and a channels-last tensor before a node that reads (N, C, H, W) — named
 * outcore/layout/<tensor>/nhwc|nchw, so the planner, the simulator and the
 * profile count them like any node, and autodiff differentiates them (a
 * Transpose's gradient is the inverse Transpose). Tensors keep their names;
 * their shapes become the stored (N, H, W, C) order. A node whose output is a
 * graph output stays as it is.
 *
 *   int nodes, conv;
 *   if (channels_last_pass(forward_graph, &nodes, &conv, &err)) ...
 */
#ifndef OC_CHANNELS_LAST_H
#define OC_CHANNELS_LAST_H

#include "ir/ir.h"

/* The prefix of the conversion nodes' names (a saved model leaves them out). */
#define CHANNELS_LAST_PREFIX "outcore/layout/"

/* Rewrites g in place; *n_nodes: nodes made channels-last, *n_conversions:
 * Transposes inserted. */
int channels_last_pass(ir_graph *g, int *n_nodes, int *n_conversions, oc_err *err);
/* A conversion node of this pass. */
bool channels_last_is_conversion(const ir_node *n);

#endif
