#!/usr/bin/env bash
# Two "machines" as two network namespaces joined by a veth pair: each runs
# `codefy run --nnodes 2 --node-rank i` with one rank, and they must land on
# the weights two ranks on one machine reach. Only addresses inside the
# namespaces are used. Exits 77 (skipped) where namespaces cannot be made.
#   tests/distributed/two_machines.sh CODEFY_BINARY
set -uo pipefail
codefy="$1"
here="$(cd "$(dirname "$0")" && pwd)"
graph="$here/../fixtures/ddp_tiny.json"
a="cfy_a_$$" b="cfy_b_$$" va="cfyva$$" vb="cfyvb$$"
tmp="$(mktemp -d)"
cleanup() {
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
if ! ip netns add "$a" 2>"$tmp/err" || ! ip netns add "$b" 2>>"$tmp/err"; then
  echo "SKIP: this sandbox does not allow network namespaces ($(head -1 "$tmp/err"))"
  exit 77
fi
set -e
ip link add "$va" type veth peer name "$vb"
ip link set "$va" netns "$a"
ip link set "$vb" netns "$b"
ip -n "$a" addr add 10.231.7.1/24 dev "$va"
ip -n "$b" addr add 10.231.7.2/24 dev "$vb"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "$va" up
ip -n "$b" link set "$vb" up

mkdir -p "$tmp/one" "$tmp/two"
cp "$graph" "$tmp/one/g.json"
cp "$graph" "$tmp/two/g.json"
# The reference: two ranks on one machine.
"$codefy" run "$tmp/one/g.json" --nproc-per-node 2 --threads 1 --dist-timeout 20 >"$tmp/one.log" 2>&1 ||
  { cat "$tmp/one.log"; echo "FAIL: the one-machine run failed"; exit 1; }
# Two machines: Gloo talks over the veth (GLOO_SOCKET_IFNAME, as with PyTorch).
set +e
GLOO_SOCKET_IFNAME="$va" ip netns exec "$a" "$codefy" run "$tmp/two/g.json" --nnodes 2 --node-rank 0 \
  --nproc-per-node 1 --master-addr 10.231.7.1 --master-port 29561 --threads 1 --dist-timeout 20 >"$tmp/a.log" 2>&1 &
pid_a=$!
GLOO_SOCKET_IFNAME="$vb" ip netns exec "$b" "$codefy" run "$tmp/two/g.json" --nnodes 2 --node-rank 1 \
  --nproc-per-node 1 --master-addr 10.231.7.1 --master-port 29561 --threads 1 --dist-timeout 20 >"$tmp/b.log" 2>&1
rc_b=$?
wait "$pid_a"
rc_a=$?
set -e
if [ "$rc_a" -ne 0 ] || [ "$rc_b" -ne 0 ]; then
  echo "--- machine a ---"; cat "$tmp/a.log"; echo "--- machine b ---"; cat "$tmp/b.log"
  echo "FAIL: the two-machine run failed (exit $rc_a, $rc_b)"
  exit 1
fi
grep -q '"world_size": 2\|world_size *2' "$tmp/a.log" || { cat "$tmp/a.log"; echo "FAIL: machine a did not train with 2 ranks"; exit 1; }
# Same sums in the same order: the same bytes.
if ! cmp -s "$tmp/one/weights.pt" "$tmp/two/weights.pt"; then
  echo "FAIL: the two machines' weights differ from the one machine's"
  exit 1
fi
echo "two machines (network namespaces $a, $b over a veth pair) landed on the one-machine weights"
