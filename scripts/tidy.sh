#!/usr/bin/env bash
# clang-tidy (the checks in .clang-tidy: bugprone-*, performance-*) over src/,
# with the compile commands of ./build (scripts/build.sh makes them).
# scripts/tidy.sh [file...]: those files only. Exits 1 when it finds anything.
# Not in CI: each unit parses LibTorch's headers without the precompiled
# header (clang cannot read gcc's): about 2 min a unity unit, 20 min in all on
# this 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
tidy=clang-tidy-14
command -v "$tidy" >/dev/null || tidy=clang-tidy
[ -f build/compile_commands.json ] || scripts/build.sh
# gcc's precompiled header and its flags mean nothing to clang: the header's
# text is included instead.
mkdir -p build/tidy
sed -e "s|-include [^ ]*cmake_pch.hxx|-include $PWD/src/pch.h|g" -e 's/-fno-fat-lto-objects//g' \
  -e 's/-Winvalid-pch//g' build/compile_commands.json >build/tidy/compile_commands.json
# The libraries are unity builds: their units are build/CMakeFiles/*/Unity/*.cxx,
# which include the sources (reported through HeaderFilterRegex).
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(python3 -c '
import json
for e in json.load(open("build/tidy/compile_commands.json")):
    f = e["file"]
    if "/tests/" not in f and "/fuzz/" not in f and "bench" not in f and ("/src/" in f or "/Unity/" in f):
        print(f)')
fi
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 "$tidy" -p build/tidy --quiet 2>/dev/null | tee build/tidy/report.txt
! grep -q 'warning:\|error:' build/tidy/report.txt
