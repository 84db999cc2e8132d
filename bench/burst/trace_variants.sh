#!/bin/bash
# Makes traces bench_burst has not been looked at with, from one pod list and node list:
#   half.csv       every second pod
#   dense.csv      arrivals at twice the rate (creation times halved, durations kept)
#   long.csv       every pod runs three times as long
#   spec.csv       GPU pods restricted by gpu_spec (every 3rd: V100M16|V100M32, every 5th: T4)
#   nodes_cpu.csv  the node list with a CPU-only node (64 CPUs, 256 GiB) after every 10th node
# and two held out (made after the policy's last change was designed, for checking it only):
#   odd.csv        the other half: every pod half.csv leaves out
#   third.csv      every third pod (the 3rd, 6th, 9th, ...)
# and two held out later (2026-12-05):
#   fourth.csv       every fourth pod from the first
#   odd_dense15.csv  the odd pods (odd.csv's) with arrivals 1.5 times as dense
# Usage: bench/burst/trace_variants.sh PODS.csv NODES.csv OUT_DIR
set -euo pipefail
pods=$1 nodes=$2 out=$3
mkdir -p "$out"
awk -F, 'NR == 1 || NR % 2 == 0' "$pods" > "$out/half.csv"
awk -F, 'NR == 1 || NR % 2 == 1' "$pods" > "$out/odd.csv"
awk -F, 'NR == 1 || NR % 3 == 1' "$pods" > "$out/third.csv"
awk -F, 'NR == 1 || NR % 4 == 2' "$pods" > "$out/fourth.csv"
# denser FACTOR EVERY OUT: the pods on lines NR % EVERY == 0 (1: all), arrivals FACTOR times
# as dense (creation times divided, durations kept). Columns by name, so any column order works.
denser() {
  awk -F, -v OFS=, -v factor="$1" -v every="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; print; next }
    NR % every == 0 {
      c = col["creation_time"]; d = col["deletion_time"]; s = col["scheduled_time"]
      old = $c; $c = int(old / factor)
      if ($d != "") $d = $d - old + $c
      if ($s != "") $s = $s - old + $c
      print
    }' "$pods" > "$out/$3"
}
denser 2 1 dense.csv
denser 1.5 2 odd_dense15.csv
awk -F, -v OFS=, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; print; next }
  {
    c = col["creation_time"]; d = col["deletion_time"]; s = col["scheduled_time"]
    begin = ($s != "") ? $s : $c
    if ($d != "") $d = begin + 3 * ($d - begin)
    print
  }' "$pods" > "$out/long.csv"
awk -F, -v OFS=, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; print; next }
  {
    if ($col["num_gpu"] > 0) {
      n++
      if (n % 3 == 0) $col["gpu_spec"] = "V100M16|V100M32"
      else if (n % 5 == 0) $col["gpu_spec"] = "T4"
    }
    print
  }' "$pods" > "$out/spec.csv"
awk -F, -v OFS=, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; n = NF; print; next }
  {
    print
    if ((NR - 1) % 10 == 0) {
      for (i = 1; i <= n; i++) f[i] = ""
      f[col["sn"]] = "cpu-node-" NR; f[col["cpu_milli"]] = 64000; f[col["memory_mib"]] = 262144
      f[col["gpu"]] = 0; f[col["model"]] = ""
      line = f[1]; for (i = 2; i <= n; i++) line = line OFS f[i]
      print line
    }
  }' "$nodes" > "$out/nodes_cpu.csv"
echo "wrote $out/{half,dense,long,spec,odd,third,fourth,odd_dense15}.csv and $out/nodes_cpu.csv"
