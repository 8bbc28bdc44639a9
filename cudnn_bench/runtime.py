"""The GPU runtime layer: device memory, a stream, events. Small and swappable.

Three backends implement the same few methods; cuDNN and cuBLASLt are called through the same
ctypes bindings whichever is used, with plain integer device pointers and stream handles:
- `pycuda` (the primary one): `pycuda.autoprimaryctx` (the device's primary context, shared with
  cuDNN and cuBLAS), `pycuda.driver.Event`, `memset_d8_async` for the L2 flush.
- `driver`: the CUDA driver API through ctypes on libcuda.so.1 (present wherever the NVIDIA
  driver is; needs no Python package), also on the primary context.
- `cupy`: CuPy's runtime API (the primary context too), for machines where pycuda does not build.
`auto` picks pycuda if it imports, else cupy, else driver. Every import of a GPU module happens
inside `open_backend`, never at import time.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint, c_void_p
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from . import libs
from .errors import BackendError, CudaError, DeviceOutOfMemory, FatalGPUError, NoGPUError

BACKENDS = ("auto", "pycuda", "driver", "cupy")

# CUresult values (cuda.h) the harness treats specially
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NO_DEVICE = 100
# errors after which the context is unusable (cuda.h: 700 ILLEGAL_ADDRESS ... 719 LAUNCH_FAILED)
STICKY = {700, 701, 702, 714, 715, 716, 717, 718, 719, 720, 999}
# CUdevice_attribute (cuda.h of CUDA 13.0)
ATTR_CLOCK_RATE, ATTR_SM_COUNT, ATTR_L2_CACHE_SIZE = 13, 16, 38
ATTR_CC_MAJOR, ATTR_CC_MINOR = 75, 76


@dataclass
class DeviceInfo:
    """What the harness needs to know of the GPU, read at run time."""

    ordinal: int
    name: str
    cc: str
    sms: int
    l2_bytes: int
    max_clock_mhz: float
    mem_total: int
    driver_version: str  # NVML's "580.159.04" where available, else the CUDA driver API version
    cuda_driver_api: str  # the CUDA version the driver supports, "13.0"
    pci_bus_id: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class Backend:
    """Interface of a backend; pointers, streams and events are what the backend returns."""

    name = "base"

    def alloc(self, nbytes: int) -> int:
        raise NotImplementedError

    def free(self, ptr: int) -> None:
        raise NotImplementedError

    def upload(self, ptr: int, host: np.ndarray) -> None:
        raise NotImplementedError

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: int) -> None:
        raise NotImplementedError

    def new_stream(self) -> int:
        raise NotImplementedError

    def new_event(self):
        raise NotImplementedError

    def record(self, event, stream: int) -> None:
        raise NotImplementedError

    def sync_event(self, event) -> None:
        raise NotImplementedError

    def elapsed_ms(self, start, end) -> float:
        raise NotImplementedError

    def synchronize(self) -> None:
        raise NotImplementedError

    def mem_info(self) -> tuple[int, int]:
        raise NotImplementedError

    def device_info(self) -> DeviceInfo:
        raise NotImplementedError

    def close(self) -> None:
        pass


# ====================================================================== the driver API (ctypes)
class Driver:
    """Checked calls into libcuda.so.1; used by the `driver` backend and for device facts."""

    def __init__(self, lib=None):
        self.lib = lib if lib is not None else libs.load_driver()
        self.lib.cuGetErrorName.argtypes = [c_int, POINTER(c_char_p)]
        self.lib.cuGetErrorString.argtypes = [c_int, POINTER(c_char_p)]

    def error(self, status: int, call: str) -> Exception:
        name, text = c_char_p(), c_char_p()
        self.lib.cuGetErrorName(int(status), ctypes.pointer(name))
        self.lib.cuGetErrorString(int(status), ctypes.pointer(text))
        n = (name.value or b"CUDA_ERROR_%d" % status).decode()
        t = (text.value or b"").decode()
        if status == CUDA_ERROR_OUT_OF_MEMORY:
            return DeviceOutOfMemory(f"CUDA driver {n} in {call}: {t}")
        if status in STICKY:
            return FatalGPUError(
                f"CUDA driver {n} ({status}) in {call}: {t}; the context is "
                "unusable, so the run stops here (a rerun resumes)"
            )
        return CudaError(status, n, t, call)

    def __call__(self, name: str, *args) -> None:
        fn = getattr(self.lib, name)
        status = int(fn(*args))
        if status != 0:
            raise self.error(status, name)

    def has(self, name: str) -> bool:
        return hasattr(self.lib, name)


def _init_driver(ordinal: int, lib=None) -> tuple[Driver, int]:
    drv = Driver(lib)
    status = int(drv.lib.cuInit(0))
    if status != 0:
        e = drv.error(status, "cuInit")
        raise NoGPUError(f"no usable CUDA GPU: {e}")
    count = c_int(0)
    drv("cuDeviceGetCount", ctypes.pointer(count))
    if count.value <= ordinal:
        raise NoGPUError(f"no CUDA GPU number {ordinal} (this machine has {count.value})")
    dev = c_int(0)
    drv("cuDeviceGet", ctypes.pointer(dev), int(ordinal))
    return drv, dev.value


def read_device_info(drv: Driver, dev: int, ordinal: int) -> DeviceInfo:
    """Device facts through the driver API (+ NVML for the driver version string)."""

    def attr(a: int) -> int:
        v = c_int(0)
        drv("cuDeviceGetAttribute", ctypes.pointer(v), int(a), int(dev))
        return v.value

    buf = ctypes.create_string_buffer(256)
    drv("cuDeviceGetName", buf, 256, int(dev))
    total = c_size_t(0)
    drv.lib.cuDeviceTotalMem_v2.argtypes = [POINTER(c_size_t), c_int]
    drv("cuDeviceTotalMem_v2", ctypes.pointer(total), int(dev))
    ver = c_int(0)
    drv("cuDriverGetVersion", ctypes.pointer(ver))
    bus = ctypes.create_string_buffer(64)
    try:
        drv("cuDeviceGetPCIBusId", bus, 64, int(dev))
    except Exception:  # optional
        pass
    pci = bus.value.decode()
    nvml = Nvml.open()
    driver = nvml.driver_version() if nvml else ""
    return DeviceInfo(
        ordinal=ordinal,
        name=buf.value.decode(),
        cc=f"{attr(ATTR_CC_MAJOR)}.{attr(ATTR_CC_MINOR)}",
        sms=attr(ATTR_SM_COUNT),
        l2_bytes=attr(ATTR_L2_CACHE_SIZE),
        max_clock_mhz=attr(ATTR_CLOCK_RATE) / 1000.0,
        mem_total=int(total.value),
        driver_version=driver or f"cuda-driver-api {ver.value // 1000}.{ver.value % 1000 // 10}",
        cuda_driver_api=f"{ver.value // 1000}.{ver.value % 1000 // 10}",
        pci_bus_id=pci,
    )


class DriverBackend(Backend):
    """The driver API on the device's primary context, through ctypes only."""

    name = "driver"

    def __init__(self, ordinal: int = 0, lib=None):
        self.drv, self.dev = _init_driver(ordinal, lib)
        self.ordinal = ordinal
        lib = self.drv.lib
        lib.cuDevicePrimaryCtxRetain.argtypes = [POINTER(c_void_p), c_int]
        lib.cuCtxSetCurrent.argtypes = [c_void_p]
        lib.cuMemAlloc_v2.argtypes = [POINTER(ctypes.c_uint64), c_size_t]
        lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        lib.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, c_void_p, c_size_t]
        lib.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, c_size_t, c_void_p]
        lib.cuStreamCreate.argtypes = [POINTER(c_void_p), c_uint]
        lib.cuEventCreate.argtypes = [POINTER(c_void_p), c_uint]
        lib.cuEventRecord.argtypes = [c_void_p, c_void_p]
        lib.cuEventSynchronize.argtypes = [c_void_p]
        lib.cuMemGetInfo_v2.argtypes = [POINTER(c_size_t), POINTER(c_size_t)]
        # CUDA 13's cuda.h maps cuEventElapsedTime to cuEventElapsedTime_v2; older drivers
        # export only the first.
        self._elapsed = "cuEventElapsedTime_v2" if self.drv.has("cuEventElapsedTime_v2") else "cuEventElapsedTime"
        getattr(lib, self._elapsed).argtypes = [POINTER(c_float), c_void_p, c_void_p]
        self.ctx = c_void_p()
        self.drv("cuDevicePrimaryCtxRetain", ctypes.pointer(self.ctx), self.dev)
        self.drv("cuCtxSetCurrent", self.ctx)

    def alloc(self, nbytes: int) -> int:
        p = ctypes.c_uint64(0)
        self.drv("cuMemAlloc_v2", ctypes.pointer(p), int(nbytes))
        return int(p.value)

    def free(self, ptr: int) -> None:
        self.drv("cuMemFree_v2", int(ptr))

    def upload(self, ptr: int, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        self.drv("cuMemcpyHtoD_v2", int(ptr), host.ctypes.data_as(c_void_p), host.nbytes)

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: int) -> None:
        self.drv("cuMemsetD8Async", int(ptr), int(value) & 0xFF, int(nbytes), c_void_p(int(stream) or None))

    def new_stream(self) -> int:
        s = c_void_p()
        self.drv("cuStreamCreate", ctypes.pointer(s), 1)  # CU_STREAM_NON_BLOCKING
        return int(s.value or 0)

    def new_event(self):
        e = c_void_p()
        self.drv("cuEventCreate", ctypes.pointer(e), 0)  # CU_EVENT_DEFAULT: timing enabled
        return e

    def record(self, event, stream: int) -> None:
        self.drv("cuEventRecord", event, c_void_p(int(stream) or None))

    def sync_event(self, event) -> None:
        self.drv("cuEventSynchronize", event)

    def elapsed_ms(self, start, end) -> float:
        ms = c_float(0)
        self.drv(self._elapsed, ctypes.pointer(ms), start, end)
        return float(ms.value)

    def synchronize(self) -> None:
        self.drv("cuCtxSynchronize")

    def mem_info(self) -> tuple[int, int]:
        free, total = c_size_t(0), c_size_t(0)
        self.drv("cuMemGetInfo_v2", ctypes.pointer(free), ctypes.pointer(total))
        return int(free.value), int(total.value)

    def device_info(self) -> DeviceInfo:
        return read_device_info(self.drv, self.dev, self.ordinal)


