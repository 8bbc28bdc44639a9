"""A simulated GPU for the CPU tests: a backend, cuDNN and cuBLASLt library objects, a tracer.

The fakes record every library call with its arguments (to check marshalling: argument order,
enum values, struct contents) and simulate time: a call advances the backend's clock by a
duration derived from the configuration, so events, medians, kernel records and the whole
collection loop run end to end without a GPU. Nothing here is used on a real GPU.

Tests import it as `fakes` (pytest puts tests/ on the path); `CUDNN_BENCH_SIMULATE=1` (or
`=tests.fakes:fake_env`) makes cudnn_bench.env.open_env use `fake_env` from the repository root,
to rehearse the one-shot call on a CPU.
"""

from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass, replace
from typing import ClassVar

from cudnn_bench.capture import Captured
from cudnn_bench.cublaslt import STATUS_NAMES as CUBLAS_STATUS_NAMES
from cudnn_bench.cublaslt import CublasLt
from cudnn_bench.cudnn import STATUS_NAMES as CUDNN_STATUS_NAMES
from cudnn_bench.cudnn import Cudnn
from cudnn_bench.cupti import KernelRecord
from cudnn_bench.env import Env
from cudnn_bench.errors import DeviceOutOfMemory
from cudnn_bench.runtime import Backend, BufferPool, DeviceInfo
from cudnn_bench.timing import EventPool, Flusher


# ====================================================================== backend
@dataclass
class FakeEvent:
    t: float = 0.0


class FakeBackend(Backend):
    name = "fake"

    def __init__(self, device: DeviceInfo | None = None, mem_bytes: int = 80 << 30):
        self.device = device or DeviceInfo(
            0,
            "NVIDIA H100 80GB HBM3",
            "9.0",
            132,
            50 << 20,
            1980.0,
            mem_bytes,
            "580.159.04",
            "13.0",
            "00000000:01:00.0",
        )
        self.clock_ms = 0.0
        self.allocs: dict[int, int] = {}
        self.memsets: list[tuple[int, int, int, int]] = []
        self.uploads = 0
        self._next = itertools.count(0x7F0000000000, 1 << 32)
        self.mem_bytes = mem_bytes
        self.synced = 0

    def alloc(self, nbytes: int) -> int:
        if sum(self.allocs.values()) + nbytes > self.mem_bytes:
            raise DeviceOutOfMemory(f"fake cudaMalloc of {nbytes} bytes: out of memory")
        p = next(self._next)
        self.allocs[p] = int(nbytes)
        return p

    def free(self, ptr: int) -> None:
        self.allocs.pop(ptr, None)

    def upload(self, ptr: int, host) -> None:
        self.uploads += 1

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: int) -> None:
        self.memsets.append((ptr, value, nbytes, stream))
        self.clock_ms += 0.02

    def new_stream(self) -> int:
        return 0x5000

    def new_event(self):
        return FakeEvent()

    def record(self, event, stream: int) -> None:
        event.t = self.clock_ms

    def sync_event(self, event) -> None:
        self.synced += 1

    def elapsed_ms(self, start, end) -> float:
        return end.t - start.t

    def synchronize(self) -> None:
        self.synced += 1

    def mem_info(self) -> tuple[int, int]:
        return self.mem_bytes - sum(self.allocs.values()), self.mem_bytes

    def device_info(self) -> DeviceInfo:
        return self.device


class FakeTracer:
    """Stands in for CuptiTracer: library fakes append kernel records, take() returns them.
    `nameless` strips the names (a CUPTI that gives none); `drop_every` counts one dropped
    record on every n-th take (a full buffer)."""

    path = "fake-cupti"
    version = 130001

    def __init__(self, nameless: bool = False, drop_every: int = 0):
        self.records: list[KernelRecord] = []
        self.nameless, self.drop_every = nameless, drop_every
        self.dropped, self._takes = 0, 0

    def take(self) -> list[KernelRecord]:
        out, self.records = sorted(self.records, key=lambda r: (r.start, r.correlation)), []  # as CUPTI's
        self._takes += 1
        if self.drop_every and self._takes % self.drop_every == 0:
            self.dropped += 1
        if self.nameless:
            out = [replace(r, name="") for r in out]
        return out

    def close(self) -> None:
        pass


