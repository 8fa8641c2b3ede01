"""pyAgrum LazyPropagation on the same networks as `pcbench jtree`: one query without evidence
(all posteriors) and evidence sets (5% of the nodes observed, from forward samples) answered one
after another within a time cap, so the time for 10,000 is extrapolated from the rows done.

    python3 jtree-pyagrum.py OUT.csv CAP_SECONDS NET.bif.gz ...
"""
import csv, gzip, os, random, sys, tempfile, time

import pyagrum as gum

out, cap, nets = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
gum.setNumberOfThreads(os.cpu_count() or 1)
new = not os.path.exists(out)
with open(out, "a", newline="") as fh:
    w = csv.writer(fh)
    if new:
        w.writerow(["network", "tool", "threads", "single_s", "rows_done", "s_per_row", "extrapolated_10000_s"])
    for path in nets:
        name = os.path.basename(path).replace(".gz", "").replace(".bif", "")
        tmp = os.path.join(tempfile.gettempdir(), name + ".bif")
        with gzip.open(path, "rt") as f, open(tmp, "w") as g:
            g.write(f.read())
        bn = gum.loadBN(tmp)
        nodes = list(bn.names())
        t = time.perf_counter()
        ie = gum.LazyPropagation(bn)
        ie.makeInference()
        for v in nodes:
            ie.posterior(v)
        single = time.perf_counter() - t
        gen = gum.BNDatabaseGenerator(bn)
        gen.drawSamples(200)
        smp = os.path.join(tempfile.gettempdir(), name + "-samples.csv")
        gen.toCSV(smp, True)
        with open(smp) as f:
            rows = list(csv.DictReader(f))
        rng = random.Random(1)
        k = max(1, round(0.05 * len(nodes)))
        done, t0 = 0, time.perf_counter()
        for r in rows:
            ev = {v: r[v] for v in rng.sample(nodes, k)}
            ie = gum.LazyPropagation(bn)
            ie.setEvidence(ev)
            ie.makeInference()
            for v in nodes:
                ie.posterior(v)
            done += 1
            if time.perf_counter() - t0 > cap:
                break
        per = (time.perf_counter() - t0) / max(done, 1)
        w.writerow([name, "pyAgrum LazyPropagation " + gum.__version__, gum.getNumberOfThreads(), single, done, per, per * 10000])
        fh.flush()
        print(f"{name}: pyAgrum single query {single:.4f} s; {done} evidence sets at {per:.4f} s each (10,000: {per*1e4:.0f} s)", flush=True)
