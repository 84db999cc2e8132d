#!/usr/bin/env bash
# bench_real_nodes.sh: what real node processes cost one head, to check bench_control_plane's
# simulated nodes against the real thing (it simulates what a node does; this runs nodes).
#
#   bench/bench_real_nodes.sh [--bin DIR] [--window S] N [N...]
#
# For each N: a head with no node of its own (`cumulus start --head --no-node --block`), then N
# nodes (`cumulus start --address ... --block`, 8 MB object stores), all on loopback; once every
# node is registered and a few heartbeats have gone by, the head's CPU (utime + stime from /proc)
# over the window, as a share of one core. The anchor is bench_control_plane's figure for the
# same N in the same run of the same binaries (printed for comparison when --sim is given).
# Everything it starts is stopped at the end, whatever happens.
set -euo pipefail

bin="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/bin"
window=10
sizes=()
while (($# > 0)); do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --window) window="$2"; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *)
      [[ "$1" =~ ^[0-9]+$ && "$1" -ge 1 && "$1" -le 500 ]] ||
        { echo "bench_real_nodes.sh: a node count from 1 to 500, not '$1'" >&2; exit 2; }
      sizes+=("$1"); shift ;;
  esac
done
((${#sizes[@]} > 0)) || { echo "usage: bench/bench_real_nodes.sh [--bin DIR] [--window S] N [N...]" >&2; exit 2; }
[[ -x "$bin/cumulus" ]] || { echo "bench_real_nodes.sh: no $bin/cumulus (build first, or --bin)" >&2; exit 2; }

work="$(mktemp -d /tmp/bench-real-nodes.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cpu_seconds() {  # utime + stime of a process, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

echo "command: $0 --bin $bin --window $window ${sizes[*]}"
printf "%-6s %-18s %s\n" "nodes" "head CPU" "registered"
for n in "${sizes[@]}"; do
  export CUMULUS_STATE_DIR="$work/state-$n" CUMULUS_LOG_LEVEL=warn
  "$bin/cumulus" start --head --no-node --block --port 0 --data-dir "$work/head-$n" \
    >"$work/head-$n.log" 2>&1 &
  head_pid=$!
  pids+=("$head_pid")
  for _ in $(seq 300); do
    grep -q "cumulus head ready" "$work/head-$n.log" 2>/dev/null && break
    sleep 0.1
  done
  line="$(grep -m1 "cumulus head ready" "$work/head-$n.log")" ||
    { echo "the head did not start: $(cat "$work/head-$n.log")" >&2; exit 1; }
  address="$(sed -E 's/.*address=([^ ]+).*/\1/' <<<"$line")"
  token_file="$(sed -E 's/.*token_file=([^ ]+).*/\1/' <<<"$line")"
  for i in $(seq "$n"); do
    "$bin/cumulus" start --address "$address" --token-file "$token_file" --block \
      --object-store-memory 8M --data-dir "$work/node-$n-$i" --resources CPU=1 \
      >"$work/node-$n-$i.log" 2>&1 &
    pids+=("$!")
  done
  # Every node registered (the status listing counts them), then a few heartbeats.
  registered=0
  for _ in $(seq 600); do
    registered="$("$bin/cumulus" status --address "$address" --token-file "$token_file" --json \
      2>/dev/null | grep -o '"state":"ALIVE"' | wc -l || true)"
    ((registered >= n)) && break
    sleep 0.2
  done
  sleep 3
  c0="$(cpu_seconds "$head_pid")"
  t0="$(date +%s.%N)"
  sleep "$window"
  c1="$(cpu_seconds "$head_pid")"
  t1="$(date +%s.%N)"
  share="$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.1f%% of a core", 100 * (b - a) / (e - s) }')"
  printf "%-6s %-18s %s\n" "$n" "$share" "$registered"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
done