class FakeCapture:
    """Stands in for capture.GraphCapture: the call runs on the fake cuDNN with a tracer of its
    own, whose kernel records are the graph's kernel nodes (nothing else sees them)."""

    def __init__(self, lib: FakeCudnnLib):
        self.lib = lib
        self.captured = 0

    def kernels(self, stream: int, call) -> list[Captured]:
        saved, self.lib.tracer = self.lib.tracer, FakeTracer()
        try:
            call()
            recs = self.lib.tracer.take()
        finally:
            self.lib.tracer = saved
        self.captured += 1
        return [Captured(r.name, r.grid, r.block) for r in recs]


class Recorder:
    """Records (name, args) of every call; values of ctypes scalars are unwrapped."""

    def __init__(self):
        self.calls: list[tuple[str, tuple]] = []
        self._ids = itertools.count(1000)

    def log(self, name: str, args: tuple) -> None:
        self.calls.append((name, args))

    def named(self, name: str) -> list[tuple]:
        return [a for n, a in self.calls if n == name]

    def new_handle(self, out) -> int:
        h = next(self._ids)
        out.contents.value = h
        return h


def _v(x):
    return getattr(x, "value", x)


# ====================================================================== cuDNN
ALGO_KERNELS = {  # algorithm -> [(kernel name, share of the call's time)]
    0: [("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int)", 1.0)],
    1: [
        ("void computeOffsetsKernel<false, false>(fft2d_offsets)", 0.05),
        (
            "sm90_xmma_fprop_implicit_gemm_indexed_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize64x64x8_stage3_warpsize1x4x1_g1_ffma",
            0.95,
        ),
    ],
    2: [
        ("void im2col4d_kernel<float, int>(im2col4d_params, float const*, float*)", 0.3),
        ("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma", 0.7),
    ],
    4: [
        ("void flip_filter<float, float>(float*, float const*, int, int, int, int)", 0.05),
        ("void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*)", 0.35),
        ("void gemv2T_kernel_val<int, int, float2, float2, float2, 128, 16, 4, 4, false>(float2)", 0.3),
        ("void fft2d_c2r_32x32<float, false, false, 0u, false, false>(float*, float2 const*)", 0.3),
    ],
    5: [
        ("void fft2d_r2c_32x32<float, false, 1u, true>(float2*, float const*)", 0.4),
        ("void gemv2T_kernel_val<int, int, float2, float2, float2, 128, 16, 4, 4, false>(float2)", 0.3),
        ("void fft2d_c2r_32x32<float, false, false, 1u, false, false>(float*, float2 const*)", 0.3),
    ],
    7: [
        ("void winograd_nonfused::winogradForwardData4x4<float, float>(Data)", 0.2),
        ("void winograd_nonfused::winogradForwardFilter4x4<float, float>(Filter)", 0.1),
        ("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma", 0.5),
        ("void winograd_nonfused::winogradForwardOutput4x4<float, float>(Output)", 0.2),
    ],
}
ALGO_SPEED = {0: 3.0, 1: 1.0, 2: 1.8, 4: 2.2, 5: 2.4, 6: 1.3, 7: 1.4}
# the gradients: (direction, algo) -> kernels, and their speed against the forward's ALGO_1
BWD_KERNELS = {
    ("BackwardData", 0): [("void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int)", 1.0)],
    ("BackwardData", 1): [
        ("sm90_xmma_dgrad_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x64x8_stage3_ffma", 1.0)
    ],
    ("BackwardFilter", 0): [("void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int)", 1.0)],
    ("BackwardFilter", 1): [
        ("void cudnn::detail::wgrad_alg1_engine<float, float, 64, 8>(int, int)", 0.8),
        ("void cudnn::ops::scalePackedTensor_kernel<float, float>(long, float*, float)", 0.2),
    ],
}
BWD_SPEED = {0: 2.5, 1: 1.6, 2: 2.6, 3: 2.2, 4: 1.8, 5: 1.9, 6: 2.8}


