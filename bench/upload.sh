#!/usr/bin/env bash
# Benchmark: the server's peak memory (VmHWM) while a large model file is
# uploaded (multipart, as the editor sends it) and downloaded again, against
# the file's size. Uploads are spooled to disk and copied in pieces, downloads
# streamed from disk, so the peak should barely move.
# Usage: bench/upload.sh [file size in MB, default 200]
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-200}
scripts/build.sh >/dev/null
data=$(mktemp -d)
port=18766
head -c $((mb * 1000000)) /dev/urandom >"$data/big.pt"
build/codefy serve --port "$port" --data-dir "$data/server" >"$data/serve.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 50); do curl -sf "$base/api/health" >/dev/null && break; sleep 0.2; done
hwm() { awk '/VmHWM/ {print $2 * 1024}' "/proc/$pid/status"; }
before=$(hwm)
token=$(curl -s "$base/api/auth/bootstrap" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
t0=$(date +%s.%N)
curl -sf -H "X-CodefyUI-Token: $token" -F "file=@$data/big.pt" "$base/api/models/upload" >/dev/null
t1=$(date +%s.%N)
after_upload=$(hwm)
curl -sf "$base/api/models/download/big.pt" | cmp - "$data/big.pt"
t2=$(date +%s.%N)
after_download=$(hwm)
python3 - "$mb" "$before" "$after_upload" "$after_download" "$t0" "$t1" "$t2" <<'PY'
import sys
mb, before, up, down = int(sys.argv[1]), *map(int, sys.argv[2:5])
t0, t1, t2 = map(float, sys.argv[5:8])
size = mb * 1e6
print("| file | peak RSS before | growth after upload | growth after download | growth / file size | upload | download |")
print("| --- | --- | --- | --- | --- | --- | --- |")
print("| %d MB | %.1f MiB | %.1f MiB | %.1f MiB | %.4f | %.2f s | %.2f s |" % (
    mb, before / 2**20, (up - before) / 2**20, (down - before) / 2**20, (down - before) / size, t1 - t0, t2 - t1))
PY
