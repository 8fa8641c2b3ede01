"""pyAgrum's LazyPropagation on the networks of `pcbench jtree` (on the GPU machine, beside it):

    python3 bench/baselines/pyagrum-bench.py single OUT.csv NET.bif.gz ...
        one query without evidence (a new LazyPropagation, all posteriors), all cores' threads
        (PYAGRUM_THREADS threads where set)
    python3 bench/baselines/pyagrum-bench.py batch OUT.csv CAP WORKERS NET.bif.gz ...
        evidence sets (5% of the nodes observed, from pyAgrum's forward samples) answered by
        WORKERS processes of one thread each, every worker starting new queries until CAP seconds
        have passed (at least one each); the rate (queries / wall time until the last worker is done) gives the time
        for 10,000 queries (an extrapolation, said so in the CSV). Also the same one query after
        another with all threads in one process, for one CAP.
    python3 bench/baselines/pyagrum-bench.py mpe OUT.csv CAP MPE.tsv DIR
        the MPE of the evidence sets in MPE.tsv (written by `pcbench jtree --mpe-out`) by pyAgrum
        (LazyPropagation.mpe()), against ours: the same states, and ln P(mpe, e) of both. pyAgrum
        3.3.1 stops with "Empty tensor" on most evidence sets (or, with all variables targets,
        answers a partial instantiation): those are counted as failed, not compared.

The file's name is not `pyagrum.py`: Python puts the script's folder first on the module path, so
under that name `import pyagrum` imported this script instead of the library.
"""
import csv, gzip, math, multiprocessing as mp, os, random, sys, tempfile, time

import pyagrum as gum


def load(path):
    name = os.path.basename(path).replace(".gz", "").replace(".bif", "")
    tmp = os.path.join(tempfile.gettempdir(), name + ".bif")
    with gzip.open(path, "rt") as f, open(tmp, "w") as g:
        g.write(f.read())
    return name, gum.loadBN(tmp)


def writer(out, header):
    new = not os.path.exists(out)
    fh = open(out, "a", newline="")
    w = csv.writer(fh)
    if new:
        w.writerow(header)
    return fh, w


def query(bn, nodes, ev):
    ie = gum.LazyPropagation(bn)
    if ev:
        ie.setEvidence(ev)
    ie.makeInference()
    for v in nodes:
        ie.posterior(v)


def single(out, nets):
    gum.setNumberOfThreads(int(os.environ.get("PYAGRUM_THREADS", os.cpu_count() or 1)))
    fh, w = writer(out, ["network", "tool", "threads", "single_s"])
    for path in nets:
        name, bn = load(path)
        t = time.perf_counter()
        query(bn, list(bn.names()), None)
        s = time.perf_counter() - t
        w.writerow([name, "pyAgrum LazyPropagation " + gum.__version__, gum.getNumberOfThreads(), s])
        fh.flush()
        print(f"{name}: pyAgrum one query, no evidence: {s:.4f} s", flush=True)


_G = {}


def _work(args):
    w, nw, cap = args
    gum.setNumberOfThreads(1)
    bn, nodes, evs = _G["bn"], _G["nodes"], _G["evs"]
    done, t0 = 0, time.time()
    for i in range(w, len(evs), nw):
        query(bn, nodes, evs[i])
        done += 1
        if time.time() - t0 > cap:
            break
    return done, t0, time.time()


def evidence_sets(name, bn, rows):
    gen = gum.BNDatabaseGenerator(bn)
    gen.drawSamples(rows)
    smp = os.path.join(tempfile.gettempdir(), name + "-samples.csv")
    gen.toCSV(smp, True)
    with open(smp) as f:
        data = list(csv.DictReader(f))
    nodes = list(bn.names())
    rng = random.Random(1)
    k = max(1, round(0.05 * len(nodes)))
    return [{v: r[v] for v in rng.sample(nodes, k)} for r in data]


