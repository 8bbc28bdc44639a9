"""Bytes per element of every dtype name seer and the harness use: one table for all.

The record's dtype is "float32", "float16" or "bfloat16"; the analytical predictors also take
PyTorch's and BLAS's spellings. A missing dtype ("") is float32, as in every data set so far.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "float64": 8,
    "double": 8,
    # integer and boolean tensors (indices, masks) in a model's graph: memory-bound ops only
    "int64": 8,
    "long": 8,
    "int32": 4,
    "int": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}
MODEL_DTYPES = ("float32", "float16", "bfloat16")  # what the per-variant models know
DEFAULT_DTYPE = "float32"


def element_bytes(dtype: pd.Series | np.ndarray | None, n: int) -> np.ndarray:
    """Bytes per element of each row (float32 where the dtype is missing or unknown)."""
    if dtype is None:
        return np.full(n, float(DTYPE_BYTES[DEFAULT_DTYPE]))
    codes, names = pd.factorize(np.asarray(dtype, dtype=object))
    per = np.array(
        [DTYPE_BYTES.get(str(n), DTYPE_BYTES[DEFAULT_DTYPE]) for n in names] + [DTYPE_BYTES[DEFAULT_DTYPE]], dtype=float
    )
    return per[codes]  # code -1 (a missing dtype) takes the last entry: float32
