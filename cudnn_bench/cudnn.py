"""ctypes bindings for the cuDNN 9 legacy convolution API: forward, backward-data, backward-filter.

Verified against the headers of the wheel nvidia-cudnn-cu13 9.28.0.42 (cudnn_graph.h,
cudnn_ops.h, cudnn_cnn.h, CUDNN_VERSION 92800) by compiling a C program that prints sizeof and
offsetof: cudnnConvolutionFwdAlgoPerf_t is 48 bytes with algo@0 status@4 time@8 memory@16
determinism@24 mathType@28 reserved@32 (docs/reference.md, cuDNN convolution forward, agrees);
cudnnConvolutionBwdDataAlgoPerf_t and cudnnConvolutionBwdFilterAlgoPerf_t declare the same
members in the same order (tests/cudnn_bench/test_headers.py checks all three where headers are
installed). The enum values and argument orders below are copied from those headers, e.g.
  cudnnSetTensor4dDescriptor(desc, format, dataType, n, c, h, w)       (cudnn_ops.h)
  cudnnSetFilter4dDescriptor(desc, dataType, format, k, c, h, w)       (cudnn_ops.h)
  cudnnSetConvolution2dDescriptor(desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode,
                                  computeType)                          (cudnn_cnn.h)
Status codes are cuDNN 9's (category = status // 1000 * 1000); every non-zero status becomes a
named exception (errors.cudnn_error_class) carrying cudnnGetErrorString and
cudnnGetLastErrorString.

`Cudnn` takes the library object as an argument, so tests drive it with a fake that records
calls; only `Cudnn.load()` touches the real library.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any

from seer.data.variants import CONV_OP_ALGOS

from . import libs
from .errors import CudnnError, cudnn_error_class
from .maths import MATH_DTYPE

# ---------------------------------------------------------------- enums (cudnn_graph.h, cudnn_ops.h)
CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16 = 0, 1, 2, 9
DATA_TYPE = {"float32": CUDNN_DATA_FLOAT, "float16": CUDNN_DATA_HALF, "bfloat16": CUDNN_DATA_BFLOAT16}
CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC = 0, 1
TENSOR_FORMAT = {"NCHW": CUDNN_TENSOR_NCHW, "NHWC": CUDNN_TENSOR_NHWC}
CUDNN_CONVOLUTION, CUDNN_CROSS_CORRELATION = 0, 1
CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH = 0, 1, 2, 3
CUDNN_NON_DETERMINISTIC, CUDNN_DETERMINISTIC = 0, 1
CUDNN_CONVOLUTION_FWD_ALGO_COUNT = 8
CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT = 6
CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT = 7
MATH_TYPE_NAMES = {0: "default", 1: "tensor_op", 2: "tensor_op_allow_conversion", 3: "fma"}

# The harness's math families -> (data type, cudnnMathType_t). FP32 with FMA math is SEER's
# setting (no TF32 on Ampere/Hopper); DEFAULT math on FP32 lets cuDNN use TF32 tensor cores.
MATH_TYPE = {
    "fma": CUDNN_FMA_MATH,
    "tf32": CUDNN_DEFAULT_MATH,
    "fp16": CUDNN_TENSOR_OP_MATH,
    "bf16": CUDNN_TENSOR_OP_MATH,
}
MATH_MODES: dict[str, tuple[str, int]] = {m: (MATH_DTYPE[m], t) for m, t in MATH_TYPE.items()}

# cuDNN 9 status names, used only where the library cannot name a status itself (fakes).
STATUS_NAMES = {
    0: "CUDNN_STATUS_SUCCESS",
    1001: "CUDNN_STATUS_NOT_INITIALIZED",
    1002: "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
    1008: "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
    2000: "CUDNN_STATUS_BAD_PARAM",
    2002: "CUDNN_STATUS_BAD_PARAM_NULL_POINTER",
    3000: "CUDNN_STATUS_NOT_SUPPORTED",
    3002: "CUDNN_STATUS_NOT_SUPPORTED_SHAPE",
    3007: "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
    4000: "CUDNN_STATUS_INTERNAL_ERROR",
    4003: "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
    4004: "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
    5000: "CUDNN_STATUS_EXECUTION_FAILED",
    5001: "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER",
    5002: "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS",
    5003: "CUDNN_STATUS_EXECUTION_FAILED_CUDART",
}


class ConvAlgoPerf(ctypes.Structure):
    """cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (cudnn_cnn.h): 48 bytes, memory at offset
    16; `algo` is the direction's enum."""

    _fields_ = [
        ("algo", c_int),
        ("status", c_int),
        ("time", c_float),
        ("memory", c_size_t),
        ("determinism", c_int),
        ("mathType", c_int),
        ("reserved", c_int * 3),
    ]


