#!/usr/bin/env bash
# Checks that src/ keeps its layers: every quoted #include of a folder must be
# of a folder that folder may use (README "Layout"), and the folders below
# LibTorch include none of its headers. Prints each offending line and exits 1.
#
#   tests/layering.sh [SRC_DIR]       (default: the src/ beside this script)
#   tests/layering.sh --self-test     plants a wrong include in a copy and checks it is caught
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

if [ "${1:-}" = "--self-test" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  cp -r "$here/../src" "$tmp/src"
  "$0" "$tmp/src" >/dev/null || { echo "self-test: the clean tree does not pass"; exit 1; }
  for plant in 'train/trainer.cpp:#include "engine/errors.h"' 'graph/graph.cpp:#include <torch/torch.h>' \
               'engine/executor.cpp:#include "server/api.h"' 'nodes/io_nodes.cpp:#include "cli/printer.h"'; do
    file="${plant%%:*}"
    cp "$here/../src/$file" "$tmp/src/$file"
    printf '%s\n' "${plant#*:}" >>"$tmp/src/$file"
    if out="$("$0" "$tmp/src")"; then
      echo "self-test: planting '${plant#*:}' in $file was not caught"
      exit 1
    fi
    grep -qF "$file" <<<"$out" || { echo "self-test: the report does not name $file: $out"; exit 1; }
    cp "$here/../src/$file" "$tmp/src/$file"
  done
  echo "self-test: every planted include was caught"
  exit 0
fi

src="${1:-$here/../src}"

# What each folder may include besides itself; cli may include anything.
declare -A allowed=(
  [util]=""
  [graph]="util"
  [store]="util graph"
  [device]="util graph"
  [train]="util graph"
  [model]="train util graph"
  [plot]="util graph"
  [distributed]="train device util graph"
  [engine]="train device store util graph"
  [nodes]="engine model plot distributed train device store util graph"
  [server]="engine model distributed train device store util graph"
)
# Folders that must build without LibTorch.
no_torch="util graph"

status=0
for dir in "$src"/*/; do
  layer="$(basename "$dir")"
  [ "$layer" = cli ] && continue
  if [ -z "${allowed[$layer]+set}" ]; then
    echo "$layer/: a folder the layering rules do not know; add it to tests/layering.sh"
    status=1
    continue
  fi
  while IFS= read -r hit; do
    file="${hit%%:*}"; rest="${hit#*:}"; line="${rest%%:*}"; text="${rest#*:}"
    rel="${file#"$src"/}"
    if [[ "$text" =~ \#include[[:space:]]*\"([a-z_]+)/ ]]; then
      target="${BASH_REMATCH[1]}"
      [ "$target" = "$layer" ] && continue
      if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
        echo "$rel:$line: $text   <- $layer/ must not include $target/"
        status=1
      fi
    elif [[ "$text" =~ \#include[[:space:]]*\<(torch|ATen|c10)/ ]] && [[ " $no_torch " == *" $layer "* ]]; then
      echo "$rel:$line: $text   <- $layer/ builds without LibTorch"
      status=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cpp' '^[[:space:]]*#include' "$dir" || true)
done
[ $status -eq 0 ] && echo "layering: every #include in $src keeps to its layer"
exit $status
