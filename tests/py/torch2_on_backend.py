#!/usr/bin/python3
"""The torch 2.x fixtures (tests/data/torch2) on another backend of outcore-run: each
fixture's default-exporter file (and LEGACY_TOO's and LEGACY_ONLY's legacy one) takes one SGD
step there, compared with PyTorch's float64 step
exactly as test_torch2_exports.py compares the cpu backend (the loss and every tensor within
1e-4, or a tie: within 3x PyTorch float32's own distance, the tensors whose gradient is zero
in exact arithmetic, such as attention key biases and a BN bias before another BN).
tests/cli/test_cuda_emu.sh runs it on the CUDA emulator's build; on a GPU it runs the same.

    tests/py/torch2_on_backend.py BUILD_DIR [BACKEND [NAME ..]]   (BACKEND: cuda)
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch2_exports as T  # noqa: E402

# Fixtures whose legacy export is compared too: tiny_same_pad's writes padding="same" with
# even kernels as auto_pad SAME_UPPER (pads unequal at a dim's ends, which cuDNN does not take:
# a Pad before each Conv at load); its default export writes the Pads itself. tiny_mvit's
# writes tensor_split as a Loop over a sequence and a shape test as an If (unrolled, inlined).
# tiny_gather_pick's gathers and tiny_scatter_add's scatter-adds at an integer input's
# indices (offsets folded on the host). tiny_embedding_bag(_many)'s loops over the bags
# (fixed-size bags one reduction at load, uneven ones unrolled); tiny_embedding_bag_offsets'
# with offsets given at run time (a scatter-add at bags the host computes, either exporter),
# and tiny_dlrm's three such bags in a recommender; tiny_embedding_bag_batch's 5000 bags, each
# loop read whole; tiny_embedding_bag_offsets_max's max bags at run-time offsets (SegmentMax).
LEGACY_TOO = {"tiny_same_pad", "tiny_mvit", "tiny_gather_pick", "tiny_scatter_add",
              "tiny_embedding_bag", "tiny_embedding_bag_many", "tiny_embedding_bag_offsets",
              "tiny_dlrm", "tiny_embedding_bag_batch", "tiny_embedding_bag_weighted",
              "tiny_embedding_bag_offsets_max"}
# Fixtures only the legacy exporter writes (torch.export cannot trace the packing): packed
# sequences, their lengths sorted (TopK) and unsorted on the host each step.
LEGACY_ONLY = ["tiny_rnn_packed", "tiny_rnn_unsorted"]
# Fixtures outside T.MODELS (an integer input: test_torch2_exports' check_integer_inputs,
# check_embedding_bags).
EXTRA = LEGACY_ONLY + ["tiny_gather_pick", "tiny_scatter_add", "tiny_embedding_bag",
                       "tiny_embedding_bag_many", "tiny_embedding_bag_offsets", "tiny_dlrm",
                       "tiny_embedding_bag_weighted", "tiny_embedding_bag_batch",
                       "tiny_embedding_bag_offsets_max"]


def main():
    build = sys.argv[1]
    T.BACKEND = sys.argv[2] if len(sys.argv) > 2 else "cuda"
    T.RUN = os.path.join(build, "outcore-run")
    names = sys.argv[3:] or list(T.MODELS) + EXTRA
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            ref = np.load(os.path.join(T.DATA, f"{name}.ref.npz"))
            exporters = (("legacy",) if name in LEGACY_ONLY else
                         ("dynamo", "legacy") if name in LEGACY_TOO else ("dynamo",))
            for exporter in exporters:
                try:
                    T.compare(name, T.BACKEND, os.path.join(T.DATA, f"{name}_{exporter}.onnx"),
                              ref, tmp)
                except RuntimeError as e:
                    T.failures.append(f"{name}: {e}")
                    print(f"FAIL {name} ({exporter}): {e}")
    for f in T.failures:
        print("FAIL", f)
    print(f"{len(names) - len({f.split('/')[0].split(':')[0] for f in T.failures})} of "
          f"{len(names)} fixtures agree on {T.BACKEND}")
    sys.exit(1 if T.failures else 0)


if __name__ == "__main__":
    main()
