"""The ctypes structs against the installed C headers, where the NVIDIA wheels' headers and a C
compiler are present (the GPU machine has them; CI usually not: then this skips).

A small C program prints sizeof/offsetof of the three cudnnConvolution*AlgoPerf_t, the gradients'
algorithm enums,
cublasLtMatmulHeuristicResult_t and CUpti_ActivityKernel*'s prefix from the headers of the
installed versions, and the test compares them with cudnn_bench's ctypes definitions.
"""
from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from cudnn_bench.cublaslt import HeuristicResult
from cudnn_bench.cudnn import ConvAlgoPerf
from cudnn_bench.cupti import ActivityKernelPrefix
from seer.data.variants import CONV_OP_ALGOS

PROBE = r"""
#include <stdio.h>
#include <stddef.h>
#include <cudnn.h>
#include <cublasLt.h>
#include <cupti_activity.h>
#define P(T, f) printf(#T "." #f " %zu\n", offsetof(T, f));
int main(void) {
  printf("cudnnConvolutionFwdAlgoPerf_t %zu\n", sizeof(cudnnConvolutionFwdAlgoPerf_t));
  P(cudnnConvolutionFwdAlgoPerf_t, memory) P(cudnnConvolutionFwdAlgoPerf_t, mathType)
  printf("cudnnConvolutionBwdDataAlgoPerf_t %zu\n", sizeof(cudnnConvolutionBwdDataAlgoPerf_t));
  P(cudnnConvolutionBwdDataAlgoPerf_t, memory) P(cudnnConvolutionBwdDataAlgoPerf_t, mathType)
  printf("cudnnConvolutionBwdFilterAlgoPerf_t %zu\n", sizeof(cudnnConvolutionBwdFilterAlgoPerf_t));
  P(cudnnConvolutionBwdFilterAlgoPerf_t, memory) P(cudnnConvolutionBwdFilterAlgoPerf_t, mathType)
#define E(v) printf(#v " %d\n", (int)v);
  E(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING) E(CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED)
  E(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) E(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3)
  E(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING) E(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT)
  printf("cublasLtMatmulHeuristicResult_t %zu\n", sizeof(cublasLtMatmulHeuristicResult_t));
  P(cublasLtMatmulHeuristicResult_t, workspaceSize) P(cublasLtMatmulHeuristicResult_t, state)
  P(cublasLtMatmulHeuristicResult_t, wavesCount)
  P(CUpti_ActivityKernel4, start) P(CUpti_ActivityKernel4, gridX) P(CUpti_ActivityKernel4, staticSharedMemory)
  P(CUpti_ActivityKernel4, correlationId) P(CUpti_ActivityKernel4, name)
  printf("CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL %d\n", (int)CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  return 0;
}
"""
# The CUDA runtime headers want crt/host_defines.h, which only the toolkit ships; these few
# definitions let the declarations parse where the toolkit is absent.
STUB = "\n".join(f"#define {d}" for d in (
    "__host__", "__device__", "__cudart_builtin__", "__device_builtin__", "CUDARTAPI", "CUDART_CB",
    "__dv(v)", "__CUDA_DEPRECATED", "__DEPRECATED__(msg)", "__forceinline__ inline", "__noinline__",
    "__inline_hint__", "__specialization_static", "__annotate__(a)", "__location__(a)",
    "__builtin_align__(a) __attribute__((aligned(a)))", "__align__(n) __attribute__((aligned(n)))",
    "__CUDA_ALIGN__(n) __attribute__((aligned(n)))", "__device_builtin_texture_type__",
    "__device_builtin_surface_type__", "__no_return__ __attribute__((noreturn))"))


def _includes() -> list[Path]:
    dirs = []
    for pkg in ("nvidia.cudnn", "nvidia.cu13", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cuda_cupti"):
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        for d in (spec.submodule_search_locations if spec and spec.submodule_search_locations else []):
            if (Path(d) / "include").is_dir():
                dirs.append(Path(d) / "include")
    dirs += [p for p in (Path("/usr/local/cuda/include"), Path("/usr/local/cuda/extras/CUPTI/include")) if p.is_dir()]
    return dirs


def test_structs_match_the_installed_headers(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    inc = _includes()
    need = ("cudnn.h", "cublasLt.h", "cupti_activity.h", "cuda_runtime_api.h")
    if not cc or not all(any((d / h).is_file() for d in inc) for h in need):
        pytest.skip("no C compiler or no cuDNN/cuBLAS/CUPTI/CUDA runtime headers installed here")
    stub = tmp_path / "stub"
    if not any((d / "crt" / "host_defines.h").is_file() for d in inc):
        (stub / "crt").mkdir(parents=True)
        (stub / "crt" / "host_defines.h").write_text(STUB + "\n")
    (tmp_path / "probe.c").write_text(PROBE)
    flags = [f"-I{d}" for d in [*inc, stub]]
    r = subprocess.run([cc, *flags, "-o", str(tmp_path / "probe"), str(tmp_path / "probe.c")],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.skip(f"the headers did not compile here: {r.stderr[-300:]}")
    out = subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True, timeout=30).stdout
    got = dict(line.rsplit(" ", 1) for line in out.strip().splitlines())
    got = {k: int(v) for k, v in got.items()}
    for d in ("Fwd", "BwdData", "BwdFilter"):
        assert got[f"cudnnConvolution{d}AlgoPerf_t"] == ctypes.sizeof(ConvAlgoPerf)
        assert got[f"cudnnConvolution{d}AlgoPerf_t.memory"] == ConvAlgoPerf.memory.offset
        assert got[f"cudnnConvolution{d}AlgoPerf_t.mathType"] == ConvAlgoPerf.mathType.offset
    data, filt = CONV_OP_ALGOS["conv_bwd_data"], CONV_OP_ALGOS["conv_bwd_filter"]
    for prefix, algos in (("CUDNN_CONVOLUTION_BWD_DATA_ALGO_", data), ("CUDNN_CONVOLUTION_BWD_FILTER_ALGO_", filt)):
        assert got[prefix + "COUNT"] == len(algos)
        for name in ("FFT_TILING", "WINOGRAD_NONFUSED", "ALGO_3"):
            if prefix + name in got:
                assert algos[got[prefix + name]] == name
    assert got["cublasLtMatmulHeuristicResult_t"] == ctypes.sizeof(HeuristicResult)
    for f in ("workspaceSize", "state", "wavesCount"):
        assert got[f"cublasLtMatmulHeuristicResult_t.{f}"] == getattr(HeuristicResult, f).offset
    for f in ("start", "gridX", "staticSharedMemory", "correlationId", "name"):
        assert got[f"CUpti_ActivityKernel4.{f}"] == getattr(ActivityKernelPrefix, f).offset
    assert got["CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"] == 10
