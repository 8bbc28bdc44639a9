"""cudnn_bench.cudnn and libs: struct layout, enums, argument order, status -> exceptions.

Marshalling is checked with a fake library that records every call (tests/fakes.py); where
the real cuDNN wheel is installed, the shim is driven for real without a GPU (docs/reference.md, cuDNN convolution forward:
cudnnGetVersion works and cudnnCreate returns 1001; descriptors and output shapes work too).
"""
from __future__ import annotations

import ctypes

import pytest
from fakes import FakeCudnnLib

from cudnn_bench import cudnn as D
from cudnn_bench import errors as E
from cudnn_bench import libs


def test_algo_perf_struct_matches_the_header():
    # sizeof/offsetof printed by a C probe compiled against cudnn_cnn.h (cuDNN 9.28.0)
    s = D.ConvAlgoPerf  # the forward's, backward-data's and backward-filter's alike
    assert ctypes.sizeof(s) == 48
    assert [getattr(s, f).offset for f in ("algo", "status", "time", "memory", "determinism", "mathType", "reserved")] \
        == [0, 4, 8, 16, 24, 28, 32]


def test_enum_values():
    assert (D.CUDNN_DATA_FLOAT, D.CUDNN_DATA_HALF, D.CUDNN_DATA_BFLOAT16) == (0, 2, 9)
    assert (D.CUDNN_TENSOR_NCHW, D.CUDNN_TENSOR_NHWC, D.CUDNN_CROSS_CORRELATION) == (0, 1, 1)
    assert (D.CUDNN_DEFAULT_MATH, D.CUDNN_TENSOR_OP_MATH, D.CUDNN_FMA_MATH) == (0, 1, 3)
    assert D.MATH_MODES["fma"] == ("float32", 3) and D.MATH_MODES["tf32"] == ("float32", 0)
    assert D.MATH_MODES["bf16"] == ("bfloat16", 1)
    from seer.data.variants import CONV_ALGOS

    assert CONV_ALGOS[4] == "FFT" and CONV_ALGOS[6] == "WINOGRAD" and len(CONV_ALGOS) == D.CUDNN_CONVOLUTION_FWD_ALGO_COUNT
    from seer.data.variants import CONV_BWD_DATA_ALGOS, CONV_BWD_FILTER_ALGOS

    # cudnn_cnn.h: the gradients' enums differ from the forward's and from each other
    assert CONV_BWD_DATA_ALGOS[3] == "FFT_TILING" and CONV_BWD_FILTER_ALGOS[3] == "ALGO_3"
    assert CONV_BWD_FILTER_ALGOS[6] == "FFT_TILING" and CONV_BWD_DATA_ALGOS[5] == CONV_BWD_FILTER_ALGOS[5]
    assert len(CONV_BWD_DATA_ALGOS) == D.CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT == 6
    assert len(CONV_BWD_FILTER_ALGOS) == D.CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT == 7


def test_version_formats():
    assert D.format_version(92800) == "9.28.0" and D.format_version(8907) == "8.9.7"
    assert D.format_cudart(13050) == "13.5" and D.format_cudart(12080) == "12.8"


def test_descriptor_argument_order():
    lib = FakeCudnnLib()
    dnn = D.Cudnn(lib)
    with D.ConvProblem(dnn, batch=8, c_in=64, h_in=30, w_in=40, c_out=32, kh=3, kw=5, stride_h=2, stride_w=1,
                       pad_h=1, pad_w=2, dil_h=1, dil_w=2, groups=4, math="fma") as p:
        assert p.out == (8, 32, 15, 36)  # h: (30+2-3)//2+1, w: (40+4-9)//1+1
    tensors = lib.named("cudnnSetTensor4dDescriptor")
    # (desc, format, dataType, n, c, h, w)
    assert tensors[0][1:] == (D.CUDNN_TENSOR_NCHW, D.CUDNN_DATA_FLOAT, 8, 64, 30, 40)
    assert tensors[1][1:] == (D.CUDNN_TENSOR_NCHW, D.CUDNN_DATA_FLOAT, 8, 32, 15, 36)
    # (desc, dataType, format, k, c/groups, h, w): data type BEFORE format
    (filt,) = lib.named("cudnnSetFilter4dDescriptor")
    assert filt[1:] == (D.CUDNN_DATA_FLOAT, D.CUDNN_TENSOR_NCHW, 32, 16, 3, 5)
    # (desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType)
    (conv,) = lib.named("cudnnSetConvolution2dDescriptor")
    assert conv[1:] == (1, 2, 2, 1, 1, 2, D.CUDNN_CROSS_CORRELATION, D.CUDNN_DATA_FLOAT)
    assert lib.named("cudnnSetConvolutionMathType")[0][1] == D.CUDNN_FMA_MATH
    assert lib.named("cudnnSetConvolutionGroupCount")[0][1] == 4
    assert not lib.tensors and not lib.filters and not lib.convs  # all destroyed


