#!/usr/bin/env bash
# CMI-kNN run on the GPU machine, one command: tigramite's |S| = 0 failure
# under the machine's numpy and its workaround; the p-value distributions of ours and tigramite
# (cmiknn-dist.py: tigramite on 12 processes while the GPU runs ours, then skeleton recovery on
# quadratic / tanh / sine DAGs beside the Gaussian test, then a PC run at p = 200, n = 2000);
# last, one tigramite test of the p = 50 PC run's shape with |S| = 0. bench/run cmiknn dist runs
# it with PCBENCH, DEV (which holds the tigramite wheel) and RAW (where results go) set:
# cmiknn-tigramite-empty-set.txt, cmiknn-dist.txt, cmiknn-dist-summary.csv,
# cmiknn-dist-pvalues.csv, cmiknn-dag-gpu.csv.
set -u
here=$(cd "$(dirname "$0")" && pwd)
baselines=$(cd "$here/../../baselines" && pwd)
out=${RAW:?}
mkdir -p "$out"
pcb=${PCBENCH:?}
export TIGRAMITE_PATH=${TMPDIR:-/tmp}/tig-site PYTHONPATH=$baselines OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# a wheel is a zip: unpacking it is a --no-deps install
python3 -c "import zipfile, sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$(ls "${DEV:?}"/tigramite-*.whl | head -1)" "$TIGRAMITE_PATH"
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null) $(nproc --all) cores"
  "$pcb" probe
  echo "## tigramite CMIknn with |S| = 0 under this numpy: default sig_blocklength, then sig_blocklength = 1"
  timeout 60 python3 - <<'EOF'
import inspect
import numpy as np, scipy
from tigramite_env import import_cmiknn
CMIknn = import_cmiknn()
print("numpy", np.__version__, "scipy", scipy.__version__, "np.corrcoef", inspect.signature(np.corrcoef))
rng = np.random.default_rng(1)
x, y = rng.normal(size=(200, 1)), rng.normal(size=(200, 1))
try:
    print("default:", CMIknn(knn=10, sig_samples=19, workers=1).run_test_raw(x, y, None))
except Exception as e:
    print("default raises:", type(e).__name__, e)
print("sig_blocklength=1:", CMIknn(knn=10, sig_samples=19, workers=1, sig_blocklength=1).run_test_raw(x, y, None))
EOF
} 2>&1 | tee "$out/cmiknn-tigramite-empty-set.txt"

done_flag=${TMPDIR:-/tmp}/cmiknn-then-done
rm -f "$done_flag"
then1="timeout 45 $pcb cmiknn dag --p 20 --n 500 --cases 3 --knn 0.2 --sig-samples 100 --degree 2 --threads 4 --backend cuda --seed 1 > $out/cmiknn-dag-gpu.csv"
then2="timeout 170 $pcb cmiknn pc --p 200 --n 2000 --knn 0.2 --sig-samples 50 --degree 2 --backend cuda --threads 4 --seed 3 --limit-s 160"
timeout 330 python3 "$here/cmiknn-dist.py" --pcbench "$pcb" --out "$out" --tig-seconds "${TIG_SECONDS:-200}" --procs 12 --threads 4 \
  --then "$then1" --then "$then2" --then-done "$done_flag" 2>&1 | tee "$out/cmiknn-dist.txt"
if [ ! -e "$done_flag" ]; then
  echo "## cmiknn-dist.py stopped before its GPU commands: running them alone" | tee -a "$out/cmiknn-dist.txt"
  { eval "$then1"; eval "$then2"; } 2>&1 | tee -a "$out/cmiknn-dist.txt"
fi
{
  echo "## tigramite, one test of the p = 50 PC run's shape with |S| = 0 (n = 1000, k = 200, B = 500; sig_blocklength = 1), all cores"
  echo "tool,n,k,B,l,workers,median_s,statistic,p_value"
  timeout 30 python3 "$baselines/tigramite.py" 1000 0.2 500 0 1
} 2>&1 | tee -a "$out/cmiknn-dist.txt"
