#!/usr/bin/env python3
"""Distribution of CMI-kNN p-values, ours (pcbench cmiknn pvalues, GPU) beside tigramite's CMIknn,
on the same simulated data sets.

    python3 bench/suites/cmiknn/cmiknn-dist.py --pcbench PCBENCH --out DIR --tig-seconds 150 --procs 12 [--then CMD ...]

Cells: n in {200, 1000, 5000} x |S| in {0, 1, 3} x {H0, H1}. Data (z ~ N(0, I_l), e1, e2 ~ N(0, 1)):
    x = tanh(2 z1) + 0.5 (z2 + ... + zl) + e1
    y = sin(2 z1) + 0.3 (z2^2 + ... + zl^2) + e2 + beta_n x^2        (H1; beta_n = 0 under H0)
so X and Y depend non-linearly on Z, and under H1 Y depends on X given Z through x^2, which a
partial correlation does not see. beta_n = c / sqrt(n), with c chosen so the power is neither 0
nor 1 at any n. Test settings (both tools): knn = 10, shuffle_neighbors = 5, sig_samples = 99,
ranks, permute Y; alpha = 0.05.

tigramite: CMIknn(..., workers=1) in a pool of --procs processes, run_test_raw; with |S| = 0 it
falls back to its block shuffle, whose block length (sig_blocklength=None) comes from
_get_acf(), which calls np.corrcoef(..., ddof=0): numpy deprecated ddof there in 1.10 and has
since removed it, so under numpy 2.x the call raises TypeError. The workaround passes
sig_blocklength=1 to the constructor (blocks of one sample: a full random permutation of X, what
i.i.d. data call for and what the autocorrelation rule picks for them), which skips _get_acf;
tigramite's code is not modified. Its tasks are scheduled so every cell advances at the same
fraction of its target count and the pool is stopped after --tig-seconds: the replicate counts
it reached are printed beside the results.

Uniformity: the p-values (1 + #{null >= stat}) / (B + 1) are discrete; each is made continuous by
subtracting U(0, 1) / (B + 1) (the randomised p-value, exactly U(0, 1) under H0 when the null is
exchangeable) before scipy's one-sample KS test against U(0, 1). Power: the share of p <= 0.05,
with its binomial standard error; ours against tigramite on the replicates both ran, with the
standard error of the difference sqrt(se1^2 + se2^2) (conservative: the two are positively
correlated on shared data).
"""
import argparse
import math
import multiprocessing as mp
import os
import subprocess
import sys
import time

import numpy as np

from tigramite_env import import_cmiknn

NS = (200, 1000, 5000)
LS = (0, 1, 3)
C_H1 = 4.0          # beta_n = C_H1 / sqrt(n)
KNN, SHUF, B, ALPHA = 10, 5, 99, 0.05
OURS_REPS = {200: 500, 1000: 500, 5000: 100}
TIG_TARGET = {200: 300, 1000: 200, 5000: 60}


def simulate(n, l, hyp, reps, seed):
    """reps x n x (2 + l) array: columns x, y, z_1..z_l."""
    rng = np.random.default_rng(seed)
    out = np.empty((reps, n, 2 + l))
    beta = C_H1 / math.sqrt(n) if hyp == "H1" else 0.0
    for r in range(reps):
        z = rng.normal(size=(n, l))
        e1, e2 = rng.normal(size=n), rng.normal(size=n)
        x = e1.copy()
        y = e2.copy()
        if l > 0:
            x += np.tanh(2 * z[:, 0]) + 0.5 * z[:, 1:].sum(axis=1)
            y += np.sin(2 * z[:, 0]) + 0.3 * (z[:, 1:] ** 2).sum(axis=1)
        y += beta * x ** 2
        out[r, :, 0], out[r, :, 1], out[r, :, 2:] = x, y, z
    return out


CELLS = {}


def cell_key(n, l, hyp):
    return f"n{n}_S{l}_{hyp}"


def build_cells():
    for i, n in enumerate(NS):
        for j, l in enumerate(LS):
            for k, hyp in enumerate(("H0", "H1")):
                CELLS[cell_key(n, l, hyp)] = simulate(n, l, hyp, OURS_REPS[n], 1000 + 100 * i + 10 * j + k)


def tig_task(task):
    key, r = task
    CMIknn = import_cmiknn()
    d = CELLS[key][r]
    n, l = d.shape[0], d.shape[1] - 2
    t = CMIknn(knn=KNN, shuffle_neighbors=SHUF, sig_samples=B, workers=1, seed=r + 1,
               sig_blocklength=1)
    t0 = time.perf_counter()
    try:
        val, p = t.run_test_raw(d[:, :1], d[:, 1:2], d[:, 2:] if l > 0 else None)
    except Exception as e:  # reported, not fatal: the other tasks go on
        return key, r, float("nan"), float("nan"), time.perf_counter() - t0, repr(e)
    return key, r, float(val), float(p), time.perf_counter() - t0, None


