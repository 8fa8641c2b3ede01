#!/usr/bin/env python3
"""One tigramite CMIknn test (run_test_raw), timed: the baseline of bench/suites/cmiknn/cmiknn-bench.sh.

    python3 bench/baselines/tigramite.py N KNN SIG_SAMPLES L REPEAT

KNN below 1 is a fraction of n (tigramite's rule). workers=-1: scipy's cKDTree queries use every
core. tigramite is imported by tigramite_env.py (beside this script). Prints one CSV row: tool,n,k,B,l,workers,median_s,statistic,p_value.
"""
import os
import sys
import time

import numpy as np

from tigramite_env import import_cmiknn

CMIknn = import_cmiknn()

n, knn, B, l, rep = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
if knn >= 1:
    knn = int(knn)
rng = np.random.default_rng(1)
z = rng.normal(size=(n, max(l, 1)))
x = np.tanh(z[:, 0]) + 0.5 * rng.normal(size=n)
y = np.sin(2 * z[:, 0]) + 0.5 * rng.normal(size=n)
# |S| = 0: tigramite's block shuffle with sig_blocklength=None estimates the block length through
# np.corrcoef(..., ddof=0), which numpy 2.x no longer accepts; blocks of 1 (a full permutation,
# what i.i.d. data call for) skip that estimate without touching tigramite's code.
t = CMIknn(knn=knn, shuffle_neighbors=5, sig_samples=B, workers=-1, seed=1, sig_blocklength=1 if l == 0 else None)
times = []
for _ in range(rep):
    t0 = time.perf_counter()
    val, p = t.run_test_raw(x.reshape(n, 1), y.reshape(n, 1), z[:, :l] if l > 0 else None)
    times.append(time.perf_counter() - t0)
k = max(1, int(knn * n)) if knn < 1 else knn
print(f"tigramite,{n},{k},{B},{l},{os.cpu_count()},{sorted(times)[len(times) // 2]:.4f},{val!r},{p!r}", flush=True)
