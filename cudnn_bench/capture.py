"""Which kernels a library call launches, learnt without running them: the call is captured into
a CUDA graph and the graph's kernel nodes are read.

cuDNN's legacy algorithms choose their kernels by rules of their own: the forward GEMM, IMPLICIT_GEMM
and IMPLICIT_PRECOMP_GEMM and the gradients' ALGO_0, ALGO_1 and ALGO_3 run a direct fallback kernel
(conv2d_grouped_direct, dgrad2d_grouped_direct, wgrad2d_grouped_direct) on some configurations,
10-20x slower than their neighbours' kernels, and grouped convolutions as one kernel a group on
others. The workspace query tells that choice for two of them only (`python tools/direct_fallback.py
data/h100-sxm`). A call captured on a stream (cuStreamBeginCapture, relaxed mode) is recorded, not
executed: its graph names every kernel it would launch, with the launch geometry, at the cost of
the library's host work, and no GPU time.

Nothing it captures runs: a library that initializes device state on a first call would believe
it done. So capture in a process of its own (`python -m cudnn_bench census` is one), never before
timing in the same process. Driver API through ctypes; cuFuncGetName needs a driver of CUDA 12.3 or
later.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from ctypes import POINTER, c_char_p, c_int, c_size_t, c_uint, c_void_p
from dataclasses import dataclass
from typing import Protocol

from .cupti import demangle
from .errors import BenchError
from .runtime import Driver

CAPTURE_MODE_RELAXED = 2  # CUstreamCaptureMode: other threads' unsafe calls are not this capture's concern
NODE_TYPE_KERNEL = 0  # CUgraphNodeType
NEEDED = ("cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphGetNodes", "cuGraphNodeGetType", "cuGraphDestroy")


@dataclass(frozen=True)
class Captured:
    """One kernel launch of a captured call."""

    name: str  # demangled, as CUPTI's records spell it
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


class Capture(Protocol):
    """Kernel launches of a call, learnt without running it (GraphCapture, or a fake)."""

    def kernels(self, stream: int, call: Callable[[], None]) -> list[Captured]: ...


class KernelNodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h); the v1 call fills its prefix."""

    _fields_ = [
        ("func", c_void_p),
        ("gridDimX", c_uint),
        ("gridDimY", c_uint),
        ("gridDimZ", c_uint),
        ("blockDimX", c_uint),
        ("blockDimY", c_uint),
        ("blockDimZ", c_uint),
        ("sharedMemBytes", c_uint),
        ("kernelParams", c_void_p),
        ("extra", c_void_p),
        ("kern", c_void_p),
        ("ctx", c_void_p),
    ]


class GraphCapture:
    """Stream capture through the driver API (on the primary context the harness's backends share)."""

    def __init__(self, drv: Driver):
        missing = [n for n in NEEDED if not drv.has(n)]
        self.params_call = next(
            (n for n in ("cuGraphKernelNodeGetParams_v2", "cuGraphKernelNodeGetParams") if drv.has(n)), ""
        )
        if missing or not self.params_call or not (drv.has("cuFuncGetName") or drv.has("cuKernelGetName")):
            raise BenchError(
                "this CUDA driver cannot name captured kernels (it lacks "
                f"{', '.join(missing) or 'cuGraphKernelNodeGetParams or cuFuncGetName'}; CUDA 12.3 or later has them)"
            )
        lib = drv.lib
        lib.cuStreamBeginCapture_v2.argtypes = [c_void_p, c_int]
        lib.cuStreamEndCapture.argtypes = [c_void_p, POINTER(c_void_p)]
        lib.cuGraphGetNodes.argtypes = [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]
        lib.cuGraphNodeGetType.argtypes = [c_void_p, POINTER(c_int)]
        lib.cuGraphDestroy.argtypes = [c_void_p]
        getattr(lib, self.params_call).argtypes = [c_void_p, POINTER(KernelNodeParams)]
        for name in ("cuFuncGetName", "cuKernelGetName"):
            if drv.has(name):
                getattr(lib, name).argtypes = [POINTER(c_char_p), c_void_p]
        self.drv = drv

    @classmethod
    def open(cls) -> GraphCapture:
        drv = Driver()
        drv.lib.cuInit(0)  # done by the backend already; harmless again
        return cls(drv)

    def kernels(self, stream: int, call: Callable[[], None]) -> list[Captured]:
        """The kernels `call` launches on `stream`, in the order the graph holds them; raises what
        the call raises, or CudaError where the capture was invalidated (a synchronizing call)."""
        s = c_void_p(stream or None)
        self.drv("cuStreamBeginCapture_v2", s, CAPTURE_MODE_RELAXED)
        try:
            call()
        except BaseException:
            self._abandon(s)
            raise
        graph = c_void_p()
        self.drv("cuStreamEndCapture", s, ctypes.pointer(graph))
        try:
            return self._read(graph)
        finally:
            self.drv("cuGraphDestroy", graph)

    def _abandon(self, s: c_void_p) -> None:
        """End a capture whose call failed, dropping its graph (best effort: the call's error is
        the one worth raising)."""
        graph = c_void_p()
        if int(self.drv.lib.cuStreamEndCapture(s, ctypes.pointer(graph))) == 0 and graph.value:
            self.drv.lib.cuGraphDestroy(graph)

    def _read(self, graph: c_void_p) -> list[Captured]:
        n = c_size_t(0)
        self.drv("cuGraphGetNodes", graph, None, ctypes.pointer(n))
        nodes = (c_void_p * max(n.value, 1))()
        self.drv("cuGraphGetNodes", graph, nodes, ctypes.pointer(n))
        out = []
        for i in range(n.value):
            kind = c_int(-1)
            self.drv("cuGraphNodeGetType", c_void_p(nodes[i]), ctypes.pointer(kind))
            if kind.value != NODE_TYPE_KERNEL:
                continue
            p = KernelNodeParams()
            self.drv(self.params_call, c_void_p(nodes[i]), ctypes.pointer(p))
            out.append(
                Captured(
                    self._name(p),
                    (p.gridDimX, p.gridDimY, p.gridDimZ),
                    (p.blockDimX, p.blockDimY, p.blockDimZ),
                )
            )
        return out

    def _name(self, p: KernelNodeParams) -> str:
        name = c_char_p()
        if p.func and self.drv.has("cuFuncGetName"):
            self.drv("cuFuncGetName", ctypes.pointer(name), c_void_p(p.func))
        elif p.kern and self.drv.has("cuKernelGetName"):
            self.drv("cuKernelGetName", ctypes.pointer(name), c_void_p(p.kern))
        return demangle((name.value or b"").decode(errors="replace"))
