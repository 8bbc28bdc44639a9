"""Resumable record files: one block of rows per configuration, appended, flushed and fsynced.

A file is `data/<gpu-slug>/<suite>.csv` with the columns of `seer.data.records.COLUMNS` followed by
the harness's extra columns (`EXTRA`; `records.conform` keeps them). The header is written once.
Every configuration is written as one block whose rows all carry `config_rows` = the block's
length, with a single write + flush + fsync, so after a crash or Ctrl-C the file holds every
finished configuration and at most a torn tail. Opening the file again keeps every complete
block (`seer.data.records.scan_blocks`), moves anything else (a torn tail, a blank or garbage line,
an incomplete block) to `<name>.quarantine` beside it with a warning, and returns the keys
(suite, config_key, math) already done, which a rerun skips; `redo` un-skips some (all their
calls, or only some algorithms: the block is then written again with those calls new and the
others as they were), and the new block of a configuration supersedes its old one (set aside in
`<name>.superseded` on closing, or on the next opening after a crash). A Store holds a lock
(`.<name>.lock`) for its life: a second writer of the same file is refused, as it would
measure every configuration again.
"""

from __future__ import annotations

import csv
import datetime as _dt
import gzip
import io
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pandas as pd

from seer.data.records import COLUMNS, Blocks, atomic_write, conform, is_block_file, read_raw, scan_blocks, warn

from .errors import BenchError

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None  # type: ignore[assignment]