# ====================================================================== pycuda
class PycudaBackend(Backend):
    """pycuda on the primary context (docs/reference.md, pycuda)."""

    name = "pycuda"

    def __init__(self, ordinal: int = 0):
        self.drv_api, dev = _init_driver(ordinal)  # a clear NoGPUError before pycuda's own
        self.dev, self.ordinal = dev, ordinal
        os.environ["CUDA_DEVICE"] = str(ordinal)  # read by pycuda.autoprimaryctx
        try:
            import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context)
            import pycuda.driver as cuda
        except Exception as exc:  # ImportError, or pycuda's own init errors
            raise BackendError(
                f"pycuda is not usable here ({exc}); build it as "
                "cudnn_bench/GPU_RUN.md says, or use --backend driver or cupy"
            ) from None
        self.cuda = cuda
        self._allocs: dict[int, Any] = {}  # pycuda DeviceAllocation by pointer
        self._streams: list = []

    def _wrap(self, exc: Exception, call: str) -> Exception:
        text = str(exc)
        if isinstance(exc, getattr(self.cuda, "MemoryError", ())) or "out of memory" in text.lower():
            return DeviceOutOfMemory(f"pycuda {call}: {text}")
        if any(s in text for s in ("illegal", "launch failed", "unspecified")):
            return FatalGPUError(f"pycuda {call}: {text}; the context is unusable (a rerun resumes)")
        return CudaError(-1, type(exc).__name__, text, call)

    def alloc(self, nbytes: int) -> int:
        try:
            a = self.cuda.mem_alloc(int(nbytes))
        except self.cuda.Error as exc:
            raise self._wrap(exc, "mem_alloc") from None
        self._allocs[int(a)] = a
        return int(a)

    def free(self, ptr: int) -> None:
        a = self._allocs.pop(int(ptr), None)
        if a is not None:
            a.free()

    def upload(self, ptr: int, host: np.ndarray) -> None:
        self.cuda.memcpy_htod(int(ptr), np.ascontiguousarray(host))

    def memset_async(self, ptr: int, value: int, nbytes: int, stream) -> None:
        self.cuda.memset_d8_async(int(ptr), int(value) & 0xFF, int(nbytes), self._stream_obj(stream))

    def _stream_obj(self, handle: int):
        for s in self._streams:
            if int(s.handle) == int(handle):
                return s
        return None

    def new_stream(self) -> int:
        s = self.cuda.Stream()
        self._streams.append(s)
        return int(s.handle)

    def new_event(self):
        return self.cuda.Event()

    def record(self, event, stream: int) -> None:
        event.record(self._stream_obj(stream))

    def sync_event(self, event) -> None:
        try:
            event.synchronize()
        except self.cuda.Error as exc:
            raise self._wrap(exc, "Event.synchronize") from None

    def elapsed_ms(self, start, end) -> float:
        return float(start.time_till(end))

    def synchronize(self) -> None:
        try:
            self.cuda.Context.synchronize()
        except self.cuda.Error as exc:
            raise self._wrap(exc, "Context.synchronize") from None

    def mem_info(self) -> tuple[int, int]:
        free, total = self.cuda.mem_get_info()
        return int(free), int(total)

    def device_info(self) -> DeviceInfo:
        return read_device_info(self.drv_api, self.dev, self.ordinal)


