"""Validation of record frames: numbers parsed column by column, every failure a DataError
naming the file, the line, the column and what was expected."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from seer.data.records.files import warn
from seer.data.records.schema import ALWAYS, FIELD, FIELDS, MAX_INT, OPS, STATUSES, conform
from seer.data.variants import CONV_DIRECTION, CONV_OP_ALGOS, ROLES
from seer.errors import DataError

# no call of one kernel configuration runs for hours: a longer time is a corrupt value (1e30)
MAX_TIME_MS = 1e7


def first_bad(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if len(idx) else None


def numeric(
    raw: pd.Series,
    file: str,
    column: str,
    lines: np.ndarray,
    *,
    where: str = "line",
    integer: bool = False,
    minimum: float | None = None,
    required: bool = True,
    expected: str | None = None,
) -> pd.Series:
    """Parse one source column as numbers; raise DataError at the first value that is not."""
    if pd.api.types.is_numeric_dtype(raw):
        num = raw.astype("float64")
        present = num.notna()
    else:
        num, present = _parsed(raw)
    what = expected or ("a whole number" if integer else "a number")
    if minimum is not None:
        what += f" >= {minimum:g}" if minimum != 0 or integer else " >= 0"
    bad = (present & num.isna()) | np.isinf(num)
    if required:
        bad |= ~present
    if integer:
        bad |= present & num.notna() & (num.fillna(0) % 1 != 0)
    if minimum is not None:
        bad |= present & (num.fillna(minimum) < minimum)
    if integer:  # 1e30 is a whole number but no count: out of range (Int64 would overflow)
        huge = present & (num.abs() >= MAX_INT)
        if (i := first_bad((bad | huge).to_numpy())) is not None and huge.iloc[i]:
            raise DataError(
                file, int(lines[i]), column, f"{what} below 2**63 (the value is out of range)", raw.iloc[i], where=where
            )
    i = first_bad(bad.to_numpy())
    if i is not None:
        val = raw.iloc[i]
        raise DataError(file, int(lines[i]), column, what, None if pd.isna(val) else val, where=where)
    return num


def _parsed(raw: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(numbers, present) of a text column, blank and padded cells stripped. Parsed once per
    distinct cell and spread back: stripping and parsing every cell took half of reading the
    project's data (16 million cells, a few thousand distinct per column)."""
    codes, uniq = pd.factorize(raw)  # a missing cell: code -1
    txt = pd.Series(np.asarray(uniq, dtype=object), dtype=object).astype(str).str.strip()
    known = (txt != "").to_numpy()
    values = pd.to_numeric(txt.where(known), errors="coerce").to_numpy()
    missing = codes < 0
    if missing.any():
        values = np.append(values.astype("float64"), np.nan)
        known = np.append(known, False)
    as_series = lambda a: pd.Series(a[codes], index=raw.index, name=raw.name)
    return as_series(values), as_series(known)


def require_columns(df: pd.DataFrame, cols: Iterable[str], file: str, why: str = "") -> None:
    for c in cols:
        if c not in df.columns:
            raise DataError(file, None, c, f"a column named '{c}'{why}")


