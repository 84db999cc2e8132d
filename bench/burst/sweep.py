#!/usr/bin/env python3
"""Runs bench_burst over one pod list, one node list and every trace made from them, and says on
which the target holds: ours strictly better than each baseline on cost or on p95 wait.

  bench/burst/sweep.py PODS.csv NODES.csv WORK_DIR [--jobs J] [--bench PATH] [--fresh SEED]...
                       [-- BENCH_ARGS...]

WORK_DIR receives the derived traces, made once for one pair of lists (a WORK_DIR made from
other lists is refused; delete it or name another):
  - trace_variants.sh's: half, dense, long, odd, third, fourth, odd_dense15, spec (with
    nodes_cpu.csv);
  - trace_mix.py's mixes (KIND P SEED): multigpu 0.3 7, share 0.6 7, cpu 0.3 7, whole 0.5 7,
    multigpu 0.15 9, multigpu 0.5 8, share 0.9 8, cpu 0.5 8, whole 0.8 8, and spec + multigpu
    0.3 10 on both node lists.
--fresh SEED (repeatable) adds ten mixes more, seeds SEED to SEED + 9 in this order: multigpu
0.3, share 0.6, cpu 0.3, whole 0.5, share 0.9, cpu 0.5, whole 0.8, multigpu 0.5, cpu 0.7,
share 0.3 — for judging a change on mixes not seen while it was made (pick seeds never used).
The pod list itself also runs at on-prem fractions 0.003, 0.005 and 0.01; the spec runs use the
pod list's own default fraction (read from bench_burst's reproduce line), the rest their own.
BENCH_ARGS (after --) go to every run, e.g. `-- --idle-timeout 2xboot`: this is how a setting is
compared on all the traces at once. J runs at a time (default 2). Deterministic: the replay has
no randomness and the mixes have fixed seeds.

Prints one line per run (ours' cost and p95 wait, the baselines it fails against, and those no
policy can beat: $0 and p95 wait 0), then how many runs hold and on how many none can. Exit status 0 whether or not the target holds; 1 if a run could not be made or read.
"""
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIXES = [("multigpu", 0.3, 7), ("share", 0.6, 7), ("cpu", 0.3, 7), ("whole", 0.5, 7),
         ("multigpu", 0.15, 9), ("multigpu", 0.5, 8), ("share", 0.9, 8), ("cpu", 0.5, 8),
         ("whole", 0.8, 8)]
# --fresh SEED: these kinds with seeds SEED, SEED + 1, ...
FRESH = [("multigpu", 0.3), ("share", 0.6), ("cpu", 0.3), ("whole", 0.5), ("share", 0.9),
         ("cpu", 0.5), ("whole", 0.8), ("multigpu", 0.5), ("cpu", 0.7), ("share", 0.3)]
# trace_variants.sh's traces run on NODES; it also makes spec.csv and nodes_cpu.csv.
VARIANTS = ["half", "dense", "long", "odd", "third", "fourth", "odd_dense15"]


def fail(msg):
    sys.exit(f"sweep.py: {msg}")


def make(cmd, out_path):
    """Runs `cmd` with its stdout into out_path (atomically), unless out_path exists."""
    if os.path.exists(out_path):
        return
    tmp = out_path + ".part"
    with open(tmp, "w") as out:
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        os.unlink(tmp)
        fail(f"making {out_path} failed: {r.stderr.strip() or 'exit ' + str(r.returncode)}")
    os.replace(tmp, out_path)


def bench(binary, args):
    r = subprocess.run([binary] + args + ["--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit " + str(r.returncode)])[-1]
    try:
        return json.loads(r.stdout), None
    except json.JSONDecodeError as e:
        return None, f"bench_burst printed no JSON ({e})"


def fraction_of(result):
    words = result["command"].split()
    return words[words.index("--onprem-fraction") + 1]


def verdict(result):
    """Ours' row and the baselines the target fails against, as bench_burst judged them."""
    ours = next(r for r in result["rows"] if r["name"] == result["ours"])
    return ours, result["fails_against"]