# name -> (restype, argtypes); handles and descriptors are opaque pointers (c_void_p).
_P = POINTER
SIGNATURES: dict[str, tuple[Any, list]] = {
    "cudnnGetVersion": (c_size_t, []),
    "cudnnGetCudartVersion": (c_size_t, []),
    "cudnnGetErrorString": (c_char_p, [c_int]),
    "cudnnGetLastErrorString": (None, [c_char_p, c_size_t]),
    "cudnnCreate": (c_int, [_P(c_void_p)]),
    "cudnnDestroy": (c_int, [c_void_p]),
    "cudnnSetStream": (c_int, [c_void_p, c_void_p]),
    "cudnnCreateTensorDescriptor": (c_int, [_P(c_void_p)]),
    "cudnnSetTensor4dDescriptor": (c_int, [c_void_p, c_int, c_int, c_int, c_int, c_int, c_int]),
    "cudnnDestroyTensorDescriptor": (c_int, [c_void_p]),
    "cudnnCreateFilterDescriptor": (c_int, [_P(c_void_p)]),
    "cudnnSetFilter4dDescriptor": (c_int, [c_void_p, c_int, c_int, c_int, c_int, c_int, c_int]),
    "cudnnDestroyFilterDescriptor": (c_int, [c_void_p]),
    "cudnnCreateConvolutionDescriptor": (c_int, [_P(c_void_p)]),
    "cudnnSetConvolution2dDescriptor": (c_int, [c_void_p, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int]),
    "cudnnSetConvolutionMathType": (c_int, [c_void_p, c_int]),
    "cudnnSetConvolutionGroupCount": (c_int, [c_void_p, c_int]),
    "cudnnDestroyConvolutionDescriptor": (c_int, [c_void_p]),
    "cudnnGetConvolution2dForwardOutputDim": (
        c_int,
        [c_void_p, c_void_p, c_void_p, _P(c_int), _P(c_int), _P(c_int), _P(c_int)],
    ),
    "cudnnGetConvolutionForwardAlgorithmMaxCount": (c_int, [c_void_p, _P(c_int)]),
}
# The three directions' calls take the same argument types: (handle, desc, desc, conv, desc, ...)
# for the heuristic, Find and the workspace query; (handle, alpha, desc, ptr, desc, ptr, conv,
# algo, workspace, bytes, beta, desc, ptr) for the call itself.
_LIST = [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_int, _P(c_int), _P(ConvAlgoPerf)]
_WS = [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_int, _P(c_size_t)]
_RUN = [c_void_p] * 7 + [c_int, c_void_p, c_size_t, c_void_p, c_void_p, c_void_p]
for _d in ("Forward", "BackwardData", "BackwardFilter"):
    SIGNATURES[f"cudnnGetConvolution{_d}Algorithm_v7"] = (c_int, _LIST)
    SIGNATURES[f"cudnnFindConvolution{_d}Algorithm"] = (c_int, _LIST)
    SIGNATURES[f"cudnnGetConvolution{_d}WorkspaceSize"] = (c_int, _WS)
    SIGNATURES[f"cudnnConvolution{_d}"] = (c_int, _RUN)


