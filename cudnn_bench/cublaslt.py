"""ctypes bindings for cuBLASLt: heuristic enumeration of GEMM algorithms, and running one.

Verified against cublasLt.h, cublas_api.h and library_types.h of the wheel nvidia-cublas
13.10.0.20 (CUBLAS_VERSION 131000) with a compiled sizeof/offsetof probe:
cublasLtMatmulAlgo_t is uint64_t data[8] (64 bytes); cublasLtMatmulHeuristicResult_t is 96 bytes
with algo@0 workspaceSize@64 state@72 wavesCount@76 reserved[4]@80 (docs/reference.md, cuBLASLt).
Enum values below are the header's: CUBLAS_COMPUTE_32F 68, CUBLAS_COMPUTE_32F_PEDANTIC 69,
CUBLAS_COMPUTE_32F_FAST_TF32 77; CUDA_R_32F 0, CUDA_R_16F 2, CUDA_R_16BF 14; CUBLAS_OP_N 0,
CUBLAS_OP_T 1; CUBLASLT_MATMUL_DESC_TRANSA 3 / TRANSB 4 (int32); CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
5 (int32), STRIDED_BATCH_OFFSET 6 (int64); CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1 (uint64);
algo config attributes ID 0 (int32), TILE_ID 1 (uint32), SPLITK_NUM 2 (int32),
REDUCTION_SCHEME 3, CTA_SWIZZLING 4, CUSTOM_OPTION 5, STAGES_ID 6 (uint32), INNER_SHAPE_ID 7,
CLUSTER_SHAPE_ID 8 (uint16).

The record's GEMM is column-major C[m, n] = op(A)[m, k] op(B)[k, n], `trans` = "nn", "tn", ...
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint16, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass, field
from typing import Any

from . import libs
from .errors import CublasError, cublas_error_class
from .maths import MATH_DTYPE

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
DATA_TYPE = {"float32": CUDA_R_32F, "float16": CUDA_R_16F, "bfloat16": CUDA_R_16BF}
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 69, 77
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
OP = {"n": CUBLAS_OP_N, "t": CUBLAS_OP_T}
CUBLASLT_MATMUL_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSB = 3, 4
CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 5, 6
CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1

# math family -> (data type, compute type); the scale type is always CUDA_R_32F.
# fma: FP32 without TF32 (PEDANTIC), the SEER-style setting; tf32 allows TF32 tensor cores.
COMPUTE_TYPE = {
    "fma": CUBLAS_COMPUTE_32F_PEDANTIC,
    "tf32": CUBLAS_COMPUTE_32F_FAST_TF32,
    "fp16": CUBLAS_COMPUTE_32F,
    "bf16": CUBLAS_COMPUTE_32F,
}
MATH_MODES: dict[str, tuple[str, int]] = {m: (MATH_DTYPE[m], t) for m, t in COMPUTE_TYPE.items()}

COMPUTE_NAMES = {
    CUBLAS_COMPUTE_32F: "CUBLAS_COMPUTE_32F",
    CUBLAS_COMPUTE_32F_PEDANTIC: "CUBLAS_COMPUTE_32F_PEDANTIC",
    CUBLAS_COMPUTE_32F_FAST_TF32: "CUBLAS_COMPUTE_32F_FAST_TF32",
}


def compute_types(math: str) -> tuple[int, ...]:
    """Compute types to try for a math family, in order. cuBLASLt may offer no algorithm for
    PEDANTIC (strict FP32, no reduced-precision reductions); COMPUTE_32F is still FP32 without
    TF32 (TF32 needs FAST_TF32 or the handle's TF32 math mode), so `fma` falls back to it and
    the rows say which compute type ran."""
    first = MATH_MODES[math][1]
    return (first, CUBLAS_COMPUTE_32F) if first == CUBLAS_COMPUTE_32F_PEDANTIC else (first,)


# cublasLtMatmulAlgoConfigAttributes_t: (name in records, enum, ctypes type of the value)
ALGO_CONFIG: tuple[tuple[str, int, Any], ...] = (
    ("id", 0, c_int32),
    ("tile", 1, c_uint32),
    ("splitk", 2, c_int32),
    ("reduction", 3, c_uint32),
    ("swizzle", 4, c_uint32),
    ("custom", 5, c_uint32),
    ("stages", 6, c_uint32),
    ("inner_shape", 7, c_uint16),
    ("cluster_shape", 8, c_uint16),
)
# The record's column of each config attribute but the id (the algorithm's name carries that).
RECORD_FIELDS: tuple[tuple[str, str], ...] = tuple((f"lt_{name}", name) for name, _, _ in ALGO_CONFIG[1:])
STATUS_NAMES = {
    0: "CUBLAS_STATUS_SUCCESS",
    1: "CUBLAS_STATUS_NOT_INITIALIZED",
    3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE",
    8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}


class MatmulAlgo(ctypes.Structure):
    """cublasLtMatmulAlgo_t: opaque, uint64_t data[8]."""

    _fields_ = [("data", c_uint64 * 8)]


class HeuristicResult(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t: 96 bytes, wavesCount at offset 76."""

    _fields_ = [
        ("algo", MatmulAlgo),
        ("workspaceSize", c_size_t),
        ("state", c_int),
        ("wavesCount", c_float),
        ("reserved", c_int * 4),
    ]


_P = POINTER
SIGNATURES: dict[str, tuple[Any, list]] = {
    "cublasLtGetVersion": (c_size_t, []),
    "cublasLtGetStatusName": (c_char_p, [c_int]),
    "cublasLtGetStatusString": (c_char_p, [c_int]),
    "cublasLtCreate": (c_int, [_P(c_void_p)]),
    "cublasLtDestroy": (c_int, [c_void_p]),
    "cublasLtMatmulDescCreate": (c_int, [_P(c_void_p), c_int, c_int]),
    "cublasLtMatmulDescDestroy": (c_int, [c_void_p]),
    "cublasLtMatmulDescSetAttribute": (c_int, [c_void_p, c_int, c_void_p, c_size_t]),
    "cublasLtMatrixLayoutCreate": (c_int, [_P(c_void_p), c_int, c_uint64, c_uint64, c_int64]),
    "cublasLtMatrixLayoutDestroy": (c_int, [c_void_p]),
    "cublasLtMatrixLayoutSetAttribute": (c_int, [c_void_p, c_int, c_void_p, c_size_t]),
    "cublasLtMatmulPreferenceCreate": (c_int, [_P(c_void_p)]),
    "cublasLtMatmulPreferenceDestroy": (c_int, [c_void_p]),
    "cublasLtMatmulPreferenceSetAttribute": (c_int, [c_void_p, c_int, c_void_p, c_size_t]),
    "cublasLtMatmulAlgoGetHeuristic": (
        c_int,
        [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_int, _P(HeuristicResult), _P(c_int)],
    ),
    "cublasLtMatmulAlgoConfigGetAttribute": (c_int, [_P(MatmulAlgo), c_int, c_void_p, c_size_t, _P(c_size_t)]),
    "cublasLtMatmul": (
        c_int,
        [
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            c_void_p,
            _P(MatmulAlgo),
            c_void_p,
            c_size_t,
            c_void_p,
        ],
    ),
}


def format_version(v: int) -> str:
    """131000 -> '13.10.0' (CUBLAS_VERSION = MAJOR*10000 + MINOR*100 + PATCH)."""
    v = int(v)
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"


@dataclass
class LtAlgo:
    """One heuristic result: its rank (0 = cuBLASLt's first choice), the algo and its config."""

    rank: int
    algo: MatmulAlgo
    workspace: int
    state: int
    waves: float
    config: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"lt:{self.config.get('id', -1)}"

    def signature(self) -> tuple:
        """What tells two results apart (the ncu worker re-finds an algo by it)."""
        return tuple(self.config.get(k) for k, _, _ in ALGO_CONFIG)


class CublasLt:
    """The cuBLASLt calls of the harness, each checked; `lib` is a CDLL or a test fake."""

    def __init__(self, lib, path: str = ""):
        self.lib, self.path = lib, path
        libs.bind(lib, SIGNATURES)

    @classmethod
    def load(cls) -> CublasLt:
        lib, path = libs.load_cublaslt()
        return cls(lib, path)

    def version(self) -> int:
        return int(self.lib.cublasLtGetVersion())

    def version_str(self) -> str:
        return format_version(self.version())

    def error(self, status: int, call: str = "") -> CublasError:
        name = STATUS_NAMES.get(int(status), f"CUBLAS_STATUS_{int(status)}")
        message = ""
        try:
            raw = self.lib.cublasLtGetStatusName(int(status))
            if raw:
                name = raw.decode() if isinstance(raw, bytes) else str(raw)
            raw = self.lib.cublasLtGetStatusString(int(status))
            if raw:
                message = raw.decode() if isinstance(raw, bytes) else str(raw)
        except AttributeError:
            pass
        return cublas_error_class(int(status))(int(status), name, message, call)

    def check(self, status, call: str = "") -> None:
        if int(status) != 0:
            raise self.error(int(status), call)

    def _call(self, name: str, *args) -> None:
        self.check(getattr(self.lib, name)(*args), name)

    def _create(self, name: str, *args) -> c_void_p:
        h = c_void_p()
        self._call(name, ctypes.pointer(h), *args)
        return h

    def _set(self, fn: str, obj, attr: int, value) -> None:
        self._call(fn, obj, int(attr), ctypes.cast(ctypes.pointer(value), c_void_p), ctypes.sizeof(value))

    # ------------------------------------------------------------ objects
    def create_handle(self) -> c_void_p:
        return self._create("cublasLtCreate")

    def destroy_handle(self, h) -> None:
        self._call("cublasLtDestroy", h)

    def matmul_desc(self, compute: int, scale: int = CUDA_R_32F, trans: str = "nn") -> c_void_p:
        d = self._create("cublasLtMatmulDescCreate", int(compute), int(scale))
        try:
            self._set("cublasLtMatmulDescSetAttribute", d, CUBLASLT_MATMUL_DESC_TRANSA, c_int32(OP[trans[0]]))
            self._set("cublasLtMatmulDescSetAttribute", d, CUBLASLT_MATMUL_DESC_TRANSB, c_int32(OP[trans[1]]))
        except BaseException:
            self.lib.cublasLtMatmulDescDestroy(d)
            raise
        return d

    def layout(self, dtype: str, rows: int, cols: int, ld: int, batch: int = 1) -> c_void_p:
        """A column-major matrix layout; batch > 1 makes it strided-batched (stride rows*cols)."""
        d = self._create(
            "cublasLtMatrixLayoutCreate", DATA_TYPE[dtype], c_uint64(int(rows)), c_uint64(int(cols)), c_int64(int(ld))
        )
        try:
            if batch > 1:
                self._set(
                    "cublasLtMatrixLayoutSetAttribute", d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, c_int32(int(batch))
                )
                self._set(
                    "cublasLtMatrixLayoutSetAttribute",
                    d,
                    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    c_int64(int(ld) * int(cols)),
                )
        except BaseException:
            self.lib.cublasLtMatrixLayoutDestroy(d)
            raise
        return d

    def preference(self, max_workspace: int) -> c_void_p:
        p = self._create("cublasLtMatmulPreferenceCreate")
        try:
            self._set(
                "cublasLtMatmulPreferenceSetAttribute",
                p,
                CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                c_uint64(int(max_workspace)),
            )
        except BaseException:
            self.lib.cublasLtMatmulPreferenceDestroy(p)
            raise
        return p

    def algo_config(self, algo: MatmulAlgo) -> dict[str, int]:
        """The config attributes that identify a variant (cublasLtMatmulAlgoConfigGetAttribute)."""
        out = {}
        for name, attr, typ in ALGO_CONFIG:
            val, written = typ(0), c_size_t(0)
            status = self.lib.cublasLtMatmulAlgoConfigGetAttribute(
                ctypes.pointer(algo),
                attr,
                ctypes.cast(ctypes.pointer(val), c_void_p),
                ctypes.sizeof(val),
                ctypes.pointer(written),
            )
            if int(status) == 0:
                out[name] = int(val.value)
        return out

    def heuristics(self, h, op, a, b, c, d, pref, count: int = 8) -> list[LtAlgo]:
        """Up to `count` algorithms, cuBLASLt's first choice first; only usable ones (state 0)."""
        arr = (HeuristicResult * max(1, int(count)))()
        got = c_int(0)
        self._call("cublasLtMatmulAlgoGetHeuristic", h, op, a, b, c, d, pref, int(count), arr, ctypes.pointer(got))
        out = []
        for i, r in enumerate(arr[: max(0, min(got.value, count))]):
            if r.state != 0:
                continue
            algo = MatmulAlgo()
            ctypes.memmove(ctypes.addressof(algo), ctypes.addressof(r.algo), ctypes.sizeof(MatmulAlgo))
            out.append(LtAlgo(i, algo, int(r.workspaceSize), int(r.state), float(r.wavesCount), self.algo_config(algo)))
        return out

    def matmul(
        self,
        h,
        op,
        a_layout,
        a: int,
        b_layout,
        b: int,
        c_layout,
        c: int,
        algo: MatmulAlgo,
        workspace: int,
        workspace_bytes: int,
        stream: int,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> None:
        """D = alpha op(A) op(B) + beta C, in place (D = C); alpha, beta host floats."""
        al, be = c_float(alpha), c_float(beta)
        self._call(
            "cublasLtMatmul",
            h,
            op,
            ctypes.cast(ctypes.pointer(al), c_void_p),
            c_void_p(int(a) or None),
            a_layout,
            c_void_p(int(b) or None),
            b_layout,
            ctypes.cast(ctypes.pointer(be), c_void_p),
            c_void_p(int(c) or None),
            c_layout,
            c_void_p(int(c) or None),
            c_layout,
            ctypes.pointer(algo),
            c_void_p(int(workspace) or None),
            int(workspace_bytes),
            c_void_p(int(stream) or None),
        )


def gemm_shapes(m: int, n: int, k: int, trans: str = "nn") -> dict[str, tuple[int, int]]:
    """Stored (rows, cols) of A, B, C in column-major order for C[m,n] = op(A) op(B)."""
    a = (m, k) if trans[0] == "n" else (k, m)
    b = (k, n) if trans[1] == "n" else (n, k)
    return {"a": a, "b": b, "c": (m, n)}


class GemmProblem:
    """Descriptors of one (batched) GEMM: op desc, A, B, C layouts and a preference."""

    def __init__(
        self,
        lt: CublasLt,
        *,
        batch: int,
        m: int,
        n: int,
        k: int,
        trans: str = "nn",
        math: str = "fma",
        max_workspace: int = 1 << 30,
        compute: int | None = None,
    ):
        self.lt = lt
        self.dtype, default = MATH_MODES[math]
        self.compute = compute = default if compute is None else int(compute)
        self.op = self.a = self.b = self.c = self.pref = None
        shapes = gemm_shapes(m, n, k, trans)
        try:
            self.op = lt.matmul_desc(compute, CUDA_R_32F, trans)
            self.a = lt.layout(self.dtype, *shapes["a"], shapes["a"][0], batch)
            self.b = lt.layout(self.dtype, *shapes["b"], shapes["b"][0], batch)
            self.c = lt.layout(self.dtype, *shapes["c"], shapes["c"][0], batch)
            self.pref = lt.preference(max_workspace)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for attr, fn in (
            ("pref", "cublasLtMatmulPreferenceDestroy"),
            ("c", "cublasLtMatrixLayoutDestroy"),
            ("b", "cublasLtMatrixLayoutDestroy"),
            ("a", "cublasLtMatrixLayoutDestroy"),
            ("op", "cublasLtMatmulDescDestroy"),
        ):
            d = getattr(self, attr, None)
            if d is not None:
                setattr(self, attr, None)
                getattr(self.lt.lib, fn)(d)

    def heuristics(self, h, count: int) -> list[LtAlgo]:
        return self.lt.heuristics(h, self.op, self.a, self.b, self.c, self.c, self.pref, count)

    def __enter__(self) -> GemmProblem:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