def test_half_precision_descriptors_and_no_group_call_for_one_group():
    lib = FakeCudnnLib()
    with D.ConvProblem(D.Cudnn(lib), batch=1, c_in=3, h_in=8, w_in=8, c_out=4, kh=1, kw=1, math="fp16",
                       layout="NHWC"):
        pass
    assert lib.named("cudnnSetTensor4dDescriptor")[0][1:3] == (D.CUDNN_TENSOR_NHWC, D.CUDNN_DATA_HALF)
    assert lib.named("cudnnSetFilter4dDescriptor")[0][1:3] == (D.CUDNN_DATA_HALF, D.CUDNN_TENSOR_NHWC)
    assert lib.named("cudnnSetConvolution2dDescriptor")[0][-1] == D.CUDNN_DATA_FLOAT  # FP32 accumulation
    assert lib.named("cudnnSetConvolutionMathType")[0][1] == D.CUDNN_TENSOR_OP_MATH
    assert lib.named("cudnnSetConvolutionGroupCount") == []


def test_forward_marshalling_and_heuristic():
    lib = FakeCudnnLib()
    dnn = D.Cudnn(lib)
    h = dnn.create_handle()
    dnn.set_stream(h, 0x5000)
    assert lib.named("cudnnSetStream")[0] == (h.value, 0x5000)
    with D.ConvProblem(dnn, batch=2, c_in=8, h_in=16, w_in=16, c_out=8, kh=3, kw=3, pad_h=1, pad_w=1) as p:
        heur = dnn.heuristic(h, p.x, p.w, p.conv, p.y)
        assert len(heur) == 8 and {a.algo for a in heur} == set(range(8))
        assert heur[-1].status != 0 and heur[0].status == 0  # runnable ones first in the fake
        ws = dnn.workspace_size(h, p.x, p.w, p.conv, p.y, 1)
        dnn.convolve("conv_fwd", h, (p.x, p.w, p.y), (0x100, 0x200, 0x400), p.conv, 1, 0x300, ws)
        (call,) = lib.named("cudnnConvolutionForward")
        # (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, size, beta, yDesc, y)
        assert call == (h.value, 1.0, p.x.value, 0x100, p.w.value, 0x200, p.conv.value, 1, 0x300, ws, 0.0,
                        p.y.value, 0x400)


@pytest.mark.parametrize("op,fn,order", [
    # cudnn_cnn.h: backward-data takes (w, dy) and writes dx; backward-filter takes (x, dy), writes dw
    ("conv_bwd_data", "BackwardData", ("w", "y", "x")),
    ("conv_bwd_filter", "BackwardFilter", ("x", "y", "w")),
])
def test_gradient_marshalling_and_heuristic(op, fn, order):
    lib = FakeCudnnLib()
    dnn = D.Cudnn(lib)
    h = dnn.create_handle()
    with D.ConvProblem(dnn, batch=2, c_in=8, h_in=16, w_in=16, c_out=8, kh=3, kw=3, pad_h=1, pad_w=1) as p:
        desc = {"x": p.x.value, "w": p.w.value, "y": p.y.value}
        ptr = {"x": 0x100, "w": 0x200, "y": 0x400}
        heur = dnn.heuristic(h, p.x, p.w, p.conv, p.y, op=op)
        count = D.DIRECTIONS[op].count
        assert len(heur) == count and {a.algo for a in heur} == set(range(count))
        assert heur[0].status == 0 and heur[0].op == op and heur[0].name in ("ALGO_0", "ALGO_1", "ALGO_3")
        a, b, out = order
        # (handle, aDesc, bDesc, convDesc, outDesc, requested)
        assert lib.named(f"cudnnGetConvolution{fn}Algorithm_v7") == [
            (h.value, desc[a], desc[b], p.conv.value, desc[out], count)]
        ws = dnn.workspace_size(h, p.x, p.w, p.conv, p.y, 1, op=op)
        dnn.convolve(op, h, (p.x, p.w, p.y), (0x100, 0x200, 0x400), p.conv, 1, 0x300, ws)
        (call,) = lib.named(f"cudnnConvolution{fn}")
        # (handle, alpha, aDesc, a, bDesc, b, convDesc, algo, workSpace, size, beta, outDesc, out)
        assert call == (h.value, 1.0, desc[a], ptr[a], desc[b], ptr[b], p.conv.value, 1, 0x300, ws, 0.0,
                        desc[out], ptr[out])


