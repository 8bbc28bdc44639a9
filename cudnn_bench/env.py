"""The GPU environment a measurement runs in, opened once per process.

`open_env` loads everything GPU (backend, cuDNN, cuBLASLt, CUPTI, NVML) and stops with one
sentence where a part is missing; the collection and the ncu worker both use it. Tests build an
`Env` from fakes instead, and `CUDNN_BENCH_SIMULATE` makes `open_env` do the same, so scripts can
be rehearsed on a CPU: it names a factory as `module:function` (called with `tracer=`), and `1`
names the repository's fakes (`tests.fakes:fake_env`, importable from the repository root).
The package itself holds no fake.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from . import libs, runtime
from .capture import Capture
from .configs import TorchConfig
from .cublaslt import CublasLt
from .cudnn import Cudnn
from .cupti import CuptiTracer, KernelRecord
from .errors import BenchError, CublasError, CudnnError, NoGPUError
from .memory_ops import TorchOps
from .options import Options
from .runtime import Backend, BufferPool, DeviceInfo
from .timing import EventPool, Flusher


class Tracer(Protocol):
    """Kernel records of the calls made since the last `take` (cupti.CuptiTracer or a fake)."""

    def take(self) -> list[KernelRecord]: ...

    def close(self) -> None: ...


class MemoryOps(Protocol):
    """Memory-bound calls on the harness's stream (memory_ops.TorchOps or a fake)."""

    def make(self, cfg: TorchConfig, dtype: str) -> Callable[[], None]: ...

    def release(self) -> None: ...


class ClockReader(Protocol):
    """The SM clock in MHz (runtime.Nvml or a fake)."""

    def sm_clock_mhz(self, pci_bus_id: str = "", index: int = 0) -> float: ...


@dataclass
class Env:
    """Everything a measurement needs; built by `open_env` on a GPU, or from fakes in tests."""

    backend: Backend
    device: DeviceInfo
    stream: int
    pool: BufferPool
    flusher: Flusher | None
    events: EventPool
    dnn: Cudnn | None = None
    dnn_handle: object = None
    lt: CublasLt | None = None
    lt_handle: object = None
    tracer: Tracer | None = None
    nvml: ClockReader | None = None
    torch_ops: MemoryOps | None = None  # PyTorch on this stream (memory_ops.TorchOps), for memory-bound suites
    capture: Capture | None = None  # kernels of a call learnt without running it (a fake's; the census opens the GPU's)
    versions: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def cudnn(self) -> tuple[Cudnn, object]:
        """cuDNN and its handle; opened only where the suites hold a convolution."""
        if self.dnn is None:
            raise BenchError("cuDNN was not opened for this run (no convolution suite was asked for)")
        return self.dnn, self.dnn_handle

    def cublaslt(self) -> tuple[CublasLt, object]:
        """cuBLASLt and its handle; opened only where the suites hold a GEMM."""
        if self.lt is None:
            raise BenchError("cuBLASLt was not opened for this run (no GEMM suite was asked for)")
        return self.lt, self.lt_handle

    def memory_ops(self) -> MemoryOps:
        """PyTorch's memory-bound kernels on the harness's stream; opened where a suite has them."""
        if self.torch_ops is None:
            raise BenchError("PyTorch was not opened for this run (no memory-bound suite was asked for)")
        return self.torch_ops

    def sm_clock_mhz(self) -> float:
        if self.nvml is None:
            return math.nan
        try:
            return float(self.nvml.sm_clock_mhz(self.device.pci_bus_id, self.device.ordinal))
        except Exception:  # a clock reading is never worth a failed config
            return math.nan

    def close(self) -> None:
        """Release every part, each on its own: closing is best effort."""
        steps: list[Callable[[], object]] = []
        if self.tracer is not None:
            steps.append(self.tracer.close)
        if self.dnn is not None and self.dnn_handle is not None:
            steps.append(partial(self.dnn.destroy_handle, self.dnn_handle))
        if self.lt is not None and self.lt_handle is not None:
            steps.append(partial(self.lt.destroy_handle, self.lt_handle))
        if self.flusher is not None:
            steps.append(self.flusher.close)
        steps += [self.pool.close, self.backend.close]
        for step in steps:
            try:
                step()
            except Exception:  # closing is best effort
                pass