# ====================================================================== CuPy
class CupyBackend(Backend):
    """CuPy's runtime API (raw cudaMalloc, not CuPy's pool), on the primary context."""

    name = "cupy"

    def __init__(self, ordinal: int = 0):
        self.drv_api, dev = _init_driver(ordinal)
        self.dev, self.ordinal = dev, ordinal
        try:
            import cupy

            cupy.cuda.Device(ordinal).use()
        except Exception as exc:  # ImportError, or CuPy's CUDA errors
            raise BackendError(f"CuPy is not usable here ({exc}); use --backend pycuda or driver") from None
        self.cp = cupy
        self.rt = cupy.cuda.runtime
        self._streams: dict[int, object] = {}

    def _wrap(self, exc: Exception, call: str) -> Exception:
        text = str(exc)
        if "memory" in text.lower() and "out" in text.lower():
            return DeviceOutOfMemory(f"CuPy {call}: {text}")
        if any(s in text for s in ("illegal", "launch failed", "unspecified")):
            return FatalGPUError(f"CuPy {call}: {text}; the context is unusable (a rerun resumes)")
        return CudaError(-1, type(exc).__name__, text, call)

    def alloc(self, nbytes: int) -> int:
        try:
            return int(self.rt.malloc(int(nbytes)))
        except self.rt.CUDARuntimeError as exc:
            raise self._wrap(exc, "cudaMalloc") from None

    def free(self, ptr: int) -> None:
        self.rt.free(int(ptr))

    def upload(self, ptr: int, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        self.rt.memcpy(int(ptr), host.ctypes.data, host.nbytes, self.rt.memcpyHostToDevice)

    def memset_async(self, ptr: int, value: int, nbytes: int, stream: int) -> None:
        self.rt.memsetAsync(int(ptr), int(value) & 0xFF, int(nbytes), int(stream))

    def new_stream(self) -> int:
        s = self.cp.cuda.Stream(non_blocking=True)
        self._streams[int(s.ptr)] = s
        return int(s.ptr)

    def new_event(self):
        return self.cp.cuda.Event()

    def record(self, event, stream: int) -> None:
        event.record(self._streams.get(int(stream)))

    def sync_event(self, event) -> None:
        try:
            event.synchronize()
        except self.rt.CUDARuntimeError as exc:
            raise self._wrap(exc, "cudaEventSynchronize") from None

    def elapsed_ms(self, start, end) -> float:
        return float(self.cp.cuda.get_elapsed_time(start, end))

    def synchronize(self) -> None:
        try:
            self.rt.deviceSynchronize()
        except self.rt.CUDARuntimeError as exc:
            raise self._wrap(exc, "cudaDeviceSynchronize") from None

    def mem_info(self) -> tuple[int, int]:
        free, total = self.rt.memGetInfo()
        return int(free), int(total)

    def device_info(self) -> DeviceInfo:
        return read_device_info(self.drv_api, self.dev, self.ordinal)


def open_backend(name: str = "auto", ordinal: int = 0) -> Backend:
    """The backend by name; `auto` tries pycuda, then CuPy, then the bare driver API."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name == "pycuda":
        return PycudaBackend(ordinal)
    if name == "driver":
        return DriverBackend(ordinal)
    if name == "cupy":
        return CupyBackend(ordinal)
    for cls in (PycudaBackend, CupyBackend):
        try:
            return cls(ordinal)
        except BackendError:
            continue
    return DriverBackend(ordinal)


# ====================================================================== NVML: driver version, SM clock
class Nvml:
    """The SM clock (MHz) and the driver version through NVML (libnvidia-ml.so.1)."""

    NVML_CLOCK_SM = 1

    def __init__(self, lib):
        self.lib = lib
        self.handles: dict[str, c_void_p] = {}

    @classmethod
    def open(cls) -> Nvml | None:
        lib = libs.load_nvml()
        if lib is None:
            return None
        init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
        if init is None or int(init()) != 0:
            return None
        return cls(lib)

    def driver_version(self) -> str:
        buf = ctypes.create_string_buffer(96)
        if int(self.lib.nvmlSystemGetDriverVersion(buf, 96)) != 0:
            return ""
        return buf.value.decode()

    def _handle(self, pci_bus_id: str, index: int) -> c_void_p | None:
        key = pci_bus_id or str(index)
        if key in self.handles:
            return self.handles[key]
        h = c_void_p()
        ok = False
        if pci_bus_id and hasattr(self.lib, "nvmlDeviceGetHandleByPciBusId_v2"):
            ok = int(self.lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.pointer(h))) == 0
        if not ok:
            ok = int(self.lib.nvmlDeviceGetHandleByIndex_v2(int(index), ctypes.pointer(h))) == 0
        if not ok:
            return None
        self.handles[key] = h
        return h

    def sm_clock_mhz(self, pci_bus_id: str = "", index: int = 0) -> float:
        h = self._handle(pci_bus_id, index)
        if h is None:
            return float("nan")
        mhz = c_uint(0)
        if int(self.lib.nvmlDeviceGetClockInfo(h, self.NVML_CLOCK_SM, ctypes.pointer(mhz))) != 0:
            return float("nan")
        return float(mhz.value)


# ====================================================================== device buffers
PATTERN_BYTES = 16 << 20  # the random pattern is made once on the host and tiled over a buffer


def random_pattern(dtype: str, nbytes: int = PATTERN_BYTES, seed: int = 0) -> np.ndarray:
    """Random non-zero values (|v| in [0.5, 1.5), random sign) as raw bytes of `dtype`.

    Non-zero so no kernel takes a shortcut on zeros; well inside FP16's range for sums of
    thousands of products. bfloat16 is the upper half of float32 (numpy has no bfloat16).
    """
    rng = np.random.default_rng(seed)
    n = nbytes // (4 if dtype == "float32" else 2)
    v = (rng.random(n, dtype=np.float32) + np.float32(0.5)) * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float32)
    if dtype == "float32":
        return v.view(np.uint8)
    if dtype == "float16":
        return v.astype(np.float16).view(np.uint8)
    if dtype == "bfloat16":
        return (v.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    raise ValueError(f"unknown dtype {dtype}")


class BufferPool:
    """Named device buffers that grow on demand and keep their random contents.

    Configurations reuse the buffers, so nothing is allocated or filled per configuration
    unless a larger one arrives; `reserve` sizes them up front from the plan.
    """

    def __init__(self, backend: Backend, seed: int = 0):
        self.backend, self.seed = backend, seed
        self.ptr: dict[str, int] = {}
        self.size: dict[str, int] = {}
        self.dtype: dict[str, str | None] = {}
        self._patterns: dict[str, np.ndarray] = {}

    def _pattern(self, dtype: str) -> np.ndarray:
        if dtype not in self._patterns:
            self._patterns[dtype] = random_pattern(dtype, seed=self.seed)
        return self._patterns[dtype]

    def _fill(self, name: str, dtype: str) -> None:
        pat = self._pattern(dtype)
        ptr, size = self.ptr[name], self.size[name]
        for off in range(0, size, pat.nbytes):
            n = min(pat.nbytes, size - off)
            self.backend.upload(ptr + off, pat[:n])
        self.dtype[name] = dtype

    def get(self, name: str, nbytes: int, dtype: str | None = None) -> int:
        """A device pointer to at least nbytes (filled with random `dtype` values if given)."""
        nbytes = max(int(nbytes), 256)
        if self.size.get(name, 0) < nbytes:
            self.release(name)
            self.ptr[name] = self.backend.alloc(nbytes)  # DeviceOutOfMemory propagates
            self.size[name] = nbytes
            self.dtype[name] = None
        if dtype is not None and self.dtype.get(name) != dtype:
            self._fill(name, dtype)
        return self.ptr[name]

    def release(self, name: str) -> None:
        if name in self.ptr:
            self.backend.free(self.ptr.pop(name))
            self.size.pop(name, None)
            self.dtype.pop(name, None)

    def close(self) -> None:
        for name in list(self.ptr):
            self.release(name)