@pytest.mark.parametrize("status,cls,category", [
    (3000, E.CudnnNotSupported, "not_supported"), (3002, E.CudnnNotSupported, "not_supported"),
    (2000, E.CudnnBadParam, "failed"), (4004, E.CudnnAllocFailed, "out_of_memory"),
    (4000, E.CudnnInternalError, "failed"), (5002, E.CudnnExecutionFailed, "failed"),
    (1001, E.CudnnNotInitialized, "failed")])
def test_status_codes_become_named_exceptions(status, cls, category):
    lib = FakeCudnnLib()
    lib.last_error = b"what cuDNN said"
    exc = D.Cudnn(lib).error(status, "cudnnSomething")
    assert type(exc) is cls and E.status_of(exc) == category and exc.status == status
    assert "what cuDNN said" in str(exc) and "cudnnSomething" in str(exc) and str(status) in str(exc)


def test_bad_shape_raises_with_cudnns_message():
    dnn = D.Cudnn(FakeCudnnLib())
    with pytest.raises(E.CudnnBadParam, match=r"n <= 0"):
        dnn.tensor_desc(0, 3, 4, 4)


def test_missing_sublibraries_are_an_error_not_an_abort(tmp_path, monkeypatch):
    """The shim aborts the process when libcudnn_graph/ops/cnn are missing: never load it then."""
    (tmp_path / "libcudnn.so.9").write_bytes(b"not a library")
    monkeypatch.setattr(libs, "candidates", lambda kind: [libs.Candidate(str(tmp_path / "libcudnn.so.9"), "env")])
    monkeypatch.setattr(libs, "_LOADED", {})
    with pytest.raises(E.LibraryNotFound, match="libcudnn_graph.so.9"):
        libs.load_cudnn()


def test_no_cudnn_is_one_sentence(monkeypatch):
    monkeypatch.setattr(libs, "candidates", lambda kind: [])
    monkeypatch.setattr(libs, "_LOADED", {})
    with pytest.raises(E.LibraryNotFound) as info:
        libs.load_cudnn()
    assert "nvidia-cudnn-cu12" in str(info.value) and "\n" not in str(info.value)


def test_wheel_candidates_come_first(monkeypatch, tmp_path):
    monkeypatch.delenv("SEER_CUDNN_LIB", raising=False)
    monkeypatch.setattr(libs, "_wheel_dirs", lambda pkg: [tmp_path / pkg.replace(".", "_")])
    c = libs.candidates("cublaslt")
    assert c[0].origin == "wheel" and c[0].path.endswith("nvidia_cu13/lib/libcublasLt.so.13")
    assert c[1].path.endswith("nvidia_cublas/lib/libcublasLt.so.12")
    monkeypatch.setenv("SEER_CUDNN_LIB", "/x/libcudnn.so.9")
    assert libs.candidates("cudnn")[0] == libs.Candidate("/x/libcudnn.so.9", "env")


# ---------------------------------------------------------------- the real library, where installed
def _real_cudnn():
    try:
        return D.Cudnn.load()
    except E.LibraryNotFound as exc:
        pytest.skip(f"cuDNN wheel not installed here ({exc})")


def _has_gpu() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_real_cudnn_shim_without_a_gpu():
    dnn = _real_cudnn()
    assert dnn.version() >= 90000
    with D.ConvProblem(dnn, batch=2, c_in=6, h_in=10, w_in=12, c_out=8, kh=3, kw=5, stride_h=2,
                       pad_h=1, pad_w=2, groups=2) as p:
        assert p.out == (2, 8, 5, 12)  # the real cuDNN agrees with the argument order
    with pytest.raises(E.CudnnBadParam, match="n <= 0"):
        dnn.tensor_desc(0, 3, 4, 5)
    if not _has_gpu():
        with pytest.raises(E.CudnnNotInitialized) as info:
            dnn.create_handle()
        assert info.value.status == 1001
