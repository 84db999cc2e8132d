#!/usr/bin/env python3
"""Makes a pod trace that emphasises one kind of work, the way Alibaba's openb_pod_list_*.csv
files other than the default are sampled from it (more multi-GPU, GPU-sharing or CPU-only pods),
from any pod list of that format.

Arrivals stay those of the input; at each arrival, with probability P, the pod's shape (CPU,
memory, GPUs, GPU share, GPU models and how long it runs) is replaced by that of a pod of the
chosen kind drawn at random from the input. So the arrival process is the trace's own and the
mix of work is not.

  bench/burst/trace_mix.py PODS.csv KIND P SEED > OUT.csv
  KIND: multigpu (num_gpu >= 2), share (num_gpu == 1, gpu_milli < 1000), whole (num_gpu == 1,
        gpu_milli == 1000), cpu (num_gpu == 0)
"""
import csv
import random
import sys

KINDS = {
    "multigpu": lambda r: int(r["num_gpu"]) >= 2,
    "share": lambda r: int(r["num_gpu"]) == 1 and int(r["gpu_milli"]) < 1000,
    "whole": lambda r: int(r["num_gpu"]) == 1 and int(r["gpu_milli"]) >= 1000,
    "cpu": lambda r: int(r["num_gpu"]) == 0,
}
SHAPE = ["cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"]


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in KINDS:
        sys.exit("usage: trace_mix.py PODS.csv multigpu|share|whole|cpu P SEED > OUT.csv")
    path, kind = sys.argv[1], sys.argv[2]
    try:
        p, seed = float(sys.argv[3]), int(sys.argv[4])
    except ValueError:
        sys.exit(f"trace_mix.py: P must be a number and SEED an integer, not {sys.argv[3]!r}, {sys.argv[4]!r}")
    if not 0 <= p <= 1:
        sys.exit(f"trace_mix.py: P must be in [0, 1], not {p}")
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames or []
            rows = list(reader)
    except OSError as e:
        sys.exit(f"trace_mix.py: {path}: {e.strerror}")
    needed = SHAPE + ["creation_time", "scheduled_time", "deletion_time"]
    missing = [c for c in needed if c not in fields]
    if missing:
        sys.exit(f"trace_mix.py: {path}:1: missing column(s) {', '.join(missing)} in the header")
    pool = []
    for line, r in enumerate(rows, start=2):
        try:
            if KINDS[kind](r):
                pool.append(r)
            for k in ("creation_time", "scheduled_time", "deletion_time"):
                if r[k]:
                    int(r[k])
        except (TypeError, ValueError):
            sys.exit(f"trace_mix.py: {path}:{line}: num_gpu, gpu_milli and the times must be "
                     "whole numbers")
    if not pool:
        sys.exit(f"trace_mix.py: {path} has no {kind} pod to sample from")
    rng = random.Random(seed)
    out = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
    out.writeheader()
    for r in rows:
        if rng.random() < p:
            src = rng.choice(pool)
            r = dict(r)
            for k in SHAPE:
                r[k] = src[k]
            # The source pod's run time, from this pod's start (or creation, if never scheduled).
            begin = int(r["scheduled_time"] or r["creation_time"])
            if src["deletion_time"]:
                src_begin = int(src["scheduled_time"] or src["creation_time"])
                r["deletion_time"] = str(begin + int(src["deletion_time"]) - src_begin)
            else:
                r["deletion_time"] = ""
        out.writerow(r)


if __name__ == "__main__":
    main()
