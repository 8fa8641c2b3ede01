"""A correlation matrix for the multi-GPU benchmark, made on the GPU (the device machine has no R).

    python3 multigpu-cor.py P N SEED OUT.bin

Samples N rows of a random linear-Gaussian DAG over P variables (topological order 0..P-1, 2 P
random pairs as edges, so an expected degree of about 4; weights uniform in [0.1, 1] with a random sign, unit-variance noise) in float64 on cuda:0, and
writes its Pearson correlation matrix as raw little-endian float64 (P * P values, what
`pcbench --cor` reads). At P = 55,572 the matrix is 24.7 GB.
"""
import sys, time
import numpy as np
import torch

p, n, seed, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t0 = time.time()
dev = torch.device("cuda:0")
g = torch.Generator(device=dev).manual_seed(seed)
rng = np.random.default_rng(seed)
m = int(p * 2)  # expected degree 4: 2 p edges
a = rng.integers(0, p, size=m)
b = rng.integers(0, p, size=m)
keep = a != b
par, child = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
w = rng.uniform(0.1, 1.0, size=par.size) * rng.choice([-1.0, 1.0], size=par.size)
order = np.argsort(child, kind="stable")
par, child, w = par[order], child[order], w[order]
starts = np.searchsorted(child, np.arange(p + 1))
x = torch.randn((p, n), dtype=torch.float64, device=dev, generator=g)  # row j = variable j
par_d = torch.from_numpy(par).to(dev)
w_d = torch.from_numpy(w).to(dev)
for j in np.nonzero(starts[1:] > starts[:-1])[0]:
    s, e = starts[j], starts[j + 1]
    x[j] += w_d[s:e] @ x[par_d[s:e]]
x -= x.mean(dim=1, keepdim=True)
x /= x.norm(dim=1, keepdim=True)
c = x @ x.T
c.diagonal().fill_(1.0)
c = 0.5 * (c + c.T)  # exactly symmetric
torch.cuda.synchronize()
t1 = time.time()
c.cpu().numpy().tofile(out)
print(f"multigpu-cor: p {p} n {n} seed {seed}: {par.size} DAG edges, C on the GPU in {t1 - t0:.1f} s, "
      f"written in {time.time() - t1:.1f} s to {out}", flush=True)
