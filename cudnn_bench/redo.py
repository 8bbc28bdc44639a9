"""Which stored configurations to measure again (`collect --redo REASON`).

A store skips every configuration it holds, so a harness fix reaches old data only when the
configurations it got wrong are measured again. Each reason names such a set; the store then
appends the new blocks, which supersede the old ones (store.Store.redo).

    unsplit: a timed call whose CUPTI records did not split into whole calls, by the harness
             before cupti.split_calls went by launch order: no kernel names although other calls
             of the configuration have them (and no message saying why: the fixed harness
             writes one), or a GPU span the CUDA events exceed by more than host gaps explain
             (seer.data.records' span_partial: the split found a chunk of the batch as the call).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data.records import BLOCK_KEY, read_raw
from seer.data.records.harness import span_partial

Key = tuple[str, ...]


def _number(col: pd.Series) -> np.ndarray:
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)


def _text(col: pd.Series) -> pd.Series:
    return col.fillna("").astype(str).str.strip()


def unsplit(rows: pd.DataFrame) -> set[Key]:
    """The configurations (BLOCK_KEY) of a store's rows with a call whose kernel records did
    not split into whole calls. The rows may be a file's text (read_raw) or seer's records
    (read_csv: a span_partial call keeps its event time as `time_ms`, so the test is the same)."""
    need = {*BLOCK_KEY, "status", "kernel", "message", "time_ms", "gpu_span_ms"}
    if rows.empty or not need <= set(rows.columns):
        return set()
    ok = rows[rows["status"] == "ok"]
    named = _text(ok["kernel"]) != ""
    traced = named.groupby([ok[c] for c in BLOCK_KEY]).transform("any")  # the run had names
    lost = ~named & traced & (_text(ok["message"]) == "")
    short = span_partial(_number(ok["time_ms"]), _number(ok["gpu_span_ms"]))
    bad = ok[lost.to_numpy() | short]
    return set(bad[list(BLOCK_KEY)].itertuples(index=False, name=None))


REASONS: dict[str, Callable[[pd.DataFrame], set[Key]]] = {"unsplit": unsplit}


def keys_to_redo(path: str | Path, reasons: list[str]) -> set[Key]:
    """The configurations of one store file to measure again for any of `reasons`."""
    if not Path(path).is_file():
        return set()
    raw = read_raw(path)[0]
    return set().union(*(REASONS[r](raw) for r in reasons)) if reasons else set()
