#!/usr/bin/python3
"""Compares the plans of two tools/plan_identity.sh output folders modulo metadata keys
that one side lacks by design (default: outcore.structure, added by a newer writer):

  tools/plan_diff.py BEFORE AFTER [--ignore KEY ...]

A plan matches when its graph (nodes, attributes, tensors, initializers) serializes to the
same bytes and every metadata entry other than the ignored ones has the same key, value and
order. Prints one line per plan and exits 1 when any differs or is missing on one side."""
import argparse
import glob
import os
import sys

import onnx


def canonical(path, ignore):
    m = onnx.load(path)
    kept = [(e.key, e.value) for e in m.metadata_props if e.key not in ignore]
    del m.metadata_props[:]
    return m.SerializeToString(deterministic=True), kept


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--ignore", action="append", default=None)
    a = ap.parse_args()
    ignore = set(a.ignore or ["outcore.structure"])
    names = sorted({os.path.basename(p) for d in (a.before, a.after)
                    for p in glob.glob(os.path.join(d, "*.plan.onnx"))})
    bad = 0
    for n in names:
        pb, pa = os.path.join(a.before, n), os.path.join(a.after, n)
        if not (os.path.exists(pb) and os.path.exists(pa)):
            print(f"MISSING {n} ({'after' if os.path.exists(pb) else 'before'})")
            bad += 1
            continue
        gb, mb = canonical(pb, ignore)
        ga, ma = canonical(pa, ignore)
        if gb != ga:
            print(f"DIFF {n}: graph")
            bad += 1
        elif mb != ma:
            keys = [k for (k, v) in mb if (k, v) not in ma] + [k for (k, v) in ma if (k, v) not in mb]
            print(f"DIFF {n}: metadata {sorted(set(keys)) or 'order'}")
            bad += 1
        else:
            print(f"same {n}")
    print(f"{len(names) - bad} of {len(names)} plans equal modulo {sorted(ignore)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