def ours(pcbench, out, threads):
    res = {}
    for key, d in CELLS.items():
        reps, n, w = d.shape
        path = os.path.join(out, "cell.f64")
        # column-major n x (reps w): replicate r's column c at (r w + c) n
        np.ascontiguousarray(d.transpose(0, 2, 1)).astype("<f8").tofile(path)
        cp = subprocess.run([pcbench, "cmiknn", "pvalues", "--input", path, "--n", str(n), "--level", str(w - 2),
                             "--knn", str(KNN), "--shuffle", str(SHUF), "--sig-samples", str(B), "--seed", "1",
                             "--threads", str(threads), "--backend", "cuda"], capture_output=True, text=True)
        sys.stderr.write(cp.stderr)
        if cp.returncode != 0:
            raise SystemExit(f"pcbench failed on {key}: {cp.stderr}")
        rows = [line.split(",") for line in cp.stdout.strip().splitlines()[1:]]
        res[key] = {int(a): (float(b), float(c)) for a, b, c in rows}
        os.remove(path)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pcbench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tig-seconds", type=float, default=150)
    ap.add_argument("--procs", type=int, default=12)
    ap.add_argument("--threads", type=int, default=4, help="host threads of our GPU runs")
    ap.add_argument("--then", action="append", default=[], help="shell commands run while tigramite works")
    ap.add_argument("--then-done", help="a file made once the --then commands have run")
    a = ap.parse_args()
    from scipy import stats
    build_cells()
    print(f"# numpy {np.__version__}; cells {len(CELLS)}; knn {KNN}, shuffle_neighbors {SHUF}, B {B}; "
          f"H1 beta = {C_H1}/sqrt(n); tigramite pool {a.procs} processes for {a.tig_seconds:.0f} s", flush=True)

    # tigramite: every cell advances at the same fraction of its target
    tasks = sorted(((k, r) for k, d in CELLS.items() for r in range(TIG_TARGET[d.shape[1]])),
                   key=lambda kr: (kr[1] / TIG_TARGET[CELLS[kr[0]].shape[1]], kr[0]))
    ctx = mp.get_context("fork")
    pool = ctx.Pool(a.procs)
    t_start = time.time()
    it = pool.imap_unordered(tig_task, tasks, chunksize=1)

    # ours, then the extra GPU commands, while tigramite works
    t0 = time.time()
    our = ours(a.pcbench, a.out, a.threads)
    print(f"# ours: {sum(len(v) for v in our.values())} tests in {time.time() - t0:.1f} s", flush=True)
    for cmd in a.then:
        print(f"## {cmd}", flush=True)
        subprocess.run(cmd, shell=True)
        sys.stdout.flush()
    if a.then_done:
        open(a.then_done, "w").close()

    tig = {k: {} for k in CELLS}
    tig_time = {k: [] for k in CELLS}
    error, errors = None, []
    while True:
        # past the deadline, still collect what has finished
        left = max(a.tig_seconds - (time.time() - t_start), 0.05)
        try:
            key, r, val, p, secs, err = it.next(timeout=left)
        except StopIteration:
            break
        except mp.TimeoutError:
            break
        except Exception as e:  # a tigramite failure: report it, keep what ran
            error = repr(e)
            break
        if err is not None:
            errors.append(f"{key} rep {r}: {err}")
            continue
        tig[key][r] = (val, p)
        tig_time[key].append(secs)
    pool.terminate()
    if error:
        print(f"# the tigramite pool raised: {error}")
    print(f"# tigramite: {sum(len(v) for v in tig.values())} tests done, {len(errors)} raised" + "".join(f"\n#   {e}" for e in errors[:5]))

    with open(os.path.join(a.out, "cmiknn-dist-pvalues.csv"), "w") as f:
        f.write("cell,n,l,hyp,rep,tool,statistic,p_value\n")
        for key, d in CELLS.items():
            n, l, hyp = d.shape[1], d.shape[2] - 2, key.split("_")[2]
            for tool, res in (("ours", our[key]), ("tigramite", tig[key])):
                for r in sorted(res):
                    f.write(f"{key},{n},{l},{hyp},{r},{tool},{res[r][0]!r},{res[r][1]!r}\n")

    rng = np.random.default_rng(7)
    print("cell,n,l,hyp,tool,reps,rejection_rate,se,ks_D,ks_p,tig_s_per_test,ours_vs_tig_on_shared,diff,se_diff,z")
    for key, d in CELLS.items():
        n, l, hyp = d.shape[1], d.shape[2] - 2, key.split("_")[2]
        shared = sorted(set(our[key]) & set(tig[key]))
        for tool, res in (("ours", our[key]), ("tigramite", tig[key])):
            p = np.array([res[r][1] for r in sorted(res)])
            if len(p) == 0:
                print(f"{key},{n},{l},{hyp},{tool},0,NA,NA,NA,NA,NA,NA,NA,NA,NA")
                continue
            rate = float(np.mean(p <= ALPHA))
            se = math.sqrt(max(rate * (1 - rate), 1e-12) / len(p))
            ks = stats.kstest(p - rng.uniform(size=len(p)) / (B + 1), "uniform") if hyp == "H0" else None
            cmp = "NA,NA,NA,NA"
            if tool == "tigramite" and shared:
                po = np.array([our[key][r][1] for r in shared])
                pt = np.array([tig[key][r][1] for r in shared])
                ro, rt = float(np.mean(po <= ALPHA)), float(np.mean(pt <= ALPHA))
                sd = math.sqrt((ro * (1 - ro) + rt * (1 - rt)) / len(shared))
                cmp = f"{ro:.4f} vs {rt:.4f} (R={len(shared)}),{ro - rt:.4f},{sd:.4f},{(ro - rt) / sd if sd > 0 else 0:.2f}"
            ts = f"{np.median(tig_time[key]):.3f}" if tool == "tigramite" else "NA"
            print(f"{key},{n},{l},{hyp},{tool},{len(p)},{rate:.4f},{se:.4f},"
                  f"{ks.statistic if ks is not None else float('nan'):.4f},{ks.pvalue if ks is not None else float('nan'):.4f},{ts},{cmp}")
    print(f"# total {time.time() - t_start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