def validate(
    df: pd.DataFrame,
    file: str = "<records>",
    lines: np.ndarray | None = None,
    where: str = "line",
    names: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Check a record frame: known ops, algorithms and roles; every config field an op needs
    present and in range; time > 0 on rows whose status is ok. Returns the frame conformed."""
    names = names or {}
    lines = np.arange(len(df)) + 2 if lines is None else np.asarray(lines)

    def err(i: int, col: str, expected: str, value=None):
        raise DataError(file, int(lines[i]), names.get(col, col), expected, value, where=where)

    require_columns(df, ALWAYS, file)
    for f in FIELDS:  # a count of 2**63 or more is corrupt (and would overflow Int64 in conform)
        if f.kind == "int" and f.name in df and df[f.name].dtype != "Int64":
            vals = pd.to_numeric(df[f.name], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            if (i := first_bad(np.abs(vals) >= MAX_INT)) is not None:
                err(i, f.name, "a whole number below 2**63 (the value is out of range)", vals[i])
    df = conform(df)
    op = df["op"].to_numpy(dtype=object)
    bad = ~np.isin(op, list(OPS))
    if (i := first_bad(bad)) is not None:
        err(i, "op", f"one of {', '.join(OPS)}", op[i])
    if (i := first_bad((df["gpu"].str.strip() == "").to_numpy())) is not None:
        err(i, "gpu", "a GPU name")
    status = df["status"].where(df["status"] != "", "ok")
    df["status"] = status
    if (i := first_bad(~status.isin(STATUSES).to_numpy())) is not None:
        err(i, "status", f"one of {', '.join(STATUSES)}", status.iloc[i])
    role = df["role"].where(df["role"] != "", "main")
    df["role"] = role
    if (i := first_bad(~role.isin(ROLES).to_numpy())) is not None:
        err(i, "role", f"one of {', '.join(ROLES)}", role.iloc[i])
    ok = (status == "ok").to_numpy()
    t = df["time_ms"].to_numpy()
    if (i := first_bad(ok & ~(np.isfinite(t) & (t > 0) & (t < MAX_TIME_MS)))) is not None:
        err(i, "time_ms", f"a time in ms > 0 and below {MAX_TIME_MS:g}", None if np.isnan(t[i]) else t[i])
    for name, need in OPS.items():
        rows = op == name
        if not rows.any():
            continue
        for col in need:
            f = FIELD[col]
            if f.kind == "str":
                if (i := first_bad(rows & (df[col] == "").to_numpy())) is not None:
                    err(i, col, f"a value ({f.doc}) for op {name}")
                continue
            vals = df[col].to_numpy(dtype="float64", na_value=np.nan)
            bad = rows & ~(np.isfinite(vals) & (vals >= (f.minimum or 0)))
            if (i := first_bad(bad)) is not None:
                err(i, col, f"a whole number >= {f.minimum:g} for op {name}", None if np.isnan(vals[i]) else vals[i])
    for name, algos in CONV_OP_ALGOS.items():
        conv = op == name
        if conv.any():
            algo = df["algo"].to_numpy(dtype=object)
            if (i := first_bad(conv & ~np.isin(algo, list(algos.values())))) is not None:
                err(i, "algo", f"a cuDNN {CONV_DIRECTION[name]} algorithm ({', '.join(algos.values())})", algo[i])
    for col in (
        "stride_h",
        "stride_w",
        "dil_h",
        "dil_w",
        "groups",
        "pad_h",
        "pad_w",
        "blocks",
        "regs_per_thread",
        "b_max",
        "kernel_time_ms",
        "spread_ms",
    ):
        f = FIELD[col]
        vals = df[col].to_numpy(dtype="float64", na_value=np.nan)
        if (i := first_bad(~np.isnan(vals) & (vals < (f.minimum or 0)))) is not None:
            err(i, col, f"a value >= {f.minimum:g}", vals[i])
    return df


def drop_duplicates(df: pd.DataFrame, file: str, lines: np.ndarray | None = None) -> pd.DataFrame:
    """Drop rows equal in every column but `source` and `call_id` to an earlier row: the same
    measurement read twice (a copied block, a file in a folder twice) must not count twice."""
    cols = [c for c in df.columns if c not in ("source", "call_id")]
    dup = df.duplicated(cols).to_numpy()
    if not dup.any():
        return df
    first = int(np.flatnonzero(dup)[0])
    at = f"line {int(lines[first])}" if lines is not None else f"row {first + 1}"
    warn(f"{file}: {int(dup.sum())} row(s) repeat an earlier measurement exactly (first at {at}) and are dropped")
    return df[~dup].reset_index(drop=True)