EXTRA: tuple[str, ...] = (
    "call_key",  # the call: config key | math | algorithm (and cuBLASLt rank)
    "config_rows",  # rows in this configuration's block (detects a torn block)
    "kernel_index",  # position of the kernel in the call's launch order
    "launches",  # launches this row stands for (measure.merge_repeats; empty = 1), times summed
    "backend",  # pycuda, driver, cupy
    "heuristic_pick",  # the library heuristic's first choice for this configuration
    "heuristic_math",  # math type cuDNN's heuristic reported for this algorithm
    "lt_tile",
    "lt_splitk",
    "lt_reduction",
    "lt_swizzle",
    "lt_custom",
    "lt_stages",
    "lt_inner_shape",
    "lt_cluster_shape",
    "lt_waves",  # cuBLASLt algo config and heuristic waves
    "model_blocks_per_sm",  # seer.hardware.occupancy's resident blocks per SM (kept beside ncu's)
    "ncu_blocks_per_sm",  # min of ncu's launch__occupancy_limit_* where measured
    "ncu_waves_per_sm",  # ncu's launch__waves_per_multiprocessor
    "occupancy_source",  # "ncu" or "model": where blocks_per_sm / b_max / waves came from
    "kernel_time_source",  # "cupti" (timing pass) or "ncu" (counter pass)
    "achieved_occupancy_pct",  # sm__warps_active.avg.pct_of_peak_sustained_active
    "ncu_kernel_time_ms",  # gpu__time_duration.sum under ncu (caches flushed, serialized)
    "ncu_sm_clock_mhz",  # sm__cycles_elapsed.avg.per_second under ncu
    "compute_type",  # cuBLASLt compute type that ran (PEDANTIC falls back to COMPUTE_32F)
    "host_gap",  # True where the events exceed the kernels' GPU span by > 10% (host-bound)
    "gpu_busy_ms",  # the time some kernel of the call ran (union of their intervals), median ms
    "gpu_gaps",  # idle gaps between the call's kernels (median): seer adds the GPU's own launch gap per gap
    "cluster_x",
    "cluster_y",
    "cluster_z",  # thread-block cluster dims (CUPTI, sm_90)
    "est_s",  # planned GPU seconds of the configuration (cost.CostModel)
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


def _header(data: bytes) -> list[str] | None:
    """The cells of a file's first line, None if it has no complete first line."""
    nl = data.find(b"\n")
    return next(csv.reader([data[:nl].decode("utf-8", errors="replace")]), []) if nl >= 0 else None


def lock_path(path: str | Path) -> Path:
    """The lock file of a store file: hidden beside it, never read as data."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def out_folder(path: Path, option: str = "") -> Path:
    """An output folder, refused in one sentence before any work when it, or the nearest of its
    parents that exists, is not a folder (the first file written into it would fail late)."""
    path = Path(path)
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            if not p.is_dir():
                what = "is" if p == path else f"cannot be made: {p} is"
                named = f"{option} {path}" if option else str(path)
                raise BenchError(f"{named} {what} a file, not a folder; give a folder")
            break
    return path


def lock(path: str | Path) -> IO:
    """Take the store file's lock (non-blocking) and return its handle; closing it releases it.
    Refused in one sentence while another process (or Store) writes the file, or when the lock
    file cannot be made."""
    try:
        fh = open(lock_path(path), "a")  # noqa: SIM115 - the open handle is the lock: closing it releases it
    except OSError as exc:
        raise BenchError(f"cannot lock {path}: {lock_path(path)} cannot be opened ({exc.strerror or exc})") from None
    if fcntl is not None:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise BenchError(
                f"{path} is being written by another run (its lock {lock_path(path).name} is "
                "held): wait for that collect to finish, or write to another --out folder"
            ) from None
    return fh


def _append_durably(side: Path, lines: list[bytes], note: str) -> None:
    """Append a '# <time> <note>' line and `lines` to a side file, fsynced: set-aside bytes are
    safe there before the store that held them is replaced. A side file committed gzipped is
    unzipped first, so the set-aside rows stay in one file."""
    unzip_stored(side)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    with open(side, "ab") as fh:
        fh.write(f"# {now} {note}\n".encode())
        for chunk in lines:
            fh.write(chunk if chunk.endswith(b"\n") else chunk + b"\n")
        fh.flush()
        os.fsync(fh.fileno())


def set_aside(path: Path, blocks: Blocks) -> Path | None:
    """Keep only the last complete block of each configuration in the store file `blocks` was
    scanned from: bytes of no complete block go to `<name>.quarantine` (with a warning), blocks
    measured again since (`collect --redo`) to `<name>.superseded`, each appended and fsynced
    before the store is replaced atomically. Returns the quarantine file (None: none written)."""
    if not blocks.dropped and not blocks.superseded:
        return None
    side = None
    if blocks.dropped:
        side = path.with_name(path.name + ".quarantine")
        _append_durably(side, [c for _, c in blocks.dropped], f"from {path.name}: {blocks.describe()}")
    if blocks.superseded:
        n = len(blocks.superseded)
        _append_durably(
            path.with_name(path.name + ".superseded"),
            [c for _, c in blocks.superseded],
            f"from {path.name}: {n} configuration block{'s' * (n != 1)} measured again since",
        )
    atomic_write(path, lambda p: p.write_bytes(blocks.keep))
    if side is not None:
        warn(
            f"{path}: moved {blocks.describe()} to {side}: not part of a complete configuration block "
            "(a torn write or garbage); every complete block is kept"
        )
    return side


def unzip_stored(path: Path) -> bool:
    """A suite file committed gzipped (`<suite>.csv.gz`: the repository's working tree must stay
    small enough to travel to a GPU machine) is decompressed to `<suite>.csv`, atomically and
    the .gz removed, so a collection appends to it and resumes; False where there is none."""
    gz = path.with_name(path.name + ".gz")
    if path.exists() or not gz.is_file():
        return False
    atomic_write(path, lambda p: p.write_bytes(gzip.decompress(gz.read_bytes())))
    gz.unlink()
    return True


def suite_file(folder: Path, suite: str) -> Path | None:
    """A folder's store file of a suite, plain or committed gzipped (`unzip_stored`); None
    where it has neither."""
    return next((p for p in (folder / f"{suite}.csv", folder / f"{suite}.csv.gz") if p.is_file()), None)


@contextmanager
def plain_suites(folder: Path) -> Iterator[None]:
    """Every suite of `folder` committed gzipped decompressed for the duration (`unzip_stored`:
    the counter pass samples, merges into and rewrites plain files), and gzipped again after,
    whatever happens inside."""
    zipped = [p.with_suffix("") for p in sorted(Path(folder).glob("*.csv.gz")) if unzip_stored(p.with_suffix(""))]
    try:
        yield
    finally:
        for p in zipped:
            zip_stored(p)


def zip_stored(path: Path) -> Path:
    """`unzip_stored`'s reverse: `<suite>.csv` gzipped (reproducibly: no time stamp in the
    header) to `<suite>.csv.gz`, atomically, and the plain file removed."""
    gz = path.with_name(path.name + ".gz")
    atomic_write(gz, lambda p: p.write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)))
    path.unlink()
    return gz


class Store:
    """Appends configuration blocks to one CSV; `done` holds the keys of finished blocks."""

    def __init__(self, path: str | Path, header: tuple[str, ...] = HEADER):
        self.path = Path(path)
        self.header = header
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.done: set[tuple[str, ...]] = set()
        self.recovered_bytes = 0  # bytes moved to the quarantine file on opening
        self._failed = False  # an append failed (a full disk): its block may be torn
        self._lock = lock(self.path)
        try:
            self._open()
        except BaseException:
            self._lock.close()
            raise

    def _open(self) -> None:
        unzip_stored(self.path)
        if not self.path.exists() or self.path.stat().st_size == 0:
            with open(self.path, "w", encoding="utf-8", newline="") as fh:
                csv.writer(fh, lineterminator="\n").writerow(self.header)
                fh.flush()
                os.fsync(fh.fileno())
        data = self.path.read_bytes()
        if _header(data) != list(self.header):
            self._migrate()
            data = self.path.read_bytes()
        blocks = scan_blocks(data)
        self.quarantined = set_aside(self.path, blocks)  # where the bytes of no block went
        self.recovered_bytes = blocks.dropped_bytes
        self.done = blocks.done
        self._chunks: dict[tuple[str, ...], bytes] = {}  # stored blocks measured again in part: what they keep
        # stored keys to measure again (redo): the algorithms of the calls to measure, None: all
        self.again: dict[tuple[str, ...], frozenset[str] | None] = {}
        self._fh = open(self.path, "a", encoding="utf-8", newline="")  # noqa: SIM115 - open until close()

    def _migrate(self) -> None:
        """A file written with another column set: rewrite it (atomically) with this header."""
        old = pd.read_csv(self.path, dtype=str, keep_default_na=False, on_bad_lines="skip")
        old = old.reindex(columns=list(self.header), fill_value="")
        atomic_write(self.path, lambda p: old.to_csv(p, index=False, columns=list(self.header)))

    def is_done(self, key: tuple[str, ...]) -> bool:
        return tuple(key) in self.done

    def redo(self, keys: Mapping[tuple[str, ...], frozenset[str] | None] | Iterable[tuple[str, ...]]) -> int:
        """Measure these stored configurations again: they no longer count as done, and each new
        block supersedes the old one (moved to `<name>.superseded` on closing, or on the next
        opening after a crash). Given a mapping, only the calls of those algorithms are measured
        (`calls_of`); `append` keeps the block's other calls. Returns how many of `keys` the
        store held."""
        wanted = dict(keys) if isinstance(keys, Mapping) else dict.fromkeys(keys)
        again = {tuple(k): v for k, v in wanted.items() if tuple(k) in self.done}
        self.done -= set(again)
        self.again.update(again)
        if any(v is not None for v in again.values()):
            chunks = dict(scan_blocks(self.path.read_bytes()).chunks)
            self._chunks.update({k: chunks[k] for k, v in again.items() if v is not None})
        return len(again)

    def calls_of(self, key: tuple[str, ...]) -> frozenset[str] | None:
        """The algorithms to measure of a configuration measured again; None: every call."""
        return self.again.get(tuple(key))

    def _kept_rows(self, key: tuple[str, ...], new: list[dict]) -> list[dict]:
        """A partial redo's block: the stored block's rows of the calls not measured again, then
        the new rows, in the stored block's order of algorithms."""
        calls = self.calls_of(key)
        chunk = self._chunks.get(key)
        if calls is None or chunk is None:
            return new
        old = [dict(zip(self.header, cells)) for cells in csv.reader(io.StringIO(chunk.decode("utf-8")))]
        kept = [r for r in old if r.get("algo", "") not in calls]
        order = {a: i for i, a in enumerate(dict.fromkeys(r.get("algo", "") for r in old))}
        return sorted(kept + new, key=lambda r: order.get(str(r.get("algo", "")), len(order)))

    def append(self, rows: list[dict]) -> None:
        """Write one configuration's rows as a block and make it durable."""
        if not rows:
            return
        keys = {tuple(_cell(r.get(c)) for c in KEY) for r in rows}
        if len(keys) != 1:
            raise ValueError("a block must hold one configuration (suite, config_key, math)")
        rows = self._kept_rows(next(iter(keys)), rows)
        n = len(rows)
        rows = [{**r, "config_rows": n} for r in rows]
        try:
            self._fh.write(format_rows(rows, self.header))
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError:  # a full disk: the block is torn at most, quarantined on the next opening
            self._failed = True
            raise
        self.done |= keys

    def close(self) -> None:
        try:
            if not self._fh.closed:
                self._fh.close()
        except OSError:
            if not self._failed:
                self._lock.close()
                raise
            # after a failed append, closing flushes the block's rest and fails again: the
            # error is the append's, already raised; the file is closed all the same
        try:
            if self.done.intersection(self.again):  # measured again: set the old blocks aside, under the lock
                set_aside(self.path, scan_blocks(self.path.read_bytes()))
        finally:
            self._lock.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_frame(path: str | Path) -> pd.DataFrame:
    """A store file as a conformed record frame (extra columns kept as text); only complete
    configuration blocks are read (`seer.data.records.read_raw` warns about the rest)."""
    return conform(read_raw(path)[0])


