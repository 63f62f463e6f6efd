#!/usr/bin/env bash
# clang-format (the house style in .clang-format) over every tracked C++ file.
# scripts/format.sh: rewrites them. scripts/format.sh --check: lists the files
# that differ and fails (a ctest entry, so CI checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
format=clang-format-14
command -v "$format" >/dev/null || format=clang-format
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = "--check" ]; then
  differ=()
  for f in "${files[@]}"; do
    "$format" --dry-run -Werror "$f" >/dev/null 2>&1 || differ+=("$f")
  done
  if [ ${#differ[@]} -gt 0 ]; then
    printf 'not formatted (run scripts/format.sh): %s\n' "${differ[@]}"
    exit 1
  fi
  echo "format: ${#files[@]} files as clang-format writes them"
else
  "$format" -i "${files[@]}"
fi
