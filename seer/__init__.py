"""seer: GPU kernel time models without MATLAB.

Per-kernel-variant linear time models in the style of SEER, fitted with statsmodels, next to
analytical predictors (embedding lookups, memory-bound kernels, roofline). Everything here
runs on a CPU; nothing imports GPU modules.
"""
from __future__ import annotations

from .errors import DataError, SeerError, UnknownGPUError

__version__ = "0.1.0"
__all__ = ["DataError", "SeerError", "UnknownGPUError", "__version__"]