# ====================================================================== simulation
SIMULATE = "CUDNN_BENCH_SIMULATE"  # module:function making a simulated Env, to rehearse scripts on a CPU
SIMULATE_DEFAULT = "tests.fakes:fake_env"  # what CUDNN_BENCH_SIMULATE=1 names (from the repository root)


def simulation() -> str:
    """The value of CUDNN_BENCH_SIMULATE, or "" where it is unset, empty or 0 (a real GPU)."""
    value = os.environ.get(SIMULATE, "").strip()
    return "" if value in ("", "0") else value


def simulated_env(value: str, trace: bool) -> Env:
    """The Env of the factory `value` names (module:function, or 1 for the repository's fakes),
    under a device name no real GPU has, so its rows never mix with real data."""
    factory = SIMULATE_DEFAULT if value == "1" else value
    module, _, name = factory.partition(":")
    try:
        if not (module and name):
            raise ValueError("not module:function")
        make = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise BenchError(
            f"{SIMULATE}={value} names no simulated GPU ({exc}); give module:function of a function that "
            f"makes an Env, or 1 for {SIMULATE_DEFAULT} from the repository root"
        ) from None
    env: Env = make(tracer=trace)
    env.device.name = "Simulated GPU"
    env.notes.append(f"{SIMULATE}={value}: a simulated GPU, not a measurement")
    return env


# ====================================================================== the real GPU
def open_env(opts: Options, need_conv: bool, need_gemm: bool, trace: bool = True, need_memory: bool = False) -> Env:
    """The GPU environment: backend, stream, L2 flusher, cuDNN/cuBLASLt handles, CUPTI, NVML,
    and PyTorch on the stream where a memory-bound suite needs it (without it that suite is
    left out, with a note: the others need no PyTorch).

    Raises NoGPUError / LibraryNotFound / BackendError with one sentence when a part is missing.
    """
    trace = trace and opts.launch_meta == "cupti"
    simulated = simulation()
    if simulated:
        return simulated_env(simulated, trace)
    backend = runtime.open_backend(opts.backend, opts.device)
    dev = backend.device_info()
    stream = backend.new_stream()
    env = Env(
        backend=backend, device=dev, stream=stream, pool=BufferPool(backend), flusher=None, events=EventPool(backend)
    )
    env.nvml = runtime.Nvml.open()
    env.versions = {"driver_version": dev.driver_version, "cuda_version": "", "cudnn_version": "", "cublas_version": ""}
    try:
        if need_conv:
            env.dnn = Cudnn.load()
            env.versions["cudnn_version"] = env.dnn.version_str()
            env.versions["cuda_version"] = env.dnn.cudart_version_str()
            try:
                env.dnn_handle = env.dnn.create_handle()
            except CudnnError as exc:
                raise NoGPUError(f"cuDNN cannot start on this GPU: {exc}") from None
            env.dnn.set_stream(env.dnn_handle, stream)
        if need_gemm:
            env.lt = CublasLt.load()
            env.versions["cublas_version"] = env.lt.version_str()
            try:
                env.lt_handle = env.lt.create_handle()
            except CublasError as exc:
                raise NoGPUError(f"cuBLASLt cannot start on this GPU: {exc}") from None
        built_for = env.versions["cuda_version"]  # the CUDA version cuDNN was built for
        env.versions["cuda_version"] = built_for or dev.cuda_driver_api
        env.notes += libs.version_notes(
            {
                "cudnn": env.versions["cudnn_version"],
                "cublaslt": env.versions["cublas_version"],
                "nvrtc": libs.nvrtc_version() if need_conv else "",
                "cuda": built_for,
            }
        )
        env.flusher = Flusher(backend, dev.l2_bytes, stream)
        if need_memory:
            try:
                ops = TorchOps(dev.ordinal, stream)
                env.torch_ops = ops
                env.notes.append(
                    f"PyTorch {ops.version} launches the memory-bound suite's kernels on the harness's stream"
                )
            except BenchError as exc:
                env.notes.append(f"the memory-bound suite is left out: {exc}")
        if trace:
            try:
                env.tracer = CuptiTracer.open()
            except (BenchError, OSError, AttributeError) as exc:
                raise BenchError(
                    f"CUPTI cannot trace kernels here ({exc}); without kernel names the "
                    "rows are useless to seer.fit (--launch-meta none measures anyway)"
                ) from None
    except BaseException:
        env.close()
        raise
    return env
