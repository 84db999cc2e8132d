#!/usr/bin/python3
"""How well a score at an early iteration keeps a curve set's best rows (offline; needs
python3-numpy). For each file: the share of its top 2 % of rows (by the mean of the last three
epochs) that rank in the top half by the score at iterations 3, 6 and 12 (the top quarter at 24),
for the value reported there (`raw`), for the curve extrapolated to the last epoch (`fit`: the
least-squares c + d exp(-t / tau) over a log grid of tau, kept between the value and the value
plus its gain since the first epoch: budget_score fit without its refinement of tau), and for
the same extrapolation unclamped (`unclamped`).
docs/tune_replay.md. Runs with Debian's /usr/bin/python3, where python3-numpy installs.

    scripts/tune_rank_study.py FILE.csv ...      (files named *loss* or *ptb* are min mode)
"""
import csv, math, sys
import numpy as np

def load(path):
    rows = list(csv.reader(open(path)))
    cols = [i for i, c in enumerate(rows[0]) if c.startswith(("acc_", "ep_"))]
    return np.array([[float(r[i]) for i in cols] for r in rows[1:] if all(r[i] for i in cols)])

def extrapolate(Y, T):
    n, m = Y.shape
    t = np.arange(1, m + 1, dtype=float)
    best_sse, best = np.full(n, np.inf), Y[:, -1].copy()
    for tau in np.exp(np.linspace(math.log(0.3), math.log(3 * T), 60)):
        X = np.stack([np.ones_like(t), np.exp(-t / tau)], 1)
        C = Y @ np.linalg.pinv(X).T
        sse = ((C @ X.T - Y) ** 2).sum(1)
        better = sse < best_sse
        best_sse[better] = sse[better]
        best[better] = (C[:, 0] + C[:, 1] * math.exp(-T / tau))[better]
    return best

totals = {"raw": [], "fit": [], "unclamped": []}
for path in sys.argv[1:]:
    sign = -1 if ("loss" in path or "ptb" in path) else 1
    Y = load(path)
    n, T = Y.shape
    top = np.argsort(-sign * Y[:, -3:].mean(1))[: max(3, n // 50)]
    out = {"raw": [], "fit": [], "unclamped": []}
    for m in (3, 6, 12, 24):
        if m >= T / 2:
            continue
        raw = sign * Y[:, m - 1]
        gain = np.maximum(raw - sign * Y[:, 0], 0)
        unclamped = sign * extrapolate(Y[:, :m], T)
        fit = np.clip(unclamped, raw, raw + gain)
        keep = 0.5 if m < 24 else 0.25
        for name, score in (("raw", raw), ("fit", fit), ("unclamped", unclamped)):
            out[name].append(np.mean(score[top] >= np.quantile(score, 1 - keep)))
    for name in out:
        totals[name].append(out[name])
    print(f"{path.split('/')[-1]:<28}" + "  ".join(
        f"{name}: " + " ".join(f"{x:.2f}" for x in v) for name, v in out.items()))
for name, rows in totals.items():
    width = min(len(r) for r in rows)
    print(f"mean over files, {name}: " + " ".join(
        f"{np.mean([r[k] for r in rows]):.2f}" for k in range(width)))
