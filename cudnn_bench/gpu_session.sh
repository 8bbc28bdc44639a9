#!/usr/bin/env bash
# Steps of a GPU session for cudnn_bench (see cudnn_bench/GPU_RUN.md). Run from the repo root:
#   bash cudnn_bench/gpu_session.sh setup          # pycuda, info, GPU tests, backend and ncu smoke runs
#   bash cudnn_bench/gpu_session.sh collect 9m     # the timing pass, at most 9 minutes, resumable
#   bash cudnn_bench/gpu_session.sh counters 3m    # the ncu counter pass over what is collected
# Everything worth keeping is packed into $OUT (at most 8 files): data.tgz (data/), smoke.tgz,
# session.log, and the pycuda wheel built here. Nothing here changes the GPU's settings.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/cudnn_bench_out}
mkdir -p "$OUT"
PY=${PY:-python3}
SITE=/tmp/site
LOG="$OUT/session.log"
step() { echo "=== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { step "$*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

install_wheels() {
  # pycuda's pure-Python needs (pytools, platformdirs, mako, siphash24) and, from the second
  # call on, the pycuda wheel that the first call built (copied into .whl/ between calls)
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
      2>&1 | tail -3 | tee -a "$LOG"
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
}

build_pycuda() {
  if "$PY" -c "import pycuda.driver" 2>/dev/null; then step "pycuda already importable"; return 0; fi
  local sdist nvcc root src
  sdist=$(ls .whl/pycuda-*.tar.gz 2>/dev/null | tail -1)
  if [ -z "$sdist" ]; then step "no pycuda sdist in .whl/: the backend will be cupy or driver"; return 1; fi
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)
  if [ -z "$nvcc" ]; then step "no nvcc: cannot build pycuda"; return 1; fi
  root=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  export PATH="$root/bin:$PATH"
  src=/tmp/pycuda-src; rm -rf "$src"; mkdir -p "$src"; tar xzf "$sdist" -C "$src" --strip-components=1
  local curand=""; [ -f "$root/include/curand.h" ] || curand="--no-cuda-enable-curand"
  step "building pycuda from $sdist against $root $curand"
  (cd "$src" && "$PY" configure.py --cuda-root="$root" $curand >>"$LOG" 2>&1 &&
     LIBRARY_PATH="$root/lib64/stubs:$root/lib64${LIBRARY_PATH:+:$LIBRARY_PATH}" \
     "$PY" -m pip wheel -q --no-build-isolation --no-deps --no-index -w /tmp/pycuda-wheel . >>"$LOG" 2>&1) \
    || { step "pycuda build FAILED (see session.log); the backend will be cupy or driver"; return 1; }
  "$PY" -m pip install -q --no-index --no-deps --target "$SITE" /tmp/pycuda-wheel/pycuda-*.whl >>"$LOG" 2>&1
  cp /tmp/pycuda-wheel/pycuda-*.whl "$OUT/"
  "$PY" -c "import pycuda.autoprimaryctx, pycuda.driver as d; print('pycuda', d.get_version(), d.Context.get_device().name())" \
    2>&1 | tee -a "$LOG"
}

pack() {
  [ -d data ] && tar czf "$OUT/data.tgz" --exclude=data/README.md data 2>>"$LOG"
  [ -d /tmp/smoke ] && tar czf "$OUT/smoke.tgz" -C /tmp smoke 2>>"$LOG"
  ls -la "$OUT" | tee -a "$LOG"
}

cmd=${1:-setup}
limit=${2:-9m}
step "cudnn_bench GPU session: $cmd $limit"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total --format=csv 2>&1 | tee -a "$LOG"
install_wheels
case "$cmd" in
  setup)
    # pycuda compiles on the CPU while the other checks use the GPU through the driver backend
    build_pycuda > /tmp/pycuda-build.txt 2>&1 &
    builder=$!
    run "$PY" -m cudnn_bench info
    run timeout 300 "$PY" -m pytest -q -rs tests/test_bench_*.py   # CPU tests on Python 3.12 + the gpu-marked smoke
    for b in driver cupy; do
      run timeout 240 "$PY" -m cudnn_bench collect --out "/tmp/smoke/$b" --backend "$b" --suite test_set_ii,gemm_layers \
        --budget 6 --counters none --no-progress
      run "$PY" -m cudnn_bench report "/tmp/smoke/$b"
    done
    run timeout 300 "$PY" -m cudnn_bench collect --out /tmp/smoke/ncu --backend driver --suite test_set_ii,gemm_layers \
      --budget 4 --counters all --counters-budget 12 --no-progress
    run "$PY" -m cudnn_bench report /tmp/smoke/ncu
    wait "$builder"
    cat /tmp/pycuda-build.txt | tee -a "$LOG"
    run timeout 240 "$PY" -m cudnn_bench collect --out /tmp/smoke/pycuda --backend pycuda --suite test_set_ii,gemm_layers \
      --budget 6 --counters none --no-progress
    run "$PY" -m cudnn_bench report /tmp/smoke/pycuda
    ;;
  collect)
    run "$PY" -m cudnn_bench collect --out data --budget 14m --stop-after "$limit" --counters none --no-progress
    for d in data/*/; do [ -f "$d/device.json" ] && run "$PY" -m cudnn_bench report "$d"; done
    ;;
  counters)
    for d in data/*/; do
      [ -f "$d/device.json" ] || continue
      run "$PY" -m cudnn_bench counters --data "$d" --counters sample --counters-budget "$limit"
      run "$PY" -m cudnn_bench report "$d"
    done
    ;;
  *) echo "usage: $0 setup | collect TIME | counters TIME"; exit 2 ;;
esac
pack
