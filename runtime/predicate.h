/* predicate.h — the bool-valued elementwise ops, written once for every backend
 * (cpu_predicate.c, cuda_binary.cu) and for plan-time folding: comparisons (Less,
 * Greater, LessOrEqual, GreaterOrEqual, Equal) of two numbers, logic (And, Or,
 * Xor, Not) of bools, and the classes of a float (IsNaN, IsInf).
 *
 * A node's code (oc_pred_code) says which; operands broadcast as for Add. A
 * comparison reads two values of one type: float32 (a NaN compares unequal
 * and unordered, as IEEE's), int64, int32 or bool; logic reads bools (any
 * nonzero byte true). Plain C: C and CUDA C++ include it alike. */
#ifndef OC_PREDICATE_H
#define OC_PREDICATE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ops/op_list.h"

#ifdef __CUDACC__
#define OC_PRED_HD __host__ __device__
#else
#define OC_PRED_HD
#endif

typedef enum oc_pred {
    OC_PRED_LT,
    OC_PRED_GT,
    OC_PRED_LE,
    OC_PRED_GE,
    OC_PRED_EQ,
    OC_PRED_AND,
    OC_PRED_OR,
    OC_PRED_XOR,
    OC_PRED_NOT,   /* unary */
    OC_PRED_ISNAN, /* unary */
    OC_PRED_ISINF, /* unary: +inf when detect_positive, -inf when detect_negative */
} oc_pred;

/* The code of op (one of the predicate ops), or -1. */
OC_PRED_HD static inline int oc_pred_code(int op) {
    switch (op) {
    case OP_LESS: return OC_PRED_LT;
    case OP_GREATER: return OC_PRED_GT;
    case OP_LESS_OR_EQUAL: return OC_PRED_LE;
    case OP_GREATER_OR_EQUAL: return OC_PRED_GE;
    case OP_EQUAL: return OC_PRED_EQ;
    case OP_AND: return OC_PRED_AND;
    case OP_OR: return OC_PRED_OR;
    case OP_XOR: return OC_PRED_XOR;
    case OP_NOT: return OC_PRED_NOT;
    case OP_IS_NAN: return OC_PRED_ISNAN;
    case OP_IS_INF: return OC_PRED_ISINF;
    default: return -1;
    }
}

OC_PRED_HD static inline bool oc_pred_unary(int code) { return code >= OC_PRED_NOT; }

/* A comparison or logic code of a and b, one function per operand type. */
#define OC_PRED_BINARY(name, T)                                                                    \
    OC_PRED_HD static inline bool name(int code, T a, T b) {                                       \
        switch (code) {                                                                            \
        case OC_PRED_LT: return a < b;                                                             \
        case OC_PRED_GT: return a > b;                                                             \
        case OC_PRED_LE: return a <= b;                                                            \
        case OC_PRED_GE: return a >= b;                                                            \
        case OC_PRED_EQ: return a == b;                                                            \
        case OC_PRED_AND: return a != 0 && b != 0;                                                 \
        case OC_PRED_OR: return a != 0 || b != 0;                                                  \
        default: return (a != 0) != (b != 0); /* OC_PRED_XOR */                                    \
        }                                                                                          \
    }
OC_PRED_BINARY(oc_pred_f32, float)
OC_PRED_BINARY(oc_pred_i64, int64_t)
OC_PRED_BINARY(oc_pred_i32, int32_t)
OC_PRED_BINARY(oc_pred_u8, uint8_t)
#undef OC_PRED_BINARY

/* A unary code of x (Not reads x as a bool's byte, nonzero true). */
OC_PRED_HD static inline bool oc_pred_of(int code, float x, bool detect_pos, bool detect_neg) {
    switch (code) {
    case OC_PRED_NOT: return x == 0.0f;
    case OC_PRED_ISNAN: return x != x;
    default: /* OC_PRED_ISINF */
        return (detect_pos && x > 3.402823466e38f) || (detect_neg && x < -3.402823466e38f);
    }
}

#endif