def stamp_of(pods, nodes):
    h = hashlib.sha256()
    for path in (pods, nodes):
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def main():
    argv = sys.argv[1:]
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    jobs, binary = 2, os.path.join(os.getcwd(), "build/bin/bench_burst")
    fresh = []
    positional = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--jobs", "--bench", "--fresh") and i + 1 < len(argv):
            if argv[i] == "--fresh":
                if not argv[i + 1].isdigit():
                    fail(f"--fresh needs a seed, a whole number, not {argv[i + 1]!r}")
                fresh.append(int(argv[i + 1]))
            elif argv[i] == "--jobs":
                if not argv[i + 1].isdigit() or int(argv[i + 1]) < 1:
                    fail(f"--jobs needs a whole number of at least 1, not {argv[i + 1]!r}")
                jobs = int(argv[i + 1])
            else:
                binary = argv[i + 1]
            i += 2
        elif argv[i].startswith("-"):
            fail(f"unknown option {argv[i]!r} (or one without its value); usage: sweep.py "
                 "PODS.csv NODES.csv WORK_DIR [--jobs J] [--bench PATH] [--fresh SEED]... "
                 "[-- BENCH_ARGS...]")
        else:
            positional.append(argv[i])
            i += 1
    if len(positional) != 3:
        fail("usage: sweep.py PODS.csv NODES.csv WORK_DIR [--jobs J] [--bench PATH] "
             "[--fresh SEED]... [-- BENCH_ARGS...]")
    pods, nodes, work = positional
    for path in (pods, nodes):
        if not os.path.isfile(path):
            fail(f"{path}: no such file")
    if not os.access(binary, os.X_OK):
        fail(f"{binary}: not an executable; build bench_burst first or pass --bench PATH")

    # The pod and node lists first: bench_burst names a bad file, line and column.
    base, err = bench(binary, ["--trace", pods, "--nodes", nodes] + extra)
    if err:
        fail(err)
    f = fraction_of(base)

    try:
        os.makedirs(work, exist_ok=True)
    except OSError as e:
        fail(f"{work}: cannot make the directory ({e.strerror})")
    if not os.access(work, os.W_OK):
        fail(f"{work}: not writable; the derived traces go there")
    v = lambda name: os.path.join(work, name)
    # The derived traces are those of these lists, or WORK_DIR is refused.
    stamp = stamp_of(pods, nodes)
    if os.path.exists(v("made_from")):
        with open(v("made_from")) as sf:
            if sf.read().strip() != stamp:
                fail(f"{work} holds traces made from other pod or node lists; delete it or name "
                     "another WORK_DIR")
    elif os.listdir(work):
        fail(f"{work} is not empty and was not made by sweep.py; name an empty or new WORK_DIR")
    else:
        with open(v("made_from"), "w") as sf:
            sf.write(stamp + "\n")
    if not all(os.path.exists(v(n + ".csv")) for n in VARIANTS + ["spec", "nodes_cpu"]):
        r = subprocess.run([os.path.join(HERE, "trace_variants.sh"), pods, nodes, work],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"trace_variants.sh failed: {r.stderr.strip()}")
    mix = os.path.join(HERE, "trace_mix.py")
    for kind, p, seed in MIXES:
        make([sys.executable, mix, pods, kind, str(p), str(seed)], v(f"mix_{kind}_{p}.csv"))
    make([sys.executable, mix, v("spec.csv"), "multigpu", "0.3", "10"], v("mix_spec_multigpu.csv"))
    fresh_runs = []
    for first in fresh:
        for k, (kind, p) in enumerate(FRESH):
            seed = first + k
            make([sys.executable, mix, pods, kind, str(p), str(seed)],
                 v(f"fresh_{kind}_{p}_{seed}.csv"))
            fresh_runs.append((f"fresh {kind} {p} seed {seed}",
                               ["--trace", v(f"fresh_{kind}_{p}_{seed}.csv"), "--nodes", nodes]))

    runs = [(f"pods, F {f}", ["--trace", pods, "--nodes", nodes])]
    runs += [(f"pods, F {x}", ["--trace", pods, "--nodes", nodes, "--onprem-fraction", x])
             for x in ("0.003", "0.005", "0.01")]
    runs += [(n, ["--trace", v(n + ".csv"), "--nodes", nodes])
             for n in VARIANTS]
    runs += [(f"{k} {p}", ["--trace", v(f"mix_{k}_{p}.csv"), "--nodes", nodes])
             for k, p, _ in MIXES]
    runs.append(("spec, CPU-only nodes",
                 ["--trace", v("spec.csv"), "--nodes", v("nodes_cpu.csv"), "--onprem-fraction", f]))
    runs.append(("spec + multigpu 0.3", ["--trace", v("mix_spec_multigpu.csv"), "--nodes", nodes]))
    runs.append(("spec + multigpu 0.3, CPU-only nodes",
                 ["--trace", v("mix_spec_multigpu.csv"), "--nodes", v("nodes_cpu.csv"),
                  "--onprem-fraction", f]))
    fixed = len(runs)
    runs += fresh_runs

    results = {runs[0][0]: (base, None)}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {name: pool.submit(bench, binary, args + extra) for name, args in runs[1:]}
        for name, fut in futures.items():
            results[name] = fut.result()

    print(f"reproduce: {' '.join([sys.argv[0]] + sys.argv[1:])}")
    print(f"{'run':38} {'ours: cost':>12} {'p95 s':>7}  fails against")
    held, broken, held_fresh, unreachable = 0, 0, 0, 0
    for n, (name, _) in enumerate(runs):
        result, err = results[name]
        if err:
            broken += 1
            print(f"{name:38} error: {err}")
            continue
        ours, fails = verdict(result)
        held += not fails
        held_fresh += not fails and n >= fixed
        # A baseline at $0 and p95 0 is beaten by no policy (bench_burst's "unbeatable").
        beyond = result.get("unbeatable", [])
        unreachable += bool(beyond)
        print(f"{name:38} {'$' + format(round(ours['cost']), ','):>12} {ours['wait_p95_s']:7.0f}  "
              f"{', '.join(fails) if fails else '-'}" +
              (f" (no policy can beat {', '.join(beyond)}: $0, p95 0)" if beyond else ""))
    print(f"target holds on {held} of {len(runs) - broken} runs" +
          (f" ({broken} could not run)" if broken else "") +
          (f" ({unreachable} of the {len(runs) - broken} no policy can hold)" if unreachable else "") +
          (f"; on {held_fresh} of the {len(fresh_runs)} fresh mixes" if fresh_runs else ""))
    return 1 if broken else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # stdout closed early (| head): nothing more to say
        sys.stderr.close()
        sys.exit(0)
