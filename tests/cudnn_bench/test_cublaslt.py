"""cudnn_bench.cublaslt: struct layout, enums, descriptor marshalling, heuristic results."""
from __future__ import annotations

import ctypes

import pytest
from fakes import FakeLtLib

from cudnn_bench import cublaslt as L
from cudnn_bench import errors as E


def test_structs_match_the_header():
    # sizeof/offsetof printed by a C probe compiled against cublasLt.h (cuBLAS 13.10)
    assert ctypes.sizeof(L.MatmulAlgo) == 64
    r = L.HeuristicResult
    assert ctypes.sizeof(r) == 96
    assert (r.algo.offset, r.workspaceSize.offset, r.state.offset, r.wavesCount.offset, r.reserved.offset) \
        == (0, 64, 72, 76, 80)


def test_enum_values():
    assert (L.CUBLAS_COMPUTE_32F, L.CUBLAS_COMPUTE_32F_PEDANTIC, L.CUBLAS_COMPUTE_32F_FAST_TF32) == (68, 69, 77)
    assert (L.CUDA_R_32F, L.CUDA_R_16F, L.CUDA_R_16BF) == (0, 2, 14)
    assert L.MATH_MODES["fma"] == ("float32", 69)  # FP32 without TF32
    assert [a[1] for a in L.ALGO_CONFIG] == list(range(9))
    assert L.format_version(131000) == "13.10.0" and L.format_version(120903) == "12.9.3"


def test_gemm_problem_marshalling():
    lib = FakeLtLib()
    lt = L.CublasLt(lib)
    with L.GemmProblem(lt, batch=4, m=128, n=64, k=32, trans="tn", math="fma", max_workspace=1 << 28):
        pass
    assert lib.named("cublasLtMatmulDescCreate")[0][1:] == (L.CUBLAS_COMPUTE_32F_PEDANTIC, L.CUDA_R_32F)
    attrs = lib.named("cublasLtMatmulDescSetAttribute")
    assert [(a[1], a[2], a[3]) for a in attrs] == [(L.CUBLASLT_MATMUL_DESC_TRANSA, L.CUBLAS_OP_T, 4),
                                                 (L.CUBLASLT_MATMUL_DESC_TRANSB, L.CUBLAS_OP_N, 4)]
    # column-major stored shapes for C[m,n] = A^T B: A is k x m, B is k x n, C is m x n; ld = rows
    layouts = [a[1:] for a in lib.named("cublasLtMatrixLayoutCreate")]
    assert layouts == [(L.CUDA_R_32F, 32, 128, 32), (L.CUDA_R_32F, 32, 64, 32), (L.CUDA_R_32F, 128, 64, 128)]
    batch = [a[1:] for a in lib.named("cublasLtMatrixLayoutSetAttribute")]
    assert batch[:2] == [(L.CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4, 4),
                         (L.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 32 * 128, 8)]
    assert lib.named("cublasLtMatmulPreferenceSetAttribute")[0][1:] == \
        (L.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1 << 28, 8)


def test_unbatched_gemm_sets_no_batch_attributes_and_half_types():
    lib = FakeLtLib()
    with L.GemmProblem(L.CublasLt(lib), batch=1, m=16, n=16, k=16, trans="nt", math="bf16"):
        pass
    assert lib.named("cublasLtMatrixLayoutSetAttribute") == []
    assert all(a[1] == L.CUDA_R_16BF for a in lib.named("cublasLtMatrixLayoutCreate"))
    assert lib.named("cublasLtMatmulDescCreate")[0][1] == L.CUBLAS_COMPUTE_32F


def test_heuristics_ranks_configs_and_matmul():
    lib = FakeLtLib(n_algos=3)
    lt = L.CublasLt(lib)
    h = lt.create_handle()
    with L.GemmProblem(lt, batch=1, m=256, n=128, k=64) as g:
        algos = g.heuristics(h, 8)
        assert [a.rank for a in algos] == [0, 1, 2]
        assert [a.name for a in algos] == ["lt:20", "lt:21", "lt:22"]
        assert algos[1].config == {"id": 21, "tile": 11, "splitk": 1, "reduction": 0, "swizzle": 0,
                                   "custom": 0, "stages": 5, "inner_shape": 0, "cluster_shape": 0}
        assert algos[1].workspace == 1 << 20 and algos[2].waves == pytest.approx(2.5)
        assert lib.named("cublasLtMatmulAlgoGetHeuristic")[0][-1] == 8
        lt.matmul(h, g.op, g.a, 0x10, g.b, 0x20, g.c, 0x30, algos[1].algo, 0x40, algos[1].workspace, 0x5000)
        (call,) = lib.named("cublasLtMatmul")
        # (handle, op, alpha, A, Adesc, B, Bdesc, C, Cdesc, D, Ddesc, algo id, ws, size, stream); D = C
        assert call == (h.value, g.op.value, 1.0, 0x10, g.a.value, 0x20, g.b.value, 0x30, g.c.value, 0x30,
                        g.c.value, 21, 0x40, 1 << 20, 0x5000)


def test_results_with_a_failed_state_are_dropped():
    lib = FakeLtLib(n_algos=3)
    orig = lib.cublasLtMatmulAlgoGetHeuristic

    def heur(*args):
        st = orig(*args)
        args[8][1].state = 15  # the second result is not usable
        return st

    lib.cublasLtMatmulAlgoGetHeuristic = heur
    lt = L.CublasLt(lib)
    with L.GemmProblem(lt, batch=1, m=8, n=8, k=8) as g:
        assert [a.rank for a in g.heuristics(lt.create_handle(), 3)] == [0, 2]


@pytest.mark.parametrize("status,cls,category", [(15, E.CublasNotSupported, "not_supported"),
                                                 (3, E.CublasAllocFailed, "out_of_memory"),
                                                 (7, E.CublasInvalidValue, "failed"),
                                                 (13, E.CublasExecutionFailed, "failed"),
                                                 (1, E.CublasNotInitialized, "failed")])
def test_status_codes(status, cls, category):
    exc = L.CublasLt(FakeLtLib()).error(status, "cublasLtMatmul")
    assert type(exc) is cls and E.status_of(exc) == category
    assert L.STATUS_NAMES[status] in str(exc) and "fake status text" in str(exc)


def test_real_cublaslt_without_a_gpu():
    try:
        lt = L.CublasLt.load()
    except E.LibraryNotFound as exc:
        pytest.skip(f"cuBLAS wheel not installed here ({exc})")
    assert lt.version() >= 120000
    with L.GemmProblem(lt, batch=3, m=64, n=32, k=16, trans="tn"):
        pass  # descriptors are host objects: the real library accepts our marshalling
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        with pytest.raises(E.CublasNotInitialized):
            lt.create_handle()