@dataclass(frozen=True)
class Direction:
    """One direction of a convolution in cuDNN's API: its functions' infix, its algorithms, and
    which of the problem's descriptors (x, w, y: input, filter, output of the forward) its calls
    take, in their order, the last one written. Forward reads x and w and writes y;
    backward-data reads w and dy and writes dx; backward-filter reads x and dy and writes dw."""

    op: str
    infix: str
    count: int
    order: tuple[str, str, str]  # (first operand, second operand, written), by descriptor name


DIRECTIONS: dict[str, Direction] = {
    "conv_fwd": Direction("conv_fwd", "Forward", CUDNN_CONVOLUTION_FWD_ALGO_COUNT, ("x", "w", "y")),
    "conv_bwd_data": Direction("conv_bwd_data", "BackwardData", CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, ("w", "y", "x")),
    "conv_bwd_filter": Direction(
        "conv_bwd_filter", "BackwardFilter", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, ("x", "y", "w")
    ),
}


@dataclass(frozen=True)
class AlgoPerf:
    """One entry of cuDNN's heuristic (Get_v7) or Find list, in cuDNN's order."""

    algo: int
    status: int
    time_ms: float
    memory: int
    determinism: int
    math_type: int
    op: str = "conv_fwd"  # the direction whose enum `algo` is

    @property
    def name(self) -> str:
        return CONV_OP_ALGOS[self.op].get(self.algo, f"ALGO_{self.algo}")


def format_version(v: int) -> str:
    """92800 -> '9.28.0' (cuDNN 9 encodes MAJOR*10000 + MINOR*100 + PATCH)."""
    v = int(v)
    if v >= 10000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"  # cuDNN 8: MAJOR*1000 + MINOR*100 + PATCH


def format_cudart(v: int) -> str:
    """13050 -> '13.5' (CUDART_VERSION = MAJOR*1000 + MINOR*10)."""
    v = int(v)
    return f"{v // 1000}.{v % 1000 // 10}"


