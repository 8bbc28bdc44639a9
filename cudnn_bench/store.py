"""Resumable record files: one block of rows per configuration, appended, flushed and fsynced.

A file is `data/<gpu-slug>/<suite>.csv` with the columns of `seer.records.COLUMNS` followed by
the harness's extra columns (`EXTRA`; `records.conform` keeps them). The header is written once.
Every configuration is written as one block whose rows all carry `config_rows` = the block's
length, with a single write + flush + fsync, so after a crash or Ctrl-C the file holds every
finished configuration and at most a torn tail. Opening the file again cuts the tail back to
the last complete block and returns the keys (suite, config_key, math) already done, which a
rerun skips.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Iterable

import pandas as pd

from seer.records import COLUMNS, atomic_write, conform

EXTRA: tuple[str, ...] = (
    "call_key",  # the call: config key | math | algorithm (and cuBLASLt rank)
    "config_rows",  # rows in this configuration's block (detects a torn block)
    "kernel_index",  # position of the kernel in the call's launch order
    "backend",  # pycuda, driver, cupy
    "heuristic_pick",  # the library heuristic's first choice for this configuration
    "heuristic_math",  # math type cuDNN's heuristic reported for this algorithm
    "lt_tile", "lt_splitk", "lt_reduction", "lt_swizzle", "lt_custom", "lt_stages",
    "lt_inner_shape", "lt_cluster_shape", "lt_waves",  # cuBLASLt algo config and heuristic waves
    "model_blocks_per_sm",  # seer.occupancy's resident blocks per SM (kept beside ncu's)
    "ncu_blocks_per_sm",  # min of ncu's launch__occupancy_limit_* where measured
    "ncu_waves_per_sm",  # ncu's launch__waves_per_multiprocessor
    "occupancy_source",  # "ncu" or "model": where blocks_per_sm / b_max / waves came from
    "kernel_time_source",  # "cupti" (timing pass) or "ncu" (counter pass)
    "achieved_occupancy_pct",  # sm__warps_active.avg.pct_of_peak_sustained_active
    "ncu_kernel_time_ms",  # gpu__time_duration.sum under ncu (caches flushed, serialized)
    "ncu_sm_clock_mhz",  # sm__cycles_elapsed.avg.per_second under ncu
    "est_s",  # planned GPU seconds of the configuration (suites.CostModel)
    "wall_s",  # measured wall seconds of the configuration
    "measured_at",  # UTC time the block was written
)
HEADER: tuple[str, ...] = tuple(COLUMNS) + EXTRA
KEY = ("suite", "config_key", "math")


def _cell(v) -> str:
    if v is None or v is pd.NA:
        return ""
    if isinstance(v, (bool,)) or type(v).__name__ == "bool_":
        return str(int(v))
    if isinstance(v, float):  # numpy floats too: repr(float) is the shortest exact text
        return "" if math.isnan(v) else repr(float(v))
    if hasattr(v, "item") and not isinstance(v, str):  # numpy scalars
        v = v.item()
        if isinstance(v, float):
            return "" if math.isnan(v) else repr(v)
    s = str(v)
    return s.replace("\r", " ").replace("\n", " ")


def format_rows(rows: list[dict], header: tuple[str, ...] = HEADER) -> str:
    """The CSV text of rows (unknown keys are an error: the schema is fixed)."""
    extra = set().union(*(r.keys() for r in rows)) - set(header) if rows else set()
    if extra:
        raise KeyError(f"fields not in the record schema: {', '.join(sorted(extra))}")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in header])
    return buf.getvalue()


def _scan(data: bytes, header: tuple[str, ...]) -> tuple[int, set, bool]:
    """(bytes of complete blocks, keys done, header matches) of a file's content."""
    nl = data.find(b"\n")
    if nl < 0:
        return 0, set(), False
    head = next(csv.reader([data[:nl].decode("utf-8", errors="replace")]))
    if tuple(head) != header:
        return nl + 1, set(), False
    idx = {c: head.index(c) for c in (*KEY, "config_rows")}
    good_end = nl + 1
    done: set = set()
    pos = nl + 1
    block_key, block_n, block_want = None, 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            break  # torn last line
        line = data[pos:end].decode("utf-8", errors="replace")
        pos = end + 1
        try:
            fields = next(csv.reader([line]))
        except (csv.Error, StopIteration):
            break
        if len(fields) != len(header):
            break
        key = tuple(fields[idx[c]] for c in KEY)
        try:
            want = int(fields[idx["config_rows"]])
        except ValueError:
            break
        if key != block_key or block_n >= block_want:
            if block_key is not None and block_n != block_want:
                break  # the previous block was torn
            block_key, block_n, block_want = key, 0, want
        block_n += 1
        if block_n == block_want:
            done.add(block_key)
            good_end = pos
    return good_end, done, True


class Store:
    """Appends configuration blocks to one CSV; `done` holds the keys of finished blocks."""

    def __init__(self, path: str | Path, header: tuple[str, ...] = HEADER):
        self.path = Path(path)
        self.header = header
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.done: set[tuple[str, str, str]] = set()
        self.recovered_bytes = 0
        self._open()

    def _open(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            with open(self.path, "w", encoding="utf-8", newline="") as fh:
                csv.writer(fh, lineterminator="\n").writerow(self.header)
                fh.flush()
                os.fsync(fh.fileno())
        data = self.path.read_bytes()
        good, done, same = _scan(data, self.header)
        if not same:
            self._migrate()
            data = self.path.read_bytes()
            good, done, same = _scan(data, self.header)
        if good < len(data):
            self.recovered_bytes = len(data) - good
            with open(self.path, "r+b") as fh:
                fh.truncate(good)
                fh.flush()
                os.fsync(fh.fileno())
        self.done = done
        self._fh = open(self.path, "a", encoding="utf-8", newline="")

    def _migrate(self) -> None:
        """A file written with another column set: rewrite it (atomically) with this header."""
        old = pd.read_csv(self.path, dtype=str, keep_default_na=False, on_bad_lines="skip")
        old = old.reindex(columns=list(self.header), fill_value="")
        atomic_write(self.path, lambda p: old.to_csv(p, index=False, columns=list(self.header)))

    def is_done(self, key: tuple[str, str, str]) -> bool:
        return tuple(key) in self.done

    def append(self, rows: list[dict]) -> None:
        """Write one configuration's rows as a block and make it durable."""
        if not rows:
            return
        n = len(rows)
        rows = [{**r, "config_rows": n} for r in rows]
        keys = {tuple(_cell(r.get(c)) for c in KEY) for r in rows}
        if len(keys) != 1:
            raise ValueError("a block must hold one configuration (suite, config_key, math)")
        self._fh.write(format_rows(rows, self.header))
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.done |= keys

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_frame(path: str | Path) -> pd.DataFrame:
    """A store file as a conformed record frame (extra columns kept as text)."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    return conform(raw)


def rewrite(path: str | Path, df: pd.DataFrame, header: tuple[str, ...] = HEADER) -> Path:
    """Replace a store file atomically by `df` (the counter pass merges into the records)."""
    df = df.copy()
    rows = df.reindex(columns=list(header)).to_dict("records")
    text = ",".join(header) + "\n" + format_rows(rows, header)
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_json(path: str | Path, obj: dict) -> Path:
    return atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"))


def store_files(folder: str | Path) -> Iterable[Path]:
    return sorted(p for p in Path(folder).glob("*.csv") if not p.name.startswith("."))