def batch(out, cap, workers, nets):
    fh, w = writer(out, ["network", "tool", "mode", "processes", "threads_each", "cap_s", "rows_done", "wall_s",
                         "s_per_query", "extrapolated_10000_s"])
    for path in nets:
        name, bn = load(path)
        nodes = list(bn.names())
        evs = evidence_sets(name, bn, 800)
        _G.update(bn=bn, nodes=nodes, evs=evs)
        with mp.get_context("fork").Pool(workers) as pool:
            res = pool.map(_work, [(i, workers, cap) for i in range(workers)])
        # from the first worker's start to the last one's end (the pool's start is not counted)
        done, wall = sum(r[0] for r in res), max(r[2] for r in res) - min(r[1] for r in res)
        per = wall / max(done, 1)
        w.writerow([name, "pyAgrum LazyPropagation " + gum.__version__, "parallel processes", workers, 1, cap, done,
                    wall, per, per * 10000])
        fh.flush()
        print(f"{name}: pyAgrum {workers} processes x 1 thread: {done} queries in {wall:.2f} s "
              f"({per:.5f} s per query; 10,000: {per * 1e4:.0f} s, extrapolated)", flush=True)
        gum.setNumberOfThreads(os.cpu_count() or 1)
        done, t0 = 0, time.perf_counter()
        for ev in evs[::-1]:
            query(bn, nodes, ev)
            done += 1
            if time.perf_counter() - t0 > cap:
                break
        wall = time.perf_counter() - t0
        per = wall / done
        w.writerow([name, "pyAgrum LazyPropagation " + gum.__version__, "one after another", 1,
                    gum.getNumberOfThreads(), cap, done, wall, per, per * 10000])
        fh.flush()
        print(f"{name}: pyAgrum one after another, {gum.getNumberOfThreads()} threads: {done} queries in "
              f"{wall:.2f} s ({per:.5f} s per query; 10,000: {per * 1e4:.0f} s, extrapolated)", flush=True)


def parse(s):
    return dict(kv.split("=", 1) for kv in s.split(";")) if s else {}


def mpe(out, cap, tsv, folder):
    gum.setNumberOfThreads(int(os.environ.get("PYAGRUM_THREADS", "4")))
    rows = {}
    with open(tsv) as f:
        for line in f:
            net, r, ev, x, lp = line.rstrip("\n").split("\t")
            rows.setdefault(net, []).append((int(r), parse(ev), parse(x), float(lp)))
    fh, w = writer(out, ["network", "rows", "same_states", "ties", "max_abs_lnp_diff", "max_abs_ours_eval_diff",
                         "pyagrum_s_per_row", "pyagrum_failed"])
    for net, rs in rows.items():
        _, bn = load(os.path.join(folder, net + ".bif.gz"))
        same = ties = done = failed = 0
        dl = de = 0.0
        t0 = time.perf_counter()
        for r, ev, x, lp in rs:
            if time.perf_counter() - t0 > cap:
                break
            # pyAgrum's documentation: keep barren nodes for an MPE; all variables targets
            ie = gum.LazyPropagation(bn)
            ie.setFindBarrenNodesType(0)  # FIND_NO_BARREN_NODES
            ie.addAllTargets()
            if ev:
                ie.setEvidence(ev)
            try:
                m = ie.mpe()
                if m.nbrDim() != bn.size():
                    raise ValueError("a partial instantiation")
            except Exception:  # pyAgrum 3.3.1: "Empty tensor" on most evidence sets
                failed += 1
                continue
            theirs = {bn.variable(i).name(): m.val(bn.variable(i)) for i in range(bn.size())}
            lp_theirs = bn.log2JointProbability(m) * math.log(2)
            inst = bn.completeInstantiation()
            for v, s in x.items():
                inst.chgVal(bn.variableFromName(v), bn.variableFromName(v).index(s))
            lp_ours_eval = bn.log2JointProbability(inst) * math.log(2)
            mine = {v: bn.variableFromName(v).index(s) for v, s in x.items()}
            if mine == theirs:
                same += 1
            elif abs(lp_ours_eval - lp_theirs) <= 1e-9 * max(1.0, abs(lp_theirs)):
                ties += 1  # another configuration of the same probability
            dl = max(dl, abs(lp - lp_theirs))
            de = max(de, abs(lp - lp_ours_eval))
            done += 1
        per = (time.perf_counter() - t0) / max(done + failed, 1)
        w.writerow([net, done, same, ties, dl, de, per, failed])
        fh.flush()
        print(f"{net}: MPE against pyAgrum on {done} evidence sets: same states {same}, equally probable other "
              f"states {ties}; max |ln P ours - ln P pyAgrum| {dl:.3e}; ours re-evaluated by pyAgrum {de:.3e} "
              f"({per:.3f} s per pyAgrum MPE; pyAgrum failed on {failed})", flush=True)


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "single":
        single(out, sys.argv[3:])
    elif mode == "batch":
        batch(out, float(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    elif mode == "mpe":
        mpe(out, float(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        sys.exit("mode: single, batch or mpe")