def rewrite(path: str | Path, df: pd.DataFrame, header: tuple[str, ...] = HEADER) -> Path:
    """Replace a store file atomically by `df` (the counter pass merges into the records),
    under the store's lock; bytes of the old file that were no complete block are quarantined
    first, so the rewrite loses nothing unseen."""
    df = df.copy()
    rows = df.reindex(columns=list(header)).to_dict("records")
    text = ",".join(header) + "\n" + format_rows(rows, header)
    with held(path):
        return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


@contextmanager
def held(path: str | Path) -> Iterator[bytes]:
    """Hold a store file's lock for the block, which gets the file's bytes once anything in it
    that is no complete configuration block has gone to the quarantine file: a rewrite under
    it (the counter pass, a merge) loses nothing unseen."""
    path = Path(path)
    with lock(path):
        data = path.read_bytes() if path.exists() else b""
        if is_block_file(_header(data) or []):
            blocks = scan_blocks(data)
            set_aside(path, blocks)
            data = blocks.keep
        yield data


def utc_now() -> str:
    """When a row was measured or a file written: UTC, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json(path: str | Path, obj: dict) -> Path:
    return atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"))


def store_files(folder: str | Path) -> Iterable[Path]:
    """The plain suite files a collection appends to and the counter pass rewrites."""
    return sorted(p for p in Path(folder).glob("*.csv") if not p.name.startswith("."))
