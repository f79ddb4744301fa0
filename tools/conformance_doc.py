#!/usr/bin/python3
"""Rewrites the result section of docs/conformance.md from test_conformance's output:

    build/tests/test_conformance | tools/conformance_doc.py docs/conformance.md

Everything from "## Result" on is replaced: the summary line, then each verdict's cases with
the line's reason (unsupported, rejected, skipped) or names only (passing)."""
import re
import sys

SECTIONS = [("UNSUPPORTED", "Unsupported attribute values / dtypes (reported, not failures)"),
            ("REJECTED", "Rejected by the importer (reported, not failures)"),
            ("SKIP", "Skipped: other ops in the model")]


def main():
    doc = sys.argv[1]
    cases, summary = {}, None
    for line in sys.stdin:
        line = line.rstrip("\n")
        m = re.match(r"^(PASS|FAIL|UNSUPPORTED|REJECTED|SKIP)\s+(\S+?):?(?:\s+(.*))?$", line)
        if m:
            reason = (m.group(3) or "").replace("/usr/share/libonnx-testdata/data/node/", "")
            cases.setdefault(m.group(1), []).append((m.group(2), reason))
        elif line.startswith("conformance:"):
            summary = line
    if not summary or "FAIL" in cases:
        sys.exit("conformance_doc: no summary line, or failing cases: not written")
    text = open(doc).read()
    head, _, tail = text.partition("## Result")
    keep = tail[tail.index("\nCases checked differently"):tail.index("\n### ")]
    out = [head + "## Result (onnx testdata 1.12, Debian)\n\n```\n" + summary + "\n```\n" + keep]
    for verdict, title in SECTIONS:
        out.append(f"\n### {title}\n\n")
        out += [f"- `{name}`: {reason}\n" for name, reason in cases.get(verdict, [])]
    out.append("\n### Passing\n\n" + " ".join(f"`{n}`" for n, _ in cases.get("PASS", [])) + "\n")
    open(doc, "w").write("".join(out))


if __name__ == "__main__":
    main()
