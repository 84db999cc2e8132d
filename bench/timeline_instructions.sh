#!/usr/bin/env bash
# Instructions per task on "tasks async" with the task timeline on and off, counted by valgrind
# (callgrind) over every process of the cluster: the bench (head, nodes, driver) and the nodes'
# workers. A figure that does not move with the machine's load, for machines whose VM exposes no
# hardware counters (bench_core --timeline-overhead reports them where it does).
#
#   bench/timeline_instructions.sh [BUILD_DIR] [PAIRS] [TASKS]   (defaults: build 3 2000)
#
# Each run is `bench_core --only-tasks-async --tasks TASKS --reps 1` under
# `valgrind --tool=callgrind --trace-children=yes`; with CUMULUS_BENCH_CALLGRIND=1 the bench
# zeroes every process's counts when its measured window starts and dumps them when it ends
# (callgrind_control), so start-up, warm-up and teardown are not counted. Under valgrind the
# threads of a process run one at a time, so the runtime batches differently than it does at full
# speed: read the ratio, not the absolute figures. Needs valgrind (Debian `valgrind`).
set -euo pipefail
build=${1:-build}
pairs=${2:-3}
tasks=${3:-2000}
bench=$(realpath "$build/bin/bench_core")
command -v valgrind >/dev/null || { echo "timeline_instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d /tmp/cumulus-timeline-ir-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "command: bench/timeline_instructions.sh $build $pairs $tasks"

# Instructions per task of one run (timeline $1: 1 or 0).
run() {
  local dir="$work/run-$RANDOM$RANDOM"
  mkdir "$dir"
  CUMULUS_BENCH_CALLGRIND=1 CUMULUS_TIMELINE="$1" valgrind --tool=callgrind --trace-children=yes \
    --trace-children-skip='*/sh,*/bash,*perl*,*vgdb*,*callgrind_control*,*nvidia-smi*' \
    --callgrind-out-file="$dir/cg.%p" "$bench" --only-tasks-async --tasks "$tasks" --reps 1 \
    >"$dir/out" 2>"$dir/err" || { echo "a run failed: see $dir/err" >&2; trap - EXIT; exit 1; }
  # The window's dumps are part 1 of each process (cg.PID.1); their summary lines are the totals.
  local total
  total=$(cat "$dir"/cg.*.1 | awk '/^summary:/ {s += $2} END {print s + 0}')
  local procs
  procs=$(ls "$dir"/cg.*.1 | wc -l)
  [ "$procs" -ge 2 ] || { echo "no worker's counts were dumped (callgrind_control?)" >&2; exit 1; }
  awk -v t="$total" -v n="$tasks" 'BEGIN {printf "%.0f", t / n}'
  rm -rf "$dir"
}

on_all=() off_all=() ratios=()
for ((i = 1; i <= pairs; i++)); do
  if ((RANDOM % 2)); then
    on=$(run 1)
    off=$(run 0)
  else
    off=$(run 0)
    on=$(run 1)
  fi
  [ -n "$on" ] && [ -n "$off" ] || exit 1
  ratio=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.4f", a / b}')
  echo "  pair $i: instructions per task, timeline on $on, off $off, on/off $ratio"
  on_all+=("$on") off_all+=("$off") ratios+=("$ratio")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "instructions per task (median of $pairs pairs): timeline on $(median "${on_all[@]}"), off $(median "${off_all[@]}") (anchor, same run); on/off $(median "${ratios[@]}") (pairs from $(printf '%s\n' "${ratios[@]}" | sort -g | head -1) to $(printf '%s\n' "${ratios[@]}" | sort -g | tail -1))"
