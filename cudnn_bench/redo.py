"""Which stored calls to measure again (`collect --redo`).

A store skips every configuration it holds, so a harness fix reaches old data only when the
calls it got wrong are measured again. Each reason names such calls, per configuration; the
store then appends each configuration's block again with those calls measured anew and its
other calls as they were, and the new block supersedes the old one (store.Store.redo). Only
the wrong calls cost GPU time: in data/h100-sxm the SEER grid's 436 such configurations take
about 30 s by the cost model, against 4.8 minutes for their every call (`python -m cudnn_bench
plan --session`, 2026-11-26).

    unsplit: a timed call whose CUPTI records did not split into whole calls, by the harness
             before cupti.split_calls went by launch order: no kernel names although other calls
             of the configuration have them (and no message saying why: the fixed harness
             writes one), or a GPU span the CUDA events exceed by more than host gaps explain
             (seer.data.records' span_partial) where the main kernel's blocks do not show the
             whole output (time_basis: a call whose kernels cover it was not chunked, and its
             span is its time already).
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data.records import BLOCK_KEY, CONV_OPS, read_raw
from seer.data.records.files import read_bytes
from seer.data.records.harness import SPAN, span_partial, time_basis
from seer.data.records.schema import CONV_FIELDS

Key = tuple[str, ...]
# per configuration (BLOCK_KEY), the algorithms of the calls to measure again; None: every call
# (a GEMM's: cuBLASLt's heuristic names its algorithms afresh on each run)
Redo = dict[Key, frozenset[str] | None]
NUMERIC = (*CONV_FIELDS, "c_out", "m", "n", "blocks")


def _number(col: pd.Series) -> np.ndarray:
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)


def _text(col: pd.Series) -> pd.Series:
    return col.fillna("").astype(str).str.strip()


def chunked(rows: pd.DataFrame) -> np.ndarray:
    """Per row, whether its call's events exceed its kernels' span beyond host gaps and its
    kernels' geometry does not show the whole output (chunked or unverified, never span)."""
    short = span_partial(_number(rows["time_ms"]), _number(rows["gpu_span_ms"]))
    if not short.any():
        return short
    cols = [c for c in NUMERIC if c in rows]
    num = rows.assign(**{c: pd.to_numeric(rows[c], errors="coerce") for c in cols})
    return short & (time_basis(num, short) != SPAN)


def unsplit(rows: pd.DataFrame) -> Redo:
    """The calls of a store's rows whose kernel records did not split into whole calls, by
    configuration. The rows may be a file's text (read_raw) or seer's records (read_csv)."""
    need = {*BLOCK_KEY, "status", "kernel", "message", "time_ms", "gpu_span_ms", "op", "algo"}
    if rows.empty or not need <= set(rows.columns):
        return {}
    ok = rows[rows["status"] == "ok"]
    named = _text(ok["kernel"]) != ""
    traced = named.groupby([ok[c] for c in BLOCK_KEY]).transform("any")  # the run had names
    lost = ~named & traced & (_text(ok["message"]) == "")
    bad = ok[lost.to_numpy() | chunked(ok)]
    out: Redo = {}
    for key, grp in bad.groupby(list(BLOCK_KEY), sort=False):
        conv = grp["op"].isin(CONV_OPS).all()
        out[tuple(map(str, key))] = frozenset(grp["algo"].astype(str)) if conv else None
    return out


REASONS: dict[str, Callable[[pd.DataFrame], Redo]] = {"unsplit": unsplit}


def merge(a: Redo, b: Redo) -> Redo:
    """Both sets of calls to measure again (None, every call, absorbs the rest)."""
    out = dict(a)
    for k, v in b.items():
        if k in out:
            w = out[k]
            out[k] = None if v is None or w is None else v | w
        else:
            out[k] = v
    return out


def redo_of(raw: pd.DataFrame, reasons: list[str]) -> Redo:
    """The calls of a store's rows (read_raw) to measure again for any of `reasons`."""
    out: Redo = {}
    for r in reasons:
        out = merge(out, REASONS[r](raw))
    return out


def _header(path: Path) -> list[str]:
    """A store file's column names: its first line alone, not the whole (gunzipped) file."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        return next(csv.reader([fh.readline()]), [])


def measured_again(path: str | Path, columns: Sequence[str] | None = None) -> set[Key]:
    """The configurations of a store file measured again once already: their old blocks are in
    its `<suite>.csv.superseded` (plain or gzipped). What the fixed harness measured and still
    shows is what the GPU does (a call cuDNN did chunk), so it is not measured again in every
    call: on 2026-11-27 the same 57 H100 configurations were, twice, and their side files grew.
    `columns`: the store's columns where already read (else its first line is)."""
    p = Path(path)
    stem = p.name.removesuffix(".gz")
    side = next(
        (q for q in (p.with_name(f"{stem}.superseded"), p.with_name(f"{stem}.superseded.gz")) if q.is_file()), None
    )
    if side is None:
        return set()
    header = list(columns) if columns is not None else _header(p)  # the side file's rows are in its order
    at = [header.index(c) for c in BLOCK_KEY if c in header]
    if len(at) != len(BLOCK_KEY):
        return set()
    lines = [ln for ln in read_bytes(side).decode(errors="replace").splitlines() if ln and not ln.startswith("#")]
    width = max(at) + 1
    return {tuple(row[i] for i in at) for row in csv.reader(lines) if len(row) >= width}


def calls_to_redo(path: str | Path, reasons: list[str], raw: pd.DataFrame | None = None) -> Redo:
    """The calls of one store file (its rows, `raw`, where already read) to measure again for any
    of `reasons`, less the configurations measured again before (`measured_again`)."""
    if not reasons or not Path(path).is_file():
        return {}
    raw = read_raw(path)[0] if raw is None else raw
    redo = redo_of(raw, reasons)
    again = measured_again(path, list(raw.columns)) if redo else set()
    return {k: v for k, v in redo.items() if k not in again}
