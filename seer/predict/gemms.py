"""One GEMM, three names: `gemm` (a cuBLAS call, what the harness times), `bmm` (torch.bmm) and
`linear` (torch.nn.Linear). A GPU's fits cover the names its data had (NeuSight's: bmm and
linear; the harness's: gemm), and a user asks with any of them: each row goes to the op of the
fits that times the same matrix product.

A linear layer on a [batch, m, k] input is one GEMM of batch * m rows (PyTorch runs addmm on
the flattened view), so its batch is folded into its rows first.

`linear` and `bmm` are row-major (PyTorch's and NeuSight's terms: C[m, n] = A[m, k] B[k, n]);
`gemm` is cuBLAS's column-major call, which is how PyTorch runs them: its C[m, n] is PyTorch's
C^T, so a linear or bmm row timed by `gemm` fits has m and n swapped (the harness records a
linear layer's GEMM with m = output features and n = rows, as cuBLAS sees it, and the tile
sizes in a kernel's name are of cuBLAS's m and n).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from seer.data.records import GEMM_OPS
from seer.errors import SeerError


def folded(df: pd.DataFrame) -> pd.DataFrame:
    """Linear rows with their leading batch folded into m (every linear row of the data has
    batch 1: that is how the models learnt them)."""
    if "batch" not in df:
        return df
    fold = (df["op"] == "linear").to_numpy() & (df["batch"] != 1).to_numpy()
    if not fold.any():
        return df
    m = df["m"].where(~fold, df["m"] * df["batch"])
    return df.assign(m=m, batch=df["batch"].where(~fold, 1))


def timed_as(op: str, batch: int, covered: Collection[str]) -> str | None:
    """The op of the fits (`covered`) that times a GEMM of `op` with this batch, its own first
    (None: none does). One product (batch 1, and every linear once folded) is timed by any GEMM
    op; a batch of products by a batched one (bmm or gemm), never as one linear of batch * m
    rows, which is another product."""
    if op == "linear" or batch == 1:
        prefs: tuple[str, ...] = (op, "gemm", "linear", "bmm")
    else:
        prefs = (op, "gemm", "bmm")
    return next((o for o in prefs if o in covered), None)


def route(df: pd.DataFrame, covered: Collection[str], gpu: str) -> pd.DataFrame:
    """The frame with each GEMM row's op replaced by the op of the fits that times it (linear
    rows folded first), or a SeerError naming the first row no op covers. Other rows as given."""
    df = folded(df)
    ops = df["op"].to_numpy(dtype=object)
    gemm = np.isin(ops, GEMM_OPS)
    if not gemm.any() or all(op in covered for op in pd.unique(ops[gemm])):
        return df
    batch = df["batch"].to_numpy()
    new = ops.copy()
    for i in np.flatnonzero(gemm):
        new[i] = timed_as(ops[i], int(batch[i]), covered) or ""
    swap = gemm & (new == "gemm") & (ops != "gemm")
    if swap.any():  # row-major linear/bmm -> cuBLAS's column-major gemm
        m, n = df["m"].to_numpy(), df["n"].to_numpy()
        df = df.assign(m=np.where(swap, n, m), n=np.where(swap, m, n))
    missing = np.flatnonzero(new == "")
    if len(missing):
        i = missing[0]
        raise SeerError(
            f"config row {i}: the fits for {gpu} time no GEMM that can stand for {ops[i]!r} with batch {batch[i]} "
            f"(they cover {', '.join(o for o in GEMM_OPS if o in covered) or 'no GEMM'})"
        )
    return df.assign(op=new)
