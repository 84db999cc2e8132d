#!/usr/bin/env python3
"""Synthetic learning-curve sets for bench_tune_replay, harder than the MetaQNN ones:
crossing curves (slow learners end higher), late learning-rate drops of random size, and
perplexity-like losses (min mode, ep_N columns) with drops at random epochs.

    scripts/gen_tune_curves.py OUTDIR [SEED ...]    writes synth_{crossing,lrdrop,loss}_SEED.csv
                                                    for each seed (default: 1 2)
    scripts/gen_tune_curves.py OUTDIR --more [SEED ...]
        writes four other families instead (added 2026-12-07, after Domhan et al. 2015's
        parametric curves and the ways real runs go wrong): synth_overfit (accuracy that peaks,
        then falls), synth_diverge (high learning rates learn fast and some collapse to chance),
        synth_plateau (a warm-up at chance before learning; the better configs warm up longer),
        synth_powloss (min mode: loss c + a (t+1)^-alpha, Domhan's pow3).
"""
import csv, math, os, random, re, sys
def usage_error(what):
    print(f"gen_tune_curves.py: {what}; usage: gen_tune_curves.py OUTDIR [--more] [SEED ...] "
          "(--help says more)", file=sys.stderr)
    sys.exit(2)
if any(a in ("-h", "--help") for a in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
    usage_error("the first argument is the output directory")
OUT = sys.argv[1]
def write(name, rows, prefix, K, extra):
    with open(os.path.join(OUT, f"{name}.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id"] + extra + [f"{prefix}_{i+1}" for i in range(K)])
        for i, (ex, c) in enumerate(rows):
            w.writerow([i] + ex + [f"{v:.4f}" for v in c])
def crossing(seed, n=800, K=50):
    r = random.Random(seed); rows = []
    for _ in range(n):
        a = r.uniform(0.55, 0.95); tau = math.exp(r.uniform(0, math.log(K/2))) * (0.5 + 2*(a-0.55))
        b = r.uniform(0.1, 0.3); p = r.uniform(0.7, 1.5); sd = r.uniform(0.003, 0.02)
        c = [min(1, max(0, a - (a-b)*math.exp(-((t+1)/tau)**p) + r.gauss(0, sd))) for t in range(K)]
        rows.append(([f"{tau:.3f}"], c))
    write(f"synth_crossing_{seed}", rows, "acc", K, ["cost"])
def lrdrop(seed, n=800, K=40):
    r = random.Random(seed); rows = []
    for _ in range(n):
        a = r.uniform(0.4, 0.8); tau = r.uniform(1, 8); drop = r.randint(int(0.4*K), int(0.8*K))
        jump = r.uniform(0, 0.2); sd = r.uniform(0.005, 0.03)
        c = []
        for t in range(K):
            v = a*(1-math.exp(-(t+1)/tau)) + r.gauss(0, sd)
            if t >= drop: v = a*(1-math.exp(-(t+1)/tau)) + jump*(1-math.exp(-(t-drop+1)/1.5)) + r.gauss(0, sd/4)
            c.append(min(1, max(0, v)))
        rows.append(([f"{1+drop/10:.2f}"], c))
    write(f"synth_lrdrop_{seed}", rows, "acc", K, ["cost"])
def loss(seed, n=600, K=60):
    r = random.Random(seed); rows = []
    for _ in range(n):
        fin = r.uniform(60, 140); start = r.uniform(250, 700); tau = r.uniform(2, 10)
        drop = r.randint(int(0.3*K), K-2); dj = r.uniform(0, 0.1)*fin; sd = r.uniform(0.005, 0.02)
        c = []
        for t in range(K):
            v = fin + dj + (start-fin)*math.exp(-(t+1)/tau)
            v *= 1 + r.gauss(0, sd)
            if t >= drop: v -= dj
            c.append(v)
        rows.append(([f"{r.uniform(1,5):.2f}"], c))
    write(f"synth_loss_{seed}", rows, "ep", K, ["cost"])
def overfit(seed, n=800, K=50):
    r = random.Random(seed); rows = []
    for _ in range(n):
        a = r.uniform(0.55, 0.95); tau = math.exp(r.uniform(0, math.log(K/4)))
        peak = r.randint(K//4, 2*K); d = r.uniform(0, 0.006); sd = r.uniform(0.003, 0.02)
        c = [min(1, max(0, a*(1-math.exp(-(t+1)/tau)) - d*max(0, t-peak) + r.gauss(0, sd)))
             for t in range(K)]
        rows.append(([f"{tau:.3f}"], c))
    write(f"synth_overfit_{seed}", rows, "acc", K, ["cost"])
def diverge(seed, n=800, K=50):
    r = random.Random(seed); rows = []
    for _ in range(n):
        lr = r.uniform(0, 1); a = r.uniform(0.5, 0.95); tau = 1 + 15*(1-lr)
        at = r.randint(2, K-1) if r.random() < 0.6*lr*lr else K; sd = r.uniform(0.003, 0.02)
        c = []
        for t in range(K):
            v = a*(1-math.exp(-(t+1)/tau)) + r.gauss(0, sd) if t < at else 0.1 + r.gauss(0, 0.01)
            c.append(min(1, max(0, v)))
        rows.append(([f"{1+lr:.3f}"], c))
    write(f"synth_diverge_{seed}", rows, "acc", K, ["cost"])
def plateau(seed, n=800, K=50):
    r = random.Random(seed); rows = []
    for _ in range(n):
        a = r.uniform(0.55, 0.95); warm = int(r.uniform(0, K/4) + 10*(a-0.55))
        tau = r.uniform(1, 8); sd = r.uniform(0.003, 0.02)
        c = []
        for t in range(K):
            v = 0.1 if t < warm else 0.1 + (a-0.1)*(1-math.exp(-(t-warm+1)/tau))
            c.append(min(1, max(0, v + r.gauss(0, sd))))
        rows.append(([f"{1+warm/10:.2f}"], c))
    write(f"synth_plateau_{seed}", rows, "acc", K, ["cost"])
def powloss(seed, n=600, K=60):
    r = random.Random(seed); rows = []
    for _ in range(n):
        c0 = r.uniform(1, 3); a = r.uniform(1, 10); alpha = r.uniform(0.2, 1.5)
        sd = r.uniform(0.005, 0.02)
        c = [(c0 + a*(t+1)**-alpha)*(1 + r.gauss(0, sd)) for t in range(K)]
        rows.append(([f"{r.uniform(1,5):.2f}"], c))
    write(f"synth_powloss_{seed}", rows, "ep", K, ["cost"])
args = sys.argv[2:]
more = "--more" in args
bad = [a for a in args if a != "--more" and not re.fullmatch(r"-?[0-9]+", a)]
if bad:
    usage_error(f"seeds are integers, not '{bad[0]}'")
seeds = tuple(int(a) for a in args if a != "--more") or (1, 2)
os.makedirs(OUT, exist_ok=True)
for s in seeds:
    if more:
        overfit(s); diverge(s); plateau(s); powloss(s)
    else:
        crossing(s); lrdrop(s); loss(s)