class FakeCudnnLib(Recorder):
    """The cuDNN functions the bindings call, with cuDNN 9's status codes and shape rules."""

    def __init__(
        self,
        backend: FakeBackend | None = None,
        tracer: FakeTracer | None = None,
        tflops: float = 30.0,
        fail: dict | None = None,
        host_gap_ms: float = 0.0,
        chunks: dict | None = None,
        setup: bool = False,
        overlap: bool = False,
    ):
        super().__init__()
        self.backend, self.tracer, self.tflops = backend, tracer, tflops
        self.host_gap_ms = host_gap_ms  # host enqueue time before a call's first kernel starts
        # as cuDNN on the H100: some algorithms loop over chunks of the batch (algo -> chunks,
        # each launching the algorithm's kernels), a first call may add a one-off set-up
        # kernel, and a library may run a call's first two kernels concurrently on a stream of
        # its own, which start first varying from call to call
        self.chunks, self.setup, self.overlap = chunks or {}, setup, overlap
        self._set_up: set[tuple[int, str]] = set()
        self._correlation = itertools.count(1)
        self._forwards = 0
        self.tensors: dict[int, tuple] = {}
        self.filters: dict[int, tuple] = {}
        self.convs: dict[int, dict] = {}
        self.fail = fail or {}  # algo -> status the forward call returns
        self.last_error = b""

    # errors
    def cudnnGetVersion(self):
        return 92800

    def cudnnGetCudartVersion(self):
        return 13050

    def cudnnGetErrorString(self, status):
        return CUDNN_STATUS_NAMES.get(int(status), "CUDNN_STATUS_UNKNOWN").encode()

    def cudnnGetLastErrorString(self, buf, size):
        ctypes.memmove(buf, self.last_error + b"\0", min(len(self.last_error) + 1, int(size)))

    def _err(self, status: int, text: str) -> int:
        self.last_error = text.encode()
        return status

    # handle and descriptors
    def cudnnCreate(self, out):
        self.log("cudnnCreate", ())
        self.new_handle(out)
        return 0

    def cudnnDestroy(self, h):
        self.log("cudnnDestroy", (_v(h),))
        return 0

    def cudnnSetStream(self, h, s):
        self.log("cudnnSetStream", (_v(h), _v(s)))
        return 0

    def cudnnCreateTensorDescriptor(self, out):
        self.new_handle(out)
        return 0

    def cudnnSetTensor4dDescriptor(self, d, fmt, dtype, n, c, h, w):
        self.log("cudnnSetTensor4dDescriptor", (_v(d), fmt, dtype, n, c, h, w))
        if min(n, c, h, w) <= 0:
            return self._err(2000, "(n <= 0) || (c <= 0) || (h <= 0) || (w <= 0)")
        self.tensors[_v(d)] = (n, c, h, w)
        return 0

    def cudnnDestroyTensorDescriptor(self, d):
        self.tensors.pop(_v(d), None)
        return 0

    def cudnnCreateFilterDescriptor(self, out):
        self.new_handle(out)
        return 0

    def cudnnSetFilter4dDescriptor(self, d, dtype, fmt, k, c, h, w):
        self.log("cudnnSetFilter4dDescriptor", (_v(d), dtype, fmt, k, c, h, w))
        self.filters[_v(d)] = (k, c, h, w)
        return 0

    def cudnnDestroyFilterDescriptor(self, d):
        self.filters.pop(_v(d), None)
        return 0

    def cudnnCreateConvolutionDescriptor(self, out):
        self.convs[self.new_handle(out)] = {"groups": 1}
        return 0

    def cudnnSetConvolution2dDescriptor(self, d, ph, pw, u, v, dh, dw, mode, compute):
        self.log("cudnnSetConvolution2dDescriptor", (_v(d), ph, pw, u, v, dh, dw, mode, compute))
        self.convs[_v(d)].update(pad=(ph, pw), stride=(u, v), dil=(dh, dw))
        return 0

    def cudnnSetConvolutionMathType(self, d, m):
        self.log("cudnnSetConvolutionMathType", (_v(d), m))
        self.convs[_v(d)]["math"] = m
        return 0

    def cudnnSetConvolutionGroupCount(self, d, g):
        self.log("cudnnSetConvolutionGroupCount", (_v(d), g))
        self.convs[_v(d)]["groups"] = g
        return 0

    def cudnnDestroyConvolutionDescriptor(self, d):
        self.convs.pop(_v(d), None)
        return 0

    def cudnnGetConvolution2dForwardOutputDim(self, conv, x, w, n, c, h, ww):
        cv, xs, fs = self.convs[_v(conv)], self.tensors[_v(x)], self.filters[_v(w)]
        oh = (xs[2] + 2 * cv["pad"][0] - ((fs[2] - 1) * cv["dil"][0] + 1)) // cv["stride"][0] + 1
        ow = (xs[3] + 2 * cv["pad"][1] - ((fs[3] - 1) * cv["dil"][1] + 1)) // cv["stride"][1] + 1
        if oh <= 0 or ow <= 0:
            return self._err(2000, "output dimension <= 0")
        n.contents.value, c.contents.value, h.contents.value, ww.contents.value = xs[0], fs[0], oh, ow
        return 0

    # the problem behind a set of descriptors
    def _problem(self, x, w, conv):
        xs, fs, cv = self.tensors[_v(x)], self.filters[_v(w)], self.convs[_v(conv)]
        return xs, fs, cv

    def _supported(self, algo, x, w, conv) -> tuple[int, str]:
        _, fs, cv = self._problem(x, w, conv)
        unit = cv["stride"] == (1, 1) and cv["dil"] == (1, 1)
        if algo == 3:
            return 3000, "CUDNN_CONVOLUTION_FWD_ALGO_DIRECT is not implemented"
        if algo in (4, 5) and (not unit or cv["groups"] != 1):
            return 3000, "FFT needs unit stride"
        if algo == 6 and (fs[2:] != (3, 3) or not unit):
            return 3000, "fused Winograd needs 3x3 filters and unit stride"
        if algo == 7 and (fs[2] != fs[3] or fs[2] not in (3, 5) or not unit):
            return 3000, "non-fused Winograd needs 3x3 or 5x5 filters"
        return 0, ""

    def _time_ms(self, algo, x, w, conv) -> float:
        xs, fs, cv = self._problem(x, w, conv)
        oh = (xs[2] + 2 * cv["pad"][0] - fs[2]) // cv["stride"][0] + 1
        ow = (xs[3] + 2 * cv["pad"][1] - fs[3]) // cv["stride"][1] + 1
        flops = 2.0 * xs[0] * fs[0] * max(oh, 1) * max(ow, 1) * fs[1] * fs[2] * fs[3]
        return ALGO_SPEED.get(algo, 1.0) * flops / (self.tflops * 1e9) + 0.005

    # the gradients: descriptors in their direction's order, the forward's problem behind them
    def _bwd_supported(self, infix: str, algo: int, x, w, conv) -> tuple[int, str]:
        _, fs, cv = self._problem(x, w, conv)
        unit = cv["stride"] == (1, 1) and cv["dil"] == (1, 1)
        fft = (2, 3) if infix == "BackwardData" else (2, 6)
        if algo in fft and (not unit or cv["groups"] != 1):
            return 3000, "FFT needs unit stride"
        if algo == 4 and (infix == "BackwardFilter" or fs[2:] != (3, 3) or not unit):
            return 3000, "fused Winograd: 3x3 filters, unit stride, not of the filter gradient"
        if algo == 5 and (fs[2] != fs[3] or fs[2] not in (3, 5) or not unit):
            return 3000, "non-fused Winograd needs 3x3 or 5x5 filters"
        return 0, ""

    def _bwd_list(self, fn: str, infix: str, x, w, conv, req, got, arr, raw: tuple) -> int:
        self.log(fn, tuple(map(_v, raw)))  # the call's (handle, desc, desc, conv, desc, requested)
        count = 6 if infix == "BackwardData" else 7
        ok = lambda a: self._bwd_supported(infix, a, x, w, conv)[0] == 0
        order = sorted(range(count), key=lambda a: (not ok(a), BWD_SPEED[a]))
        for i, a in enumerate(order[:req]):
            arr[i].algo, arr[i].status = a, self._bwd_supported(infix, a, x, w, conv)[0]
            arr[i].time, arr[i].memory, arr[i].mathType = -1.0, 0, self.convs[_v(conv)].get("math", 0)
        got.contents.value = min(count, req)
        return 0

    def _bwd_ws(self, fn: str, infix: str, x, w, conv, algo, out) -> int:
        self.log(fn, (_v(x), _v(w), _v(conv), algo))
        st, text = self._bwd_supported(infix, algo, x, w, conv)
        if st:
            return self._err(st, text)
        out.contents.value = 0 if algo in (0, 1, 3) else 1 << 24
        return 0

    def _bwd_run(self, fn: str, infix: str, x, w, conv, algo, args: tuple) -> int:
        self._log_call(fn, args)
        st, text = self._bwd_supported(infix, algo, x, w, conv)
        if st:
            return self._err(st, text)
        t = BWD_SPEED[algo] / ALGO_SPEED[1] * self._time_ms(1, x, w, conv)
        self._run(algo, x, w, conv, t, BWD_KERNELS.get((infix, algo), [(f"kernel_{infix}_algo{algo}", 1.0)]))
        return 0

    # backward-data: (w, dy, conv, dx); backward-filter: (x, dy, conv, dw)
    def cudnnGetConvolutionBackwardDataAlgorithm_v7(self, h, w, dy, conv, dx, req, got, arr):
        return self._bwd_list("cudnnGetConvolutionBackwardDataAlgorithm_v7", "BackwardData", dx, w, conv, req, got, arr,
                              (h, w, dy, conv, dx, req))

    def cudnnGetConvolutionBackwardFilterAlgorithm_v7(self, h, x, dy, conv, dw, req, got, arr):
        return self._bwd_list("cudnnGetConvolutionBackwardFilterAlgorithm_v7", "BackwardFilter", x, dw, conv, req, got,
                              arr, (h, x, dy, conv, dw, req))

    def cudnnGetConvolutionBackwardDataWorkspaceSize(self, h, w, dy, conv, dx, algo, out):
        return self._bwd_ws("cudnnGetConvolutionBackwardDataWorkspaceSize", "BackwardData", dx, w, conv, algo, out)

    def cudnnGetConvolutionBackwardFilterWorkspaceSize(self, h, x, dy, conv, dw, algo, out):
        return self._bwd_ws("cudnnGetConvolutionBackwardFilterWorkspaceSize", "BackwardFilter", x, dw, conv, algo, out)

    def cudnnConvolutionBackwardData(self, *args):  # (h, alpha, wd, w, dyd, dy, conv, algo, ws, size, beta, dxd, dx)
        return self._bwd_run("cudnnConvolutionBackwardData", "BackwardData", args[11], args[2], args[6], args[7], args)

    def cudnnConvolutionBackwardFilter(self, *args):  # (h, alpha, xd, x, dyd, dy, conv, algo, ws, size, beta, dwd, dw)
        return self._bwd_run("cudnnConvolutionBackwardFilter", "BackwardFilter", args[2], args[11], args[6], args[7],
                             args)

    def cudnnGetConvolutionForwardAlgorithm_v7(self, h, x, w, conv, y, req, got, arr):
        self.log("cudnnGetConvolutionForwardAlgorithm_v7", (_v(h), _v(x), _v(w), _v(conv), _v(y), req))
        order = sorted(range(8), key=lambda a: (self._supported(a, x, w, conv)[0] != 0, self._time_ms(a, x, w, conv)))
        for i, a in enumerate(order[:req]):
            arr[i].algo, arr[i].status = a, self._supported(a, x, w, conv)[0]
            arr[i].time, arr[i].memory, arr[i].mathType = -1.0, 0, self.convs[_v(conv)].get("math", 0)
        got.contents.value = min(8, req)
        return 0

    def cudnnGetConvolutionForwardWorkspaceSize(self, h, x, w, conv, y, algo, out):
        self.log("cudnnGetConvolutionForwardWorkspaceSize", (_v(h), _v(x), _v(w), _v(conv), _v(y), algo))
        st, text = self._supported(algo, x, w, conv)
        if st:
            return self._err(st, text)
        xs, fs, _ = self._problem(x, w, conv)
        out.contents.value = {
            0: 0,
            1: 4096,
            2: xs[0] * fs[1] * fs[2] * fs[3] * xs[2] * xs[3] * 4,
            4: 1 << 26,
            5: 1 << 24,
            6: 1 << 20,
            7: 1 << 25,
        }[algo]
        return 0

    def cudnnConvolutionForward(self, *args):  # (h, alpha, xd, x, wd, w, conv, algo, ws, size, beta, yd, y)
        self._log_call("cudnnConvolutionForward", args)
        xd, wd, conv, algo = args[2], args[4], args[6], args[7]
        if algo in self.fail:
            return self._err(self.fail[algo], "injected failure")
        self._run(algo, xd, wd, conv, self._time_ms(algo, xd, wd, conv))
        return 0

    def _log_call(self, fn: str, args: tuple) -> None:
        """A call's (handle, alpha, desc, ptr, desc, ptr, conv, algo, ws, size, beta, desc, ptr),
        alpha and beta read from their host pointers."""
        a = ctypes.cast(args[1], ctypes.POINTER(ctypes.c_float)).contents.value
        b = ctypes.cast(args[10], ctypes.POINTER(ctypes.c_float)).contents.value
        self.log(fn, (_v(args[0]), a, *map(_v, args[2:7]), args[7], _v(args[8]), args[9], b, *map(_v, args[11:])))

    def _run(self, algo: int, xd, wd, conv, t_ms: float, kernels: list | None = None) -> None:
        """The call on the fake GPU: the host gap, then t_ms of kernels on the clock and the tracer."""
        if self.backend is not None:
            self.backend.clock_ms += self.host_gap_ms
            start = self.backend.clock_ms
            self.backend.clock_ms += t_ms
            if self.tracer is not None:
                self._trace(algo, xd, wd, conv, start, t_ms, kernels)

    def _trace(self, algo: int, xd, wd, conv, start_ms: float, t_ms: float, kernels: list | None = None) -> None:
        """The kernel records of one call taking t_ms from start_ms (a forward's, or `kernels`)."""
        problem = self._problem(xd, wd, conv)
        xs = problem[0]
        n = self.chunks.get(algo, 1) if kernels is None else 1
        kernels = ALGO_KERNELS.get(algo, [(f"kernel_algo{algo}", 1.0)]) if kernels is None else kernels
        launches = [(name, share / n) for _ in range(n) for name, share in kernels]
        if self.setup and (algo, repr(problem)) not in self._set_up:  # once per algorithm and problem
            self._set_up.add((algo, repr(problem)))
            launches.insert(0, ("void cudnn::setup_kernel<float>(float*)", 0.0))
        recs, at = [], start_ms * 1e6
        for name, share in launches:
            dur = t_ms * share * 1e6
            recs.append(KernelRecord(name, int(at), int(at + dur), (max(1, xs[0] // 2), 4, 1), (256, 1, 1), 96, 0,
                                     16384, correlation=next(self._correlation)))
            at += dur
        self._forwards += 1
        if self.overlap and self._forwards % 2 == 0 and len(recs) > 1:  # the second starts first
            first, second = recs[0], recs[1]
            recs[1] = replace(second, start=first.start - 1, end=first.start - 1 + second.end - second.start)
        self.tracer.records += recs


# ====================================================================== cuBLASLt
class FakeLtLib(Recorder):
    """The cuBLASLt functions of the bindings; the heuristic offers `n_algos` tile variants."""

    def __init__(
        self,
        backend: FakeBackend | None = None,
        tracer: FakeTracer | None = None,
        n_algos: int = 4,
        tflops: float = 40.0,
        no_algos_for: tuple[int, ...] = (),
    ):
        super().__init__()
        self.backend, self.tracer, self.n_algos, self.tflops = backend, tracer, n_algos, tflops
        self.no_algos_for = no_algos_for  # compute types for which the heuristic offers nothing
        self.attrs: dict[tuple[int, int], bytes] = {}
        self.layouts: dict[int, tuple] = {}
        self.descs: dict[int, dict] = {}

    def cublasLtGetVersion(self):
        return 131000

    def cublasLtGetStatusName(self, s):
        return CUBLAS_STATUS_NAMES.get(int(s), "CUBLAS_STATUS_UNKNOWN").encode()

    def cublasLtGetStatusString(self, s):
        return b"fake status text"

    def cublasLtCreate(self, out):
        self.new_handle(out)
        return 0

    def cublasLtDestroy(self, h):
        return 0

    def cublasLtMatmulDescCreate(self, out, compute, scale):
        h = self.new_handle(out)
        self.log("cublasLtMatmulDescCreate", (h, compute, scale))
        self.descs[h] = {"compute": compute}
        return 0

    def cublasLtMatmulDescDestroy(self, d):
        return 0

    def _read(self, buf, size) -> int:
        raw = ctypes.string_at(buf, size)
        return int.from_bytes(raw, "little", signed=True)

    def cublasLtMatmulDescSetAttribute(self, d, attr, buf, size):
        self.log("cublasLtMatmulDescSetAttribute", (_v(d), attr, self._read(buf, size), size))
        return 0

    def cublasLtMatrixLayoutCreate(self, out, dtype, rows, cols, ld):
        h = self.new_handle(out)
        self.log("cublasLtMatrixLayoutCreate", (h, dtype, _v(rows), _v(cols), _v(ld)))
        self.layouts[h] = (_v(rows), _v(cols))
        return 0

    def cublasLtMatrixLayoutDestroy(self, d):
        return 0

    def cublasLtMatrixLayoutSetAttribute(self, d, attr, buf, size):
        self.log("cublasLtMatrixLayoutSetAttribute", (_v(d), attr, self._read(buf, size), size))
        return 0

    def cublasLtMatmulPreferenceCreate(self, out):
        self.new_handle(out)
        return 0

    def cublasLtMatmulPreferenceDestroy(self, p):
        return 0

    def cublasLtMatmulPreferenceSetAttribute(self, p, attr, buf, size):
        self.log("cublasLtMatmulPreferenceSetAttribute", (_v(p), attr, self._read(buf, size), size))
        return 0

    def cublasLtMatmulAlgoGetHeuristic(self, h, op, a, b, c, d, pref, req, arr, got):
        self.log("cublasLtMatmulAlgoGetHeuristic", (_v(h), _v(op), _v(a), _v(b), _v(c), _v(d), _v(pref), req))
        n = 0 if self.descs.get(_v(op), {}).get("compute") in self.no_algos_for else min(req, self.n_algos)
        for i in range(n):
            arr[i].algo.data[0] = 20 + i  # the fake's "config": id in data[0], tile in data[1]
            arr[i].algo.data[1] = 10 + i
            arr[i].workspaceSize = 1 << 20 if i % 2 else 0
            arr[i].state = 0
            arr[i].wavesCount = 0.5 + i
        got.contents.value = n
        return 0

    def cublasLtMatmulAlgoConfigGetAttribute(self, algo, attr, buf, size, written):
        data = algo.contents.data
        val = {0: data[0], 1: data[1], 2: 1, 3: 0, 4: 0, 5: 0, 6: 5, 7: 0, 8: 0}[attr]
        ctypes.memmove(buf, int(val).to_bytes(size, "little"), size)
        written.contents.value = size
        return 0

    def cublasLtMatmul(self, h, op, alpha, A, a, B, b, beta, C, c, D, d, algo, ws, ws_size, stream):
        al = ctypes.cast(alpha, ctypes.POINTER(ctypes.c_float)).contents.value
        self.log(
            "cublasLtMatmul",
            (
                _v(h),
                _v(op),
                al,
                _v(A),
                _v(a),
                _v(B),
                _v(b),
                _v(C),
                _v(c),
                _v(D),
                _v(d),
                int(algo.contents.data[0]),
                _v(ws),
                ws_size,
                _v(stream),
            ),
        )
        rows, cols = self.layouts[_v(c)]
        k = self.layouts[_v(a)][1]
        t = 2.0 * rows * cols * k / (self.tflops * 1e9) * (1 + 0.1 * (algo.contents.data[0] - 20)) + 0.004
        if self.backend is not None:
            start = self.backend.clock_ms
            self.backend.clock_ms += t
            if self.tracer is not None:
                self.tracer.records.append(
                    KernelRecord(
                        f"nvjet_tst_128x{64 + int(algo.contents.data[1])}_64x4_1x2_h_bz_TNT",
                        int(start * 1e6),
                        int((start + t) * 1e6),
                        (rows // 128 + 1, cols // 64 + 1, 1),
                        (384, 1, 1),
                        168,
                        0,
                        200000,
                    )
                )
        return 0


class FakeTorchOps:
    """Stands in for memory_ops.TorchOps: a call advances the clock by its bytes over 2 TB/s
    plus 3 us and leaves one kernel record named as PyTorch's kernels are; `made` counts the
    configurations made, `released` the cache hand-backs."""

    KERNELS: ClassVar[dict[str, str]] = {
        "elementwise": "void at::native::vectorized_elementwise_kernel<4, {fn}_functor<float>, Array<char*, 2> >",
        "softmax": "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, Epilogue>",
        "layer_norm": "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>",
        "transpose": "void at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast<copy_kernel>>",
        "concat": "void at::native::CatArrayBatchedCopy<OpaqueType<4u>, unsigned int, 2, 128, 1>",
        "embedding_fwd": "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, "
        "2, 2, -2, true>",
    }

    def __init__(self, backend: FakeBackend, tracer: FakeTracer | None):
        self.backend, self.tracer = backend, tracer
        self.made = self.released = 0

    def make(self, cfg, dtype: str):
        from cudnn_bench.configs import EmbConfig, MemConfig

        assert isinstance(cfg, (MemConfig, EmbConfig)) and cfg.valid
        self.made += 1
        lookup = isinstance(cfg, EmbConfig)
        nbytes = cfg.moved_bytes(dtype) if lookup else sum(cfg.tensor_bytes(dtype).values())
        t = nbytes / 2e9 + 0.003
        name = self.KERNELS[cfg.op].format(fn="" if lookup else cfg.fn)
        blocks = max(1, (cfg.batch * cfg.emb_dim if lookup else cfg.rows * cfg.cols) // 1024)

        def call() -> None:
            start = self.backend.clock_ms
            self.backend.clock_ms += t
            if self.tracer is not None:
                self.tracer.records.append(
                    KernelRecord(name, int(start * 1e6), int((start + t) * 1e6), (blocks, 1, 1), (128, 1, 1), 32, 0, 0)
                )

        return call

    def release(self) -> None:
        self.released += 1


def fake_env(
    tracer: bool | FakeTracer = True,
    fail: dict | None = None,
    n_algos: int = 4,
    mem_bytes: int = 80 << 30,
    nvml_mhz: float = 1755.0,
    host_gap_ms: float = 0.0,
    no_algos_for: tuple[int, ...] = (),
    chunks: dict | None = None,
    setup: bool = False,
    overlap: bool = False,
) -> Env:
    """An env.Env wired to the fakes (cuDNN and cuBLASLt through the real bindings); `chunks`,
    `setup` and `overlap` shape the cuDNN calls' kernel records (see FakeCudnnLib)."""
    backend = FakeBackend(mem_bytes=mem_bytes)
    tr = tracer if isinstance(tracer, FakeTracer) else (FakeTracer() if tracer else None)
    dnn_lib = FakeCudnnLib(backend, tr, fail=fail, host_gap_ms=host_gap_ms, chunks=chunks, setup=setup, overlap=overlap)
    dnn = Cudnn(dnn_lib)
    lt = CublasLt(FakeLtLib(backend, tr, n_algos=n_algos, no_algos_for=no_algos_for))
    stream = backend.new_stream()

    class _Nvml:
        def sm_clock_mhz(self, *_):
            return nvml_mhz

    env = Env(
        backend=backend,
        device=backend.device,
        stream=stream,
        pool=BufferPool(backend),
        flusher=Flusher(backend, backend.device.l2_bytes, stream),
        events=EventPool(backend),
        dnn=dnn,
        dnn_handle=dnn.create_handle(),
        lt=lt,
        lt_handle=lt.create_handle(),
        tracer=tr,
        nvml=_Nvml(),
        torch_ops=FakeTorchOps(backend, tr),
        capture=FakeCapture(dnn_lib),
        versions={
            "driver_version": "580.159.04",
            "cuda_version": "13.5",
            "cudnn_version": "9.28.0",
            "cublas_version": "13.10.0",
        },
    )
    return env


# ====================================================================== a worker that dies
DIE_AFTER = "FAKE_DIE_AFTER"  # calls (tracer takes) after which an armed process kills itself
DIE_ARMED = "FAKE_DIE_ARMED"  # a file: the first process to rename it away dies, once


def dying_env(tracer: bool = True) -> Env:
    """fake_env whose process is killed (SIGKILL, as a preempted or out-of-memory-killed worker)
    in the middle of a configuration, after FAKE_DIE_AFTER calls, if it is the first process to
    take the armed file FAKE_DIE_ARMED (renamed to <file>.fired: exactly one death per arming).
    CUDNN_BENCH_SIMULATE=fakes:dying_env makes every collect process use it."""
    import os
    import signal

    env = fake_env(tracer=tracer)
    if env.tracer is None:
        raise ValueError("dying_env counts calls with the tracer: collect with --launch-meta cupti")
    after, armed = int(os.environ.get(DIE_AFTER, "0")), os.environ.get(DIE_ARMED, "")
    take, calls = env.tracer.take, itertools.count(1)

    def take_then_die():
        if next(calls) == after and armed:
            try:
                os.rename(armed, armed + ".fired")
            except OSError:  # not armed, or another process took it
                return take()
            os.kill(os.getpid(), signal.SIGKILL)
        return take()

    env.tracer.take = take_then_die
    return env


def has_driver() -> bool:
    """Whether this machine has an NVIDIA driver (tests of the no-GPU path skip there)."""
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False
