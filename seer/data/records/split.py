"""SEER's train/test split: the same rows always land on the same side."""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.data.records.schema import CONV_FIELDS


def seer_split(n: int) -> np.ndarray:
    """SEER's deterministic rule: row index mod 10 < 7 is training."""
    return np.where(np.arange(n) % 10 < 7, "train", "test")


def split_rows(df: pd.DataFrame, by: list[str], order: list[str] | None = None) -> np.ndarray:
    """SEER's split within each group of `by` (a variant): after a stable sort of the group's
    rows by `order` (default: every configuration field present, then the time), row index
    mod 10 < 7 is "train", the rest "test"; a configuration measured more than once goes,
    every row of it, to the side of its first row, so it is never on both sides. The same rows
    always land on the same side. `time_ms` in `order` only orders, it is no configuration."""
    if df.empty:
        return np.empty(0, dtype=object)
    if order is None:
        order = [
            c
            for c in (
                "op",
                *CONV_FIELDS,
                "m",
                "n",
                "k",
                "rows",
                "cols",
                "fn",
                "num_embeddings",
                "num_tables",
                "bag_size",
                "emb_dim",
                "algo",
                "time_ms",
            )
            if c in df
        ]
    keys = df[order].copy()
    for c in keys.columns:  # a sortable key for mixed/NA columns
        if not pd.api.types.is_numeric_dtype(keys[c]):
            keys[c] = keys[c].astype(str)
        else:
            keys[c] = keys[c].astype("float64")
    sorted_idx = keys.sort_values(order, kind="stable").index
    pos = pd.Series(np.arange(len(df)), index=df.index)[sorted_idx]
    grp = pd.Series(
        df.loc[sorted_idx, by].astype(str).groupby(by, sort=False).ngroup().to_numpy()
        if by
        else np.zeros(len(df), dtype=int),
        name="_group",
    )
    side = grp.groupby(grp, sort=False).cumcount() % 10 < 7
    cfg = [c for c in order if c != "time_ms"]
    if cfg:  # every row of a configuration takes the side of its first row in the group
        first = pd.concat([grp, keys.loc[sorted_idx, cfg].reset_index(drop=True)], axis=1)
        side = side.groupby([first[c] for c in first.columns], sort=False, dropna=False).transform("first")
    out = np.empty(len(df), dtype=object)
    out[pos.to_numpy()] = np.where(side.to_numpy(dtype=bool), "train", "test")
    return out
