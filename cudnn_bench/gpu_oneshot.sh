#!/usr/bin/env bash
# One device call does a whole GPU session's work (cudnn_bench/oneshot.py): versions, Test-set-II
# and the GEMM layers, PyTorch traces, the redo, then conv_grid, the rest of the SEER grid and the
# gradients' grid in stratified order, the memory-bound suite, Test-set-II's convolution
# gradients, the core in TF32/BF16/FP16 (each until the data holds it), an ncu sample, a report,
# with data/ packed into $OUT every minute, all inside 9.5 minutes. From the repo root:
#   bash cudnn_bench/gpu_oneshot.sh                 # the first call of a session
#   bash cudnn_bench/gpu_oneshot.sh --shard 2/4     # a slice of the grid (another session or machine)
# Then, on the CPU side: tar xzf <files_at>/data.tgz (it holds data/<gpu-slug>/); a rerun resumes.
# Arguments go to python -m cudnn_bench.oneshot (--help). Nothing here changes the GPU's settings.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
"$PY" -c 'import numpy, pandas, scipy, statsmodels' 2>/dev/null || {
  echo "gpu_oneshot: $PY lacks numpy, pandas, scipy or statsmodels, which cudnn_bench needs" >&2; exit 2; }
exec "$PY" -m cudnn_bench.oneshot --out-dir "${OUT:-oneshot-out}" "$@"
