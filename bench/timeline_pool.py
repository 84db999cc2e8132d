#!/usr/bin/env python3
"""Pools the pairs of several `bench_core --timeline-overhead` runs (their printed output, one
file each) and prints, for the rate and the CPU per task, the median on/off ratio with the same
distribution-free 95 % interval bench_core prints for one run (the sign test's order statistics,
bench/pair_stats.h). The runs must be of one configuration (same tasks, reps and build).

    build/bin/bench_core --timeline-overhead --pairs 200 > run1.txt   # and run2.txt, ...
    bench/timeline_pool.py run1.txt run2.txt
"""
import math
import re
import sys

PAIR = re.compile(r"\s*pair\s+(\d+): timeline (on|off)\s+(\d+) tasks/s\s+(\d+) ns CPU per task")


def pairs(path):
    runs = {}
    with open(path) as f:
        for line in f:
            m = PAIR.match(line)
            if m:
                runs.setdefault(int(m.group(1)), {})[m.group(2)] = (float(m.group(3)),
                                                                   float(m.group(4)))
    return [p for _, p in sorted(runs.items()) if len(p) == 2 and p["off"][0] > 0]


def median_interval(values):
    v = sorted(values)
    n = len(v)
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    tail, k = 0.0, 0
    for j in range(n):
        p = math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) -
                     n * math.log(2))
        if tail + p > 0.025:
            break
        tail += p
        k = j + 1
    if k == 0:
        return median, None, None, 0.0
    return median, v[k - 1], v[n - k], 1 - 2 * tail


def main(paths):
    if not paths:
        sys.exit("usage: bench/timeline_pool.py RUN_OUTPUT...  (each: bench_core --timeline-overhead's output)")
    all_pairs = []
    for path in paths:
        try:
            got = pairs(path)
        except OSError as e:
            sys.exit("timeline_pool: %s" % e)
        if not got:
            sys.exit("timeline_pool: %s holds no complete on/off pair" % path)
        print("%s: %d pairs" % (path, len(got)))
        all_pairs += got
    print("pooled: %d pairs" % len(all_pairs))
    for name, i, higher_is_better in (("tasks async rate", 0, True), ("CPU per task", 1, False)):
        med, low, high, coverage = median_interval([p["on"][i] / p["off"][i] for p in all_pairs])
        over = lambda r: 100 * ((1 - r) if higher_is_better else (r - 1))
        if low is None:
            print("%-17s on/off %.3f  overhead %+.1f %%  (too few pairs for an interval)" %
                  (name, med, over(med)))
            continue
        worst = over(low if higher_is_better else high)
        print("%-17s on/off %.3f [%.3f, %.3f] (%.1f %%)  overhead %+.1f %%  worst %+.1f %% (%s)" %
              (name, med, low, high, 100 * coverage, over(med), worst,
               "< 5 %" if worst < 5 else "NOT < 5 %"))


if __name__ == "__main__":
    main(sys.argv[1:])
