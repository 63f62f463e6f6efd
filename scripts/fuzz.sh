#!/usr/bin/env bash
# Runs the libFuzzer targets: scripts/fuzz.sh [target|all] [seconds per target]
# (default: all, 30 s each, as CI runs them). Builds build-sanitize's
# codefy_fuzz first (scripts/sanitize-build.sh). Targets run $(nproc) at a
# time. Each starts from its seeds (fuzz/corpus/<target>/, in the repo) and
# the corpus earlier runs grew (build-sanitize/fuzz-work/corpus/<target>/,
# kept between runs). A crash, a sanitizer report, a failed property, a leak
# or an input slower than 25 s is a finding: the input is written to
# build-sanitize/fuzz-work/artifacts/ and the script fails, saying how to
# reproduce it. Prints each target's executions.
#
# Targets: graph layers pickle safetensors multipart csv ws_execute (see fuzz/README.md)
set -euo pipefail
cd "$(dirname "$0")/.."
all=(graph layers pickle safetensors multipart csv ws_execute)
target=${1:-all}
seconds=${2:-30}
if [ "$target" = all ]; then
  targets=("${all[@]}")
else
  [[ " ${all[*]} " == *" $target "* ]] || { echo "fuzz: no target '$target' (one of: ${all[*]}, all)" >&2; exit 1; }
  targets=("$target")
fi

scripts/setup.sh
scripts/sanitize-build.sh codefy_fuzz

work=build-sanitize/fuzz-work
mkdir -p "$work/logs" "$work/artifacts"
run_one() {
  local t=$1 dict=()
  mkdir -p "$work/corpus/$t"
  [ -f "fuzz/dicts/$t.dict" ] && dict=(-dict="fuzz/dicts/$t.dict")
  [ "$t" = ws_execute ] && dict=(-dict=fuzz/dicts/graph.dict)
  # -timeout: an input slower than 25 s is a finding; -rss_limit_mb: LibTorch
  # and ASan's shadow need more than libFuzzer's 2 GB default, and a single
  # allocation past 1 GB from a small input is a finding (-malloc_limit_mb).
  "build-sanitize/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" "${dict[@]}" \
    "$work/corpus/$t" "fuzz/corpus/$t" >"$work/logs/$t.log" 2>&1
}

pids=() names=()
failed=()
wait_one() {  # waits for the oldest running target
  local rc=0
  wait "${pids[0]}" || rc=$?
  [ $rc -eq 0 ] || failed+=("${names[0]}")
  pids=("${pids[@]:1}") names=("${names[@]:1}")
}
for t in "${targets[@]}"; do
  [ ${#pids[@]} -ge "$(nproc)" ] && wait_one
  run_one "$t" & pids+=($!) names+=("$t")
done
while [ ${#pids[@]} -gt 0 ]; do wait_one; done

printf '%-12s %12s %8s %8s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  log="$work/logs/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$work/corpus/$t" -type f | wc -l)
  result=ok
  [[ " ${failed[*]:-} " == *" $t "* ]] && result="FINDING (see $log)"
  printf '%-12s %12s %8s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
if [ ${#failed[@]} -gt 0 ]; then
  for t in "${failed[@]}"; do
    echo "---- fuzz_$t: the end of $work/logs/$t.log"
    tail -n 60 "$work/logs/$t.log"
  done
  echo "Reproduce: build-sanitize/fuzz/fuzz_<target> $work/artifacts/<file>; make each input a regression test (fuzz/README.md)."
  exit 1
fi
