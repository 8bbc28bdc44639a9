"""NVTX push/pop ranges for the ncu worker, from whatever provides them on the machine.

CUDA 12/13 ship NVTX 3 as headers only (the nvidia-nvtx 13.5 wheel has no library), so there
may be no libnvToolsExt to call. Providers, first found wins: libnvToolsExt.so.1 (older
toolkits and wheels), CuPy's `cupy.cuda.nvtx`, PyTorch's `torch.cuda.nvtx`, the `nvtx` package.
All are NVTX 3 clients that ncu's injection sees. Only the worker opens one, and a provider's
Python module is imported only then.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

from . import libs


@dataclass
class Nvtx:
    name: str
    push: Callable[[str], None]
    pop: Callable[[], None]


def _encoded(push: Callable[[bytes], object]) -> Callable[[str], None]:
    """nvtxRangePushA takes the range name as bytes."""

    def push_name(name: str) -> None:
        push(name.encode())

    return push_name


def _lib() -> Nvtx | None:
    for c in libs.candidates("nvtx"):
        try:
            lib = ctypes.CDLL(c.path)
            push, pop = lib.nvtxRangePushA, lib.nvtxRangePop
        except (OSError, AttributeError):
            continue
        push.argtypes = [ctypes.c_char_p]
        return Nvtx(f"libnvToolsExt ({c.path})", _encoded(push), pop)
    return None


def _cupy() -> Nvtx | None:
    try:
        from cupy.cuda import nvtx
    except Exception:  # any import failure means "not this provider"
        return None
    return Nvtx("cupy.cuda.nvtx", lambda s: nvtx.RangePush(s), nvtx.RangePop)


def _torch() -> Nvtx | None:
    try:
        import torch.cuda.nvtx as nvtx
    except Exception:  # any failure here means "not this provider"
        return None
    return Nvtx("torch.cuda.nvtx", nvtx.range_push, nvtx.range_pop)


def _nvtx_pkg() -> Nvtx | None:
    try:
        import nvtx
    except Exception:  # any failure here means "not this provider"
        return None
    return Nvtx("nvtx", lambda s: nvtx.push_range(s), lambda: nvtx.pop_range())


PROVIDERS = (("lib", _lib), ("cupy", _cupy), ("torch", _torch), ("nvtx", _nvtx_pkg))


def open_nvtx(prefer: str = "auto") -> Nvtx | None:
    """The first provider that loads (or the named one); None when none does."""
    for name, fn in PROVIDERS:
        if prefer not in ("auto", name):
            continue
        found = fn()
        if found is not None:
            return found
    return None
