"""Per-kernel launch metadata and durations from the CUPTI Activity API (ctypes), and the logic
that splits a stream of kernel records into calls.

A traced call gives, for every kernel it launched: name, grid, block, registers per thread,
static and dynamic shared memory, and GPU start/end timestamps. Record layout, verified with a
sizeof/offsetof probe compiled against cupti_activity.h of the wheel nvidia-cuda-cupti
13.5.25 (records are `__attribute__((packed, aligned(8)))`): the CUpti_ActivityKernel4 ...
CUpti_ActivityKernel13 structs share this prefix, so it is read without knowing which version
the library writes:
    kind@0 (uint32), registersPerThread@6 (uint16), start@16 end@24 completed@32 (uint64),
    deviceId@40 contextId@44 streamId@48, gridX@52 gridY@56 gridZ@60, blockX@64 blockY@68
    blockZ@72 (int32), staticSharedMemory@76 dynamicSharedMemory@80 (int32),
    localMemoryPerThread@84 localMemoryTotal@88 correlationId@92 (uint32), gridId@96 (int64),
    name@104 (const char *)
From CUpti_ActivityKernel8 (CUPTI API version 18, CUDA 11.8) through 13 (checked in the headers of
the wheels nvidia-cuda-cupti 13.0.85, whose CUPTI writes Kernel10, and 13.5.25) the prefix goes on
to clusterX@176 clusterY@180 clusterZ@184 (uint32): the thread-block cluster of an sm_90 launch,
read only when cuptiGetVersion says the records have it.
CUPTI_ACTIVITY_KIND_KERNEL = 3, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10;
cuptiActivityGetNextRecord returns CUPTI_ERROR_MAX_LIMIT_REACHED (12) at a buffer's end;
CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1. Kernel names in these records are mangled C++ names;
they are demangled with libstdc++'s abi::__cxa_demangle (cuDNN's extern "C" names pass through).
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Sequence
from ctypes import POINTER, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import libs
from .errors import CuptiError

CUPTI_ACTIVITY_KIND_KERNEL = 3
CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10
CUPTI_ERROR_MAX_LIMIT_REACHED = 12
CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1
BUFFER_BYTES = 8 << 20
CLUSTER_OFFSET = 176  # clusterX; clusterY and clusterZ follow (uint32 each)
CLUSTER_SINCE = 18  # CUPTI API version of CUDA 11.8, the first with CUpti_ActivityKernel8


class ActivityKernelPrefix(ctypes.Structure):
    """The common prefix of CUpti_ActivityKernel4..13 (packed)."""

    _pack_ = 1
    _fields_ = [
        ("kind", c_uint32),
        ("cacheConfig", c_uint8),
        ("sharedMemoryConfig", c_uint8),
        ("registersPerThread", c_uint16),
        ("partitionedGlobalCacheRequested", c_uint32),
        ("partitionedGlobalCacheExecuted", c_uint32),
        ("start", c_uint64),
        ("end", c_uint64),
        ("completed", c_uint64),
        ("deviceId", c_uint32),
        ("contextId", c_uint32),
        ("streamId", c_uint32),
        ("gridX", c_int32),
        ("gridY", c_int32),
        ("gridZ", c_int32),
        ("blockX", c_int32),
        ("blockY", c_int32),
        ("blockZ", c_int32),
        ("staticSharedMemory", c_int32),
        ("dynamicSharedMemory", c_int32),
        ("localMemoryPerThread", c_uint32),
        ("localMemoryTotal", c_uint32),
        ("correlationId", c_uint32),
        ("gridId", c_int64),
        ("name", c_char_p),
    ]


@dataclass(frozen=True)
class KernelRecord:
    """One kernel launch as a tracer saw it; times in ns on the GPU clock."""

    name: str
    start: int
    end: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int
    smem_static: int
    smem_dynamic: int
    stream: int = 0
    correlation: int = 0
    cluster: tuple[int, int, int] | None = None  # thread-block cluster dims; None: not recorded

    @property
    def duration_ms(self) -> float:
        return (self.end - self.start) / 1e6

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


# ---------------------------------------------------------------- demangling
@lru_cache(maxsize=1)
def _cxa_demangle():
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        fn = lib.__cxa_demangle
    except (OSError, AttributeError):
        return None
    fn.restype = c_void_p
    fn.argtypes = [c_char_p, c_char_p, POINTER(c_size_t), POINTER(c_int)]
    return fn


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """'_Z3fooPf' -> 'foo(float*)'; names that are not mangled come back unchanged."""
    if not name.startswith("_Z"):
        return name
    fn = _cxa_demangle()
    if fn is None:
        return name
    status = c_int(0)
    ptr = fn(name.encode(), None, None, ctypes.pointer(status))
    if status.value != 0 or not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode(errors="replace")
    finally:
        ctypes.CDLL(None).free(c_void_p(ptr))


def kernel_from_address(addr: int, clusters: bool = False) -> KernelRecord:
    """Read one kernel activity record at a memory address; `clusters` where the record
    version has the cluster fields (CUPTI API version >= CLUSTER_SINCE)."""
    r = ActivityKernelPrefix.from_address(addr)
    raw = r.name.decode(errors="replace") if r.name else ""
    cluster = None
    if clusters:
        x, y, z = (int(c_uint32.from_address(addr + CLUSTER_OFFSET + 4 * i).value) for i in range(3))
        cluster = (x, y, z)
    return KernelRecord(
        demangle(raw),
        int(r.start),
        int(r.end),
        (r.gridX, r.gridY, r.gridZ),
        (r.blockX, r.blockY, r.blockZ),
        int(r.registersPerThread),
        int(r.staticSharedMemory),
        int(r.dynamicSharedMemory),
        int(r.streamId),
        int(r.correlationId),
        cluster,
    )


# ---------------------------------------------------------------- the tracer
_REQUEST = ctypes.CFUNCTYPE(None, POINTER(POINTER(c_uint8)), POINTER(c_size_t), POINTER(c_size_t))
_COMPLETE = ctypes.CFUNCTYPE(None, c_void_p, c_uint32, POINTER(c_uint8), c_size_t, c_size_t)


class CuptiTracer:
    """Collects kernel activity records; `take()` returns those completed since the last take."""

    def __init__(self, lib, path: str = ""):
        self.lib, self.path = lib, path
        self._buffers: dict[int, ctypes.Array] = {}
        self._records: list[KernelRecord] = []
        self._lock = threading.Lock()
        self.dropped = 0  # records CUPTI could not store (a full buffer): counted per buffer
        lib.cuptiActivityGetNextRecord.argtypes = [POINTER(c_uint8), c_size_t, POINTER(c_void_p)]
        lib.cuptiGetResultString.argtypes = [c_int, POINTER(c_char_p)]
        lib.cuptiActivityGetNumDroppedRecords.argtypes = [c_void_p, c_uint32, POINTER(c_size_t)]
        version = c_uint32(0)
        self._check(lib.cuptiGetVersion(ctypes.pointer(version)), "cuptiGetVersion")
        self.version = int(version.value)
        self.clusters = self.version >= CLUSTER_SINCE
        self._req = _REQUEST(self._on_request)  # kept alive as long as the tracer
        self._done = _COMPLETE(self._on_complete)
        self._check(lib.cuptiActivityRegisterCallbacks(self._req, self._done), "cuptiActivityRegisterCallbacks")
        self._check(lib.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable")
        self.enabled = True

    @classmethod
    def open(cls) -> CuptiTracer:
        lib, path = libs.load_cupti()
        return cls(lib, path)

    def _check(self, status: int, call: str) -> None:
        status = int(status)
        if status != 0:
            text = c_char_p()
            self.lib.cuptiGetResultString(status, ctypes.pointer(text))
            raise CuptiError(status, (text.value or b"").decode() or f"CUPTI_ERROR_{status}", "", call)

    def _on_request(self, buf, size, max_records) -> None:
        b = (c_uint8 * BUFFER_BYTES)()
        addr = ctypes.addressof(b)
        with self._lock:
            self._buffers[addr] = b
        buf[0] = ctypes.cast(b, POINTER(c_uint8))
        size[0] = BUFFER_BYTES
        max_records[0] = 0

    def _on_complete(self, ctx, stream, buf, size, valid) -> None:
        addr = ctypes.addressof(buf.contents)
        rec = c_void_p()
        out = []
        while True:
            status = int(self.lib.cuptiActivityGetNextRecord(buf, valid, ctypes.pointer(rec)))
            if status != 0 or rec.value is None:
                break
            kind = c_uint32.from_address(rec.value).value
            if kind in (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL):
                out.append(kernel_from_address(rec.value, self.clusters))
        dropped = c_size_t(0)
        if int(self.lib.cuptiActivityGetNumDroppedRecords(ctx, stream, ctypes.pointer(dropped))) != 0:
            dropped.value = 0
        with self._lock:
            self._records.extend(out)
            self.dropped += int(dropped.value)
            self._buffers.pop(addr, None)

    def take(self) -> list[KernelRecord]:
        """Flush (call after synchronizing the device) and return the records, oldest first."""
        self._check(self.lib.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll")
        with self._lock:
            out, self._records = self._records, []
        return sorted(out, key=lambda r: (r.start, r.correlation))

    def close(self) -> None:
        if self.enabled:
            self.enabled = False
            try:
                self.lib.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
                self.lib.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            except Exception:  # best effort at shutdown
                pass


# ---------------------------------------------------------------- records -> calls
def split_calls(records: Sequence[KernelRecord], calls: int) -> list[list[KernelRecord]] | None:
    """Split the kernel records of `calls` identical calls, made one after another by one host
    thread after their warm-up, into one list per call.

    The records go in launch order: CUPTI takes a record's correlation id on the host, as the
    launch is made, so one call's kernels stay together even where a library runs some of them
    on streams of its own and they overlap on the GPU. Each call launched the same kernels, so
    the split is the even share, and the calls must repeat the same names; None where they do
    not (the caller records the call without per-kernel rows). The caller keeps the warm-up
    calls, whose first may add one-off set-up kernels, out of `records`.

    There is no search for a shorter repeating period: cuDNN loops some algorithms over chunks
    of the batch, the chunk's kernels repeat too, and a period search took the chunk for the
    call (its span then covered one chunk, up to 224x short).
    """
    n = len(records)
    if calls <= 0 or n == 0 or n % calls:
        return None
    k = n // calls
    ordered = sorted(records, key=lambda r: (r.correlation, r.start))
    per_call = [ordered[i * k : (i + 1) * k] for i in range(calls)]
    names = [r.name for r in per_call[0]]
    return per_call if all([r.name for r in c] == names for c in per_call[1:]) else None


@dataclass(frozen=True)
class KernelSummary:
    """One kernel position of a call: its launch (from the last call) and its median duration."""

    index: int
    record: KernelRecord
    median_ms: float


def summarize(per_call: list[list[KernelRecord]], timed: int) -> list[KernelSummary]:
    """Per kernel position: metadata of the last call, median duration over the last `timed` calls."""
    use = per_call[-timed:] if timed > 0 else per_call
    out = []
    for j, rec in enumerate(use[-1]):
        d = [c[j].duration_ms for c in use if j < len(c)]
        out.append(KernelSummary(j, rec, float(np.median(d)) if d else math.nan))
    return out


def span_ms(per_call: list[list[KernelRecord]], timed: int) -> float:
    """Median over the last `timed` calls of the call's GPU span (first kernel start to last
    kernel end), ms: the call's time without the host's enqueue gaps before its first kernel."""
    use = per_call[-timed:] if timed > 0 else per_call
    spans = [(max(k.end for k in c) - min(k.start for k in c)) / 1e6 for c in use if c]
    return float(np.median(spans)) if spans else math.nan


def busy(per_call: list[list[KernelRecord]], timed: int) -> tuple[float, float]:
    """Median over the last `timed` calls of (the time some kernel of the call ran, ms: the union
    of their intervals; the idle gaps between them). The span less the idle time: where the host
    enqueues short kernels more slowly than the GPU runs them, the span holds idle gaps that come
    and go between runs, which seer.data.records.harness.busy_ms replaces by the GPU's own gap."""
    use = [c for c in (per_call[-timed:] if timed > 0 else per_call) if c]
    if not use:
        return math.nan, math.nan
    ran, gaps = [], []
    for c in use:
        total, idle, end = 0, 0, None
        for k in sorted(c, key=lambda k: (k.start, k.end)):
            if end is None or k.start > end:  # an idle gap before this kernel (or the first)
                idle += end is not None
                total += k.end - k.start
                end = k.end
            elif k.end > end:  # overlaps what ran: only its tail is new
                total += k.end - end
                end = k.end
        ran.append(total / 1e6)
        gaps.append(idle)
    return float(np.median(ran)), float(np.median(gaps))
