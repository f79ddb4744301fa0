#!/usr/bin/env bash
# test_format.sh — every tracked C, header and CUDA file is as clang-format
# (.clang-format at the root) writes it; `make format` fixes the tree.
set -u
cd "$(dirname "$0")/../.."
if ! command -v clang-format >/dev/null; then
    echo "not ok - clang-format is not installed (make deps installs it)"
    exit 1
fi
bad=()
files=$(git ls-files '*.c' '*.h' '*.cu' 2>/dev/null)
if [ -z "$files" ]; then
    echo "not ok - no tracked sources found (not a git checkout?)"
    exit 1
fi
for f in $files; do
    clang-format "$f" | cmp -s - "$f" || bad+=("$f")
done
n=$(echo "$files" | wc -l)
if [ ${#bad[@]} -eq 0 ]; then
    echo "ok - all $n sources formatted ($(clang-format --version | grep -o 'version [0-9.]*'))"
else
    echo "not ok - ${#bad[@]} of $n sources differ from clang-format (run: make format):"
    printf '  %s\n' "${bad[@]}" | head -20
    clang-format "${bad[0]}" | diff "${bad[0]}" - | head -20
    exit 1
fi
