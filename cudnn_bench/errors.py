"""Errors of the harness: every failure the user can act on is one sentence.

`BenchError` (a `seer.SeerError`) ends the CLI with exit code 2 and no traceback. The library
errors carry the library's own status name and message (cuDNN's `cudnnGetErrorString` and
`cudnnGetLastErrorString`, cuBLASLt's `cublasLtGetStatusName`/`String`, the driver's
`cuGetErrorName`/`String`), so a record's `message` says what the library said.
"""

from __future__ import annotations

import errno

from seer.errors import SeerError


class BenchError(SeerError):
    """The harness cannot go on; the message says why and what to do."""


class NoGPUError(BenchError):
    """No usable CUDA GPU (no driver, no device, or a context that cannot be made)."""


class LibraryNotFound(BenchError):
    """A GPU library (cuDNN, cuBLASLt, CUPTI, the driver) could not be found or loaded."""


class BackendError(BenchError):
    """The GPU runtime backend (pycuda, the driver API, CuPy) is missing or failed."""


class FatalGPUError(BenchError):
    """A sticky CUDA error: the context is unusable and the run must stop (a rerun resumes)."""


class DiskFull(BenchError):
    """The disk filled while records were written; the message says what is safely on disk."""


def is_disk_full(exc: BaseException) -> bool:
    """An OSError of a full disk or an exhausted quota: what was fsynced or replaced atomically
    before it is safe, and the same command resumes once there is space."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def os_error_line(exc: OSError) -> str:
    """An OSError the harness did not expect, in one line (the file and what the system said)."""
    why = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {why}" if exc.filename else why


class DeviceOutOfMemory(BenchError):
    """A device allocation failed; recorded as status out_of_memory, not a crash."""


class LibraryStatusError(BenchError):
    """A non-success status from a GPU library call, with the library's own words."""

    library = "GPU library"

    def __init__(self, status: int, name: str, message: str, call: str = ""):
        self.status, self.name, self.detail, self.call = int(status), name, message, call
        where = f" in {call}" if call else ""
        text = f"{self.library} {name} ({self.status}){where}"
        if message:
            text += f": {message}"
        super().__init__(text)


# ------------------------------------------------------------------ cuDNN (status codes of cuDNN 9)
class CudnnError(LibraryStatusError):
    library = "cuDNN"
    category = "failed"  # record status this error maps to


class CudnnNotInitialized(CudnnError):  # 1000s: no GPU, no driver, version mismatch
    pass


class CudnnBadParam(CudnnError):  # 2000s
    pass


class CudnnNotSupported(CudnnError):  # 3000s: this algorithm cannot run this configuration
    category = "not_supported"


class CudnnInternalError(CudnnError):  # 4000s
    pass


class CudnnAllocFailed(CudnnInternalError):  # 4003/4004: host or device allocation failed
    category = "out_of_memory"


class CudnnExecutionFailed(CudnnError):  # 5000s: a kernel or a library below failed
    pass


def cudnn_error_class(status: int) -> type[CudnnError]:
    """The exception class of a cuDNN 9 status (categories are status // 1000 * 1000)."""
    if status in (4003, 4004):
        return CudnnAllocFailed
    return {
        1000: CudnnNotInitialized,
        2000: CudnnBadParam,
        3000: CudnnNotSupported,
        4000: CudnnInternalError,
        5000: CudnnExecutionFailed,
    }.get(status // 1000 * 1000, CudnnError)


# ------------------------------------------------------------------ cuBLAS(Lt)
class CublasError(LibraryStatusError):
    library = "cuBLASLt"
    category = "failed"


class CublasNotInitialized(CublasError):  # 1
    pass


class CublasAllocFailed(CublasError):  # 3
    category = "out_of_memory"


class CublasInvalidValue(CublasError):  # 7
    pass


class CublasNotSupported(CublasError):  # 15, and 8 ARCH_MISMATCH
    category = "not_supported"


class CublasExecutionFailed(CublasError):  # 13, 14 INTERNAL_ERROR, 11 MAPPING_ERROR
    pass


def cublas_error_class(status: int) -> type[CublasError]:
    """cublasStatus_t values from cublas_api.h (CUDA 12 and 13 agree)."""
    return {
        1: CublasNotInitialized,
        3: CublasAllocFailed,
        7: CublasInvalidValue,
        8: CublasNotSupported,
        15: CublasNotSupported,
        11: CublasExecutionFailed,
        13: CublasExecutionFailed,
        14: CublasExecutionFailed,
    }.get(int(status), CublasError)


# ------------------------------------------------------------------ CUDA driver and CUPTI
class CudaError(LibraryStatusError):
    library = "CUDA driver"
    category = "failed"


class CuptiError(LibraryStatusError):
    library = "CUPTI"
    category = "failed"


class TorchError(LibraryStatusError):
    """PyTorch raised while making or running a memory-bound call (cudnn_bench.memory_ops)."""

    library = "PyTorch"
    category = "failed"


def status_of(exc: BaseException) -> str:
    """The record status (ok, not_supported, ...) an exception stands for."""
    if isinstance(exc, DeviceOutOfMemory):
        return "out_of_memory"
    return getattr(exc, "category", "failed")
