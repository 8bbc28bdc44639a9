"""One config (keyword arguments) or a DataFrame of them, turned into checked numpy columns.

Every predictor accepts both forms; this is where bad input becomes one `SeerError` that names
the argument (or the column and row) and what was expected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from seer.errors import SeerError


@dataclass
class Configs:
    """Checked configuration columns; `single` says the caller passed one config by keyword."""

    cols: dict[str, np.ndarray]
    single: bool
    index: pd.Index
    n: int

    def where(self, i: int) -> str:
        return "" if self.single else f", row {self.index[i]!r}"

    def name(self, field: str, i: int | None = None) -> str:
        """How an error names a value: argument <field>, or column '<field>', row <index>."""
        if self.single:
            return f"argument {field}"
        return f"column '{field}'" + ("" if i is None else self.where(i))


def _is_scalar(v: Any) -> bool:
    return np.ndim(v) == 0


def gather(
    configs: pd.DataFrame | Mapping | None,
    kwargs: Mapping,
    fields: Sequence[str],
    *,
    optional: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
    text: Sequence[str] = (),
) -> Configs:
    """Collect `fields` (required) and `optional` ones from a DataFrame or keyword arguments.

    `aliases` maps other accepted names to field names (e.g. the seed's batch_size -> batch);
    `text` fields are kept as object arrays, all others become float64 arrays.
    """
    aliases = dict(aliases or {})
    if configs is not None and kwargs:
        raise SeerError(
            f"pass either a DataFrame of configs or keyword arguments, not both "
            f"(got both and {', '.join(sorted(kwargs))})"
        )
    if configs is None:
        src: Mapping = kwargs
        if not src:
            raise SeerError(f"no configuration given: pass a DataFrame or the keyword arguments {', '.join(fields)}")
        single = all(_is_scalar(v) for v in src.values())
        if not single:
            src = pd.DataFrame(dict(src))
    elif isinstance(configs, pd.DataFrame):
        src, single = configs, False
    elif isinstance(configs, Mapping):
        single = all(_is_scalar(v) for v in configs.values())
        src = configs if single else pd.DataFrame(dict(configs))
    else:
        raise SeerError(f"argument configs: expected a pandas DataFrame, got {type(configs).__name__}")

    def label(k: str) -> str:
        return f"argument {k}" if single else f"column {k!r}"

    names: dict[str, str] = {}
    for key in src.columns if isinstance(src, pd.DataFrame) else src.keys():
        field = aliases.get(key, key)
        if field in names and names[field] != key:
            raise SeerError(f"{label(key)} and {names[field]!r} give the same value ({field}); pass one")
        names[field] = key
    if single:
        unknown = sorted(k for k in src if aliases.get(k, k) not in (*fields, *optional, *text))
        if unknown:
            raise SeerError(
                f"argument {unknown[0]!r} is not a configuration field; expected {', '.join((*fields, *optional))}"
            )
    n = 1 if single else len(src)
    index = pd.RangeIndex(1) if single else src.index  # type: ignore[attr-defined]  # a DataFrame here
    cols: dict[str, np.ndarray] = {}
    for field in (*fields, *optional):
        if field not in names:
            if field in fields:
                raise SeerError(f"{label(field)} is missing: a configuration needs {', '.join(fields)}")
            continue
        raw = src[names[field]]
        if field in text:
            ser = pd.Series([raw] if single else pd.Series(raw).to_numpy(dtype=object), dtype=object)
            codes, uniq = pd.factorize(ser, use_na_sentinel=True)
            labels = np.array([str(u) for u in uniq] + [""], dtype=object)
            arr = labels[codes]  # code -1 (missing) picks the trailing ""
        else:
            arr = _numbers(raw, single, field, index)
        cols[field] = arr
    return Configs(cols, single, index, n)


def _numbers(raw: Any, single: bool, field: str, index: pd.Index) -> np.ndarray:
    if single:
        try:
            return np.array([float(raw)])
        except (TypeError, ValueError):
            raise SeerError(f"argument {field}: expected a number, got {raw!r}") from None
    ser = pd.Series(raw)
    if pd.api.types.is_numeric_dtype(ser):
        return ser.to_numpy(dtype="float64", na_value=np.nan)
    num = pd.to_numeric(ser, errors="coerce")
    bad = num.isna() & ser.notna()
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise SeerError(f"column {field!r}, row {index[i]!r}: expected a number, got {ser.iloc[i]!r}")
    return num.to_numpy(dtype="float64", na_value=np.nan)


def check_counts(cfg: Configs, fields: Sequence[str], minimum: float = 1) -> None:
    """Each field must be a whole number >= minimum (sizes, counts); NaN is an error too."""
    for field in fields:
        v = cfg.cols[field]
        bad = ~np.isfinite(v) | (v < minimum) | (np.mod(v, 1) != 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            got = v[i]
            got_s = (
                "nothing (NaN)"
                if np.isnan(got)
                else repr(float(got))
                if not np.isfinite(got) or got != int(got)
                else repr(int(got))
            )
            raise SeerError(f"{cfg.name(field, i)}: expected a whole number >= {minimum:g}, got {got_s}")


def lookup(values: np.ndarray, table: Mapping[str, Any], default: Any = None) -> np.ndarray:
    """table[v] for every v, hashing each distinct value once (fast on 1e5 strings)."""
    codes, uniq = pd.factorize(values)
    return np.asarray([table.get(u, default) for u in uniq] + [default], dtype=object)[codes]


def check_choice(
    cfg: Configs, field: str, allowed: Sequence[str], mask: np.ndarray | None = None, why: str = ""
) -> None:
    v = cfg.cols[field]
    bad = ~lookup(v, {a: True for a in allowed}, False).astype(bool)
    if mask is not None:
        bad &= mask
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SeerError(f"{cfg.name(field, i)}: expected one of {', '.join(allowed)}{why}, got {v[i]!r}")


def finish(values: np.ndarray, cfg: Configs) -> float | np.ndarray:
    """A float for one keyword config, the array for a DataFrame."""
    return float(values[0]) if cfg.single else values


UNITS = {"ms": 1.0, "us": 1e3, "s": 1e-3}


def unit_factor(unit: str) -> float:
    """Factor from milliseconds (the package's unit) to `unit`."""
    if unit not in UNITS:
        raise SeerError(f"argument unit: expected one of {', '.join(UNITS)}, got {unit!r}")
    return UNITS[unit]