class Cudnn:
    """The cuDNN calls the harness makes, each checked; `lib` is a CDLL or a test fake."""

    def __init__(self, lib, path: str = ""):
        self.lib, self.path = lib, path
        libs.bind(lib, SIGNATURES)

    @classmethod
    def load(cls) -> Cudnn:
        lib, path = libs.load_cudnn()
        return cls(lib, path)

    # ------------------------------------------------------------ versions and errors
    def version(self) -> int:
        return int(self.lib.cudnnGetVersion())

    def version_str(self) -> str:
        return format_version(self.version())

    def cudart_version_str(self) -> str:
        try:
            return format_cudart(self.lib.cudnnGetCudartVersion())
        except AttributeError:
            return ""

    def error(self, status: int, call: str = "") -> CudnnError:
        """The named exception for a status, with cuDNN's own name and last error message."""
        name = STATUS_NAMES.get(int(status), f"CUDNN_STATUS_{int(status)}")
        try:
            raw = self.lib.cudnnGetErrorString(int(status))
            if raw:
                name = raw.decode() if isinstance(raw, bytes) else str(raw)
        except AttributeError:
            pass
        message = ""
        try:
            buf = ctypes.create_string_buffer(1024)
            self.lib.cudnnGetLastErrorString(buf, 1024)
            message = buf.value.decode(errors="replace").strip()
        except AttributeError:
            pass
        return cudnn_error_class(int(status))(int(status), name, message, call)

    def check(self, status, call: str = "") -> None:
        status = int(status)
        if status != 0:
            raise self.error(status, call)

    def _call(self, name: str, *args) -> None:
        self.check(getattr(self.lib, name)(*args), name)

    def _create(self, name: str) -> c_void_p:
        h = c_void_p()
        self._call(name, ctypes.pointer(h))
        return h

    # ------------------------------------------------------------ handle
    def create_handle(self) -> c_void_p:
        return self._create("cudnnCreate")

    def destroy_handle(self, h) -> None:
        self._call("cudnnDestroy", h)

    def set_stream(self, h, stream: int) -> None:
        self._call("cudnnSetStream", h, c_void_p(int(stream) or None))

    # ------------------------------------------------------------ descriptors
    def tensor_desc(self, n: int, c: int, h: int, w: int, dtype: str = "float32", layout: str = "NCHW") -> c_void_p:
        d = self._create("cudnnCreateTensorDescriptor")
        try:  # (desc, format, dataType, n, c, h, w)
            self._call(
                "cudnnSetTensor4dDescriptor", d, TENSOR_FORMAT[layout], DATA_TYPE[dtype], int(n), int(c), int(h), int(w)
            )
        except BaseException:
            self.lib.cudnnDestroyTensorDescriptor(d)
            raise
        return d

    def filter_desc(self, k: int, c: int, h: int, w: int, dtype: str = "float32", layout: str = "NCHW") -> c_void_p:
        d = self._create("cudnnCreateFilterDescriptor")
        try:  # (desc, dataType, format, k, c, h, w): dtype before format, unlike tensors
            self._call(
                "cudnnSetFilter4dDescriptor", d, DATA_TYPE[dtype], TENSOR_FORMAT[layout], int(k), int(c), int(h), int(w)
            )
        except BaseException:
            self.lib.cudnnDestroyFilterDescriptor(d)
            raise
        return d

    def conv_desc(
        self,
        pad_h: int,
        pad_w: int,
        stride_h: int,
        stride_w: int,
        dil_h: int = 1,
        dil_w: int = 1,
        compute: str = "float32",
        math_type: int = CUDNN_FMA_MATH,
        groups: int = 1,
    ) -> c_void_p:
        d = self._create("cudnnCreateConvolutionDescriptor")
        try:  # (desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType)
            self._call(
                "cudnnSetConvolution2dDescriptor",
                d,
                int(pad_h),
                int(pad_w),
                int(stride_h),
                int(stride_w),
                int(dil_h),
                int(dil_w),
                CUDNN_CROSS_CORRELATION,
                DATA_TYPE[compute],
            )
            self._call("cudnnSetConvolutionMathType", d, int(math_type))
            if groups != 1:
                self._call("cudnnSetConvolutionGroupCount", d, int(groups))
        except BaseException:
            self.lib.cudnnDestroyConvolutionDescriptor(d)
            raise
        return d

    def destroy_tensor(self, d) -> None:
        self._call("cudnnDestroyTensorDescriptor", d)

    def destroy_filter(self, d) -> None:
        self._call("cudnnDestroyFilterDescriptor", d)

    def destroy_conv(self, d) -> None:
        self._call("cudnnDestroyConvolutionDescriptor", d)

    # ------------------------------------------------------------ queries
    def output_dim(self, conv, x, w) -> tuple[int, int, int, int]:
        n, c, h, ww = c_int(), c_int(), c_int(), c_int()
        self._call(
            "cudnnGetConvolution2dForwardOutputDim",
            conv,
            x,
            w,
            ctypes.pointer(n),
            ctypes.pointer(c),
            ctypes.pointer(h),
            ctypes.pointer(ww),
        )
        return n.value, c.value, h.value, ww.value

    def _perf_list(self, fn: str, op: str, h, x, w, conv, y, count: int | None) -> list[AlgoPerf]:
        d = DIRECTIONS[op]
        count = d.count if count is None else count
        arr = (ConvAlgoPerf * count)()
        got = c_int(0)
        a, b, out = _ordered(d, x, w, y)
        self._call(fn.format(d.infix), h, a, b, conv, out, int(count), ctypes.pointer(got), arr)
        return [
            AlgoPerf(p.algo, p.status, float(p.time), int(p.memory), p.determinism, p.mathType, op)
            for p in arr[: max(0, min(got.value, count))]
        ]

    def heuristic(self, h, x, w, conv, y, count: int | None = None, op: str = "conv_fwd") -> list[AlgoPerf]:
        """cuDNN's own ranking (cudnnGetConvolution<Direction>Algorithm_v7): no timing, the
        baseline picker to beat. Entries come best first; `status` says whether each can run.
        Descriptors are the forward's (x, w, y) whatever the direction."""
        return self._perf_list("cudnnGetConvolution{}Algorithm_v7", op, h, x, w, conv, y, count)

    def find(self, h, x, w, conv, y, count: int | None = None, op: str = "conv_fwd") -> list[AlgoPerf]:
        """cudnnFindConvolution<Direction>Algorithm: cuDNN times every algorithm (an oracle check)."""
        return self._perf_list("cudnnFindConvolution{}Algorithm", op, h, x, w, conv, y, count)

    def workspace_size(self, h, x, w, conv, y, algo: int, op: str = "conv_fwd") -> int:
        d = DIRECTIONS[op]
        size = c_size_t(0)
        a, b, out = _ordered(d, x, w, y)
        self._call(f"cudnnGetConvolution{d.infix}WorkspaceSize", h, a, b, conv, out, int(algo), ctypes.pointer(size))
        return int(size.value)

    def convolve(
        self,
        op: str,
        h,
        descs: tuple,
        ptrs: tuple[int, int, int],
        conv,
        algo: int,
        workspace: int,
        workspace_bytes: int,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> None:
        """One call of direction `op` on the forward's descriptors `descs` (x, w, y) and device
        pointers `ptrs` in the same order (for a gradient, y's is dy's and the written one is
        dx's or dw's): written = alpha * result + beta * written. alpha and beta are host floats
        (float for every data type but double, per cuDNN's scaling-parameter rule)."""
        d = DIRECTIONS[op]
        (da, db, dout), (pa, pb, pout) = _ordered(d, *descs), _ordered(d, *ptrs)
        a, b = c_float(alpha), c_float(beta)
        self._call(
            f"cudnnConvolution{d.infix}",
            h,
            ctypes.cast(ctypes.pointer(a), c_void_p),
            da,
            c_void_p(int(pa) or None),
            db,
            c_void_p(int(pb) or None),
            conv,
            int(algo),
            c_void_p(int(workspace) or None),
            int(workspace_bytes),
            ctypes.cast(ctypes.pointer(b), c_void_p),
            dout,
            c_void_p(int(pout) or None),
        )


def _ordered(d: Direction, x, w, y) -> tuple:
    """The forward's (x, w, y) in the order direction `d`'s calls take them."""
    named = {"x": x, "w": w, "y": y}
    return tuple(named[n] for n in d.order)


class ConvProblem:
    """The three descriptors and the convolution descriptor of one configuration.

    A context manager, so descriptors are freed whatever happens; `out` is cuDNN's output shape.
    """

    def __init__(
        self,
        dnn: Cudnn,
        *,
        batch: int,
        c_in: int,
        h_in: int,
        w_in: int,
        c_out: int,
        kh: int,
        kw: int,
        stride_h: int = 1,
        stride_w: int = 1,
        pad_h: int = 0,
        pad_w: int = 0,
        dil_h: int = 1,
        dil_w: int = 1,
        groups: int = 1,
        math: str = "fma",
        layout: str = "NCHW",
    ):
        self.dnn = dnn
        self.dtype, self.math_type = MATH_MODES[math]
        self.x = self.w = self.conv = self.y = None
        try:
            self.x = dnn.tensor_desc(batch, c_in, h_in, w_in, self.dtype, layout)
            self.w = dnn.filter_desc(c_out, c_in // groups, kh, kw, self.dtype, layout)
            self.conv = dnn.conv_desc(pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, "float32", self.math_type, groups)
            self.out = dnn.output_dim(self.conv, self.x, self.w)
            self.y = dnn.tensor_desc(*self.out, self.dtype, layout)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for attr, fn in (
            ("y", "destroy_tensor"),
            ("conv", "destroy_conv"),
            ("w", "destroy_filter"),
            ("x", "destroy_tensor"),
        ):
            d = getattr(self, attr, None)
            if d is not None:
                setattr(self, attr, None)
                try:
                    getattr(self.dnn, fn)(d)
                except CudnnError:
                    pass

    def __enter__(self) -> ConvProblem:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
