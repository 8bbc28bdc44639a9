"""cudnn_bench.runtime's driver backend (ctypes on libcuda.so.1) against a fake driver library:
argument marshalling, the CUDA 13 event API, and CUresult -> named errors."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cudnn_bench import errors as E
from cudnn_bench import runtime as R

NAMES = {2: b"CUDA_ERROR_OUT_OF_MEMORY", 100: b"CUDA_ERROR_NO_DEVICE", 700: b"CUDA_ERROR_ILLEGAL_ADDRESS",
         1: b"CUDA_ERROR_INVALID_VALUE"}


class Fn:
    def __init__(self, name, impl, log):
        self.name, self.impl, self.log = name, impl, log

    def __call__(self, *args):
        self.log.append((self.name, args))
        return self.impl(*args)


class FakeCuda:
    """The driver functions the backend calls; statuses to return can be injected per name."""

    def __init__(self, fail: dict | None = None, elapsed_v2: bool = True):
        self.calls: list = []
        self.fail = fail or {}
        self._keep = []
        attrs = {13: 1980000, 16: 132, 38: 50 << 20, 75: 9, 76: 0}

        def put(p, v):
            p.contents.value = v
            return 0

        def text(pp, b):
            self._keep.append(b)
            pp[0] = b
            return 0

        impls = {
            "cuGetErrorName": lambda st, pp: text(pp, NAMES.get(st, b"CUDA_ERROR_UNKNOWN")),
            "cuGetErrorString": lambda st, pp: text(pp, b"fake driver text"),
            "cuInit": lambda flags: 0,
            "cuDeviceGetCount": lambda p: put(p, 1),
            "cuDeviceGet": lambda p, i: put(p, i),
            "cuDevicePrimaryCtxRetain": lambda p, d: put(p, 0xC0),
            "cuCtxSetCurrent": lambda c: 0,
            "cuMemAlloc_v2": lambda p, n: put(p, 0x7000),
            "cuMemFree_v2": lambda p: 0,
            "cuMemcpyHtoD_v2": lambda d, s, n: 0,
            "cuMemsetD8Async": lambda d, v, n, s: 0,
            "cuStreamCreate": lambda p, f: put(p, 0x5100),
            "cuEventCreate": lambda p, f: put(p, 0xE0 + len(self.calls)),
            "cuEventRecord": lambda e, s: 0,
            "cuEventSynchronize": lambda e: 0,
            "cuCtxSynchronize": lambda: 0,
            "cuMemGetInfo_v2": lambda f, t: put(f, 10) or put(t, 20),
            "cuDeviceGetAttribute": lambda p, a, d: put(p, attrs[a]),
            "cuDeviceGetName": lambda buf, n, d: ctypes.memmove(buf, b"NVIDIA H100 80GB HBM3\0", 22) and 0,
            "cuDeviceTotalMem_v2": lambda p, d: put(p, 80 << 30),
            "cuDriverGetVersion": lambda p: put(p, 13000),
            "cuDeviceGetPCIBusId": lambda buf, n, d: ctypes.memmove(buf, b"0000:01:00.0\0", 13) and 0,
            ("cuEventElapsedTime_v2" if elapsed_v2 else "cuEventElapsedTime"): lambda p, a, b: put(p, 1.25),
        }
        for name, impl in impls.items():
            def wrapped(*args, _impl=impl, _name=name):
                return self.fail[_name] if _name in self.fail else _impl(*args)
            setattr(self, name, Fn(name, wrapped, self.calls))

    def named(self, name):
        return [a for n, a in self.calls if n == name]


def test_driver_backend_marshalling(monkeypatch):
    monkeypatch.setattr(R.Nvml, "open", classmethod(lambda cls: None))
    lib = FakeCuda()
    be = R.DriverBackend(0, lib=lib)
    assert lib.named("cuInit") == [(0,)] and lib.named("cuCtxSetCurrent")[0][0].value == 0xC0
    ptr = be.alloc(1 << 20)
    assert ptr == 0x7000 and lib.named("cuMemAlloc_v2")[0][1] == 1 << 20
    s = be.new_stream()
    assert s == 0x5100 and lib.named("cuStreamCreate")[0][1] == 1  # non-blocking
    be.memset_async(ptr, 300, 4096, s)
    (d, v, n, st), = lib.named("cuMemsetD8Async")
    assert (d, v, n, st.value) == (0x7000, 300 & 0xFF, 4096, 0x5100)
    e0, e1 = be.new_event(), be.new_event()
    assert lib.named("cuEventCreate")[0][1] == 0  # timing enabled
    be.record(e0, s)
    assert be.elapsed_ms(e0, e1) == 1.25 and lib.named("cuEventElapsedTime_v2")
    be.upload(ptr, np.zeros(8, np.float32))
    assert lib.named("cuMemcpyHtoD_v2")[0][2] == 32
    info = be.device_info()
    assert (info.name, info.cc, info.sms, info.l2_bytes, info.cuda_driver_api) == \
        ("NVIDIA H100 80GB HBM3", "9.0", 132, 50 << 20, "13.0")
    assert info.max_clock_mhz == 1980.0 and info.pci_bus_id == "0000:01:00.0"
    assert be.mem_info() == (10, 20)


def test_older_drivers_without_the_v2_event_api(monkeypatch):
    lib = FakeCuda(elapsed_v2=False)
    be = R.DriverBackend(0, lib=lib)
    assert be.elapsed_ms(be.new_event(), be.new_event()) == 1.25


@pytest.mark.parametrize("fail,call,exc", [({"cuMemAlloc_v2": 2}, "alloc", E.DeviceOutOfMemory),
                                           ({"cuCtxSynchronize": 700}, "synchronize", E.FatalGPUError),
                                           ({"cuEventSynchronize": 1}, "sync", E.CudaError)])
def test_driver_errors_are_named(fail, call, exc):
    be = R.DriverBackend(0, lib=FakeCuda(fail))
    with pytest.raises(exc) as info:
        {"alloc": lambda: be.alloc(8), "synchronize": be.synchronize,
         "sync": lambda: be.sync_event(be.new_event())}[call]()
    assert NAMES[list(fail.values())[0]].decode() in str(info.value)


def test_no_device_is_no_gpu_error():
    with pytest.raises(E.NoGPUError, match="CUDA_ERROR_NO_DEVICE"):
        R.DriverBackend(0, lib=FakeCuda({"cuInit": 100}))
    with pytest.raises(E.NoGPUError, match="number 3"):
        R.DriverBackend(3, lib=FakeCuda())


def test_unknown_backend():
    with pytest.raises(E.BackendError):
        R.open_backend("opencl")
