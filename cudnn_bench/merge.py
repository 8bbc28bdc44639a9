"""Merge resumable stores into one data folder per GPU: OUT/<gpu-slug>/<suite>.csv.

Shards of one plan (`collect --shard i/n`, `collect --ray`) and sessions on other days or
machines each leave a store folder: `device.json` beside `<suite>.csv` files of configuration
blocks (cudnn_bench.store). `merge` finds every store folder under its sources, groups them by
GPU (the slug of the device name), refuses to mix GPUs, drivers or library versions within one
slug (the rows would pass for one GPU's and are not), and appends to the target every
configuration block it does not hold yet, each exactly once: a configuration found twice keeps
its first block (the target's own, then the sources in order, shard 2 before shard 10). Blocks
are copied byte for byte; a torn tail of a source is left out with a warning. A store still
being written (its lock held) is refused, and so is a target a collect is writing. The target
stays a store: a later collect resumes it, a later merge adds to it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from seer.data.records import atomic_write, data_path, is_block_file, read_json, scan_blocks, warn
from seer.errors import SeerError
from seer.hardware import gpus

from .errors import BenchError, is_disk_full
from .store import HEADER, _header, format_rows, held, lock, out_folder, store_files, utc_now, write_json

# Row columns that must agree within one GPU slug, and what a message calls them.
IDENTITY: dict[str, str] = {
    "gpu": "GPU",
    "cc": "compute capability",
    "driver_version": "driver",
    "cuda_version": "CUDA version",
    "cudnn_version": "cuDNN version",
    "cublas_version": "cuBLASLt version",
}
Block = tuple[tuple[str, ...], bytes]  # (suite, config_key, math), the block's CSV lines


@dataclass(frozen=True)
class StoreFolder:
    """One collect's output folder: device.json and its <suite>.csv files."""

    path: Path
    device: dict

    @property
    def slug(self) -> str:
        return gpus.slug_for(str(self.device.get("device", {}).get("name", "")))

    def files(self) -> list[Path]:
        return list(store_files(self.path))


@dataclass
class MergeResult:
    """What one GPU's merge did."""

    slug: str
    folder: Path
    stores: int
    added: int = 0  # configuration blocks appended
    rows: int = 0  # rows appended
    repeated: int = 0  # blocks left out: the configuration was already in the target or an earlier store
    held: int = 0  # configurations the target holds after the merge
    per_store: dict[str, int] = field(default_factory=dict)  # store path -> blocks it added

    def summary(self) -> str:
        return (
            f"{self.slug}: {self.added} configurations ({self.rows} rows) from {self.stores} stores into "
            f"{self.folder}, {self.held} in all"
            + (f"; {self.repeated} found again were kept once" if self.repeated else "")
        )


def _natural(path: Path) -> list:
    """Sort key that puts shard 2 before shard 10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def read_device(folder: Path) -> dict:
    """A store's device.json, through seer's safe reader: a FIFO or device is refused before it
    is opened (it would block the merge forever), an unreadable or corrupt file is one sentence."""
    path = folder / "device.json"
    try:
        doc = read_json(path, "the device.json collect writes")
    except SeerError as exc:
        raise BenchError(f"merge: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("device"), dict) or not doc["device"].get("name"):
        raise BenchError(f"merge: {path} names no device (expected the device.json collect writes)")
    return doc


def find_stores(sources: Sequence[Path], exclude: Sequence[Path] = ()) -> list[StoreFolder]:
    """Every store folder under the sources (a folder holding device.json), in source order
    and then natural path order; folders in `exclude` (the targets) are not sources."""
    skip = {p.resolve() for p in exclude}
    out: list[StoreFolder] = []
    for src in sources:
        src = Path(src)
        if not src.is_dir():
            raise BenchError(f"merge: {src} is not a folder")
        found = sorted((p.parent for p in src.rglob("device.json")), key=_natural)
        if not found:
            raise BenchError(
                f"merge: no store under {src} (a folder with device.json and <suite>.csv files from collect)"
            )
        out += [StoreFolder(f, read_device(f)) for f in found if f.resolve() not in skip]
    return out


def read_blocks(path: Path, data: bytes) -> list[Block]:
    """The complete configuration blocks of a store file's bytes, as lines of HEADER. A file
    written with another column set is re-formatted in memory (cells unchanged); the caller
    holds its lock."""
    head = _header(data)
    if head is None:
        return []
    if not is_block_file(head):
        raise BenchError(f"merge: {path} is not a store file (its header lacks suite, config_key, math, config_rows)")
    blocks = scan_blocks(data)
    if blocks.dropped:
        warn(f"{path}: {blocks.describe()} are no complete configuration block and are left out of the merge")
    if head == list(HEADER):
        return blocks.chunks
    raw = pd.read_csv(io.BytesIO(blocks.keep), dtype=str, keep_default_na=False)
    rows = raw.reindex(columns=list(HEADER), fill_value="").to_dict("records")
    return scan_blocks((",".join(HEADER) + "\n" + format_rows(rows)).encode()).chunks


def identity(blocks: list[Block]) -> dict[str, set[str]]:
    """The values each IDENTITY column takes in the blocks (empty cells aside)."""
    idx = {c: HEADER.index(c) for c in IDENTITY}
    seen: dict[str, set[str]] = {c: set() for c in IDENTITY}
    for _, chunk in blocks:
        for cells in csv.reader(io.StringIO(chunk.decode("utf-8", errors="replace"))):
            for c, i in idx.items():
                if i < len(cells) and cells[i]:
                    seen[c].add(cells[i])
    return seen


def check_identity(slug: str, found: dict[Path, dict[str, set[str]]]) -> None:
    """Refuse, in one sentence, a slug whose stores disagree on a GPU, driver or library."""
    for col, label in IDENTITY.items():
        where: dict[str, list[str]] = {}
        for folder, ident in found.items():
            for v in sorted(ident[col]):
                where.setdefault(v, []).append(str(folder))
        if len(where) > 1:
            shown = "; ".join(f"{v} in {', '.join(f[:2])}{' ...' if len(f) > 2 else ''}" for v, f in where.items())
            raise BenchError(
                f"merge: refusing to mix {label}s within {slug} ({shown}): rows of one data folder "
                "must come from one GPU, driver and library set; merge each into its own --out folder"
            )


def _read_locked(path: Path) -> list[Block]:
    """A source's blocks, read under its lock (a source is never written: no quarantine). A FIFO
    or device is refused before it is opened (reading it would block forever), an unreadable
    file is one sentence."""
    try:
        data_path(path, "an existing store file")
    except SeerError as exc:
        raise BenchError(f"merge: {exc}") from None
    if path.is_dir():
        raise BenchError(f"merge: {path} is a folder, not a store file")
    with lock(path):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise BenchError(f"merge: {path} cannot be read ({exc.strerror or exc})") from None
        return read_blocks(path, data)


def check_gpu(store: StoreFolder, files: dict[str, list[Block]]) -> None:
    """Refuse, in one sentence, a store file holding rows of another GPU than its device.json
    names: the merge files rows under the slug of device.json, where they would pass for that
    GPU's."""
    claimed = str(store.device["device"]["name"])
    for name, blocks in files.items():
        other = sorted(g for g in identity(blocks)["gpu"] if gpus.slug_for(g) != store.slug)
        if other:
            raise BenchError(
                f"merge: {store.path / name} holds rows of {other[0]} ({gpus.slug_for(other[0])}) but its "
                f"device.json names {claimed} ({store.slug}): refusing to file them under {store.slug}; "
                "nothing was merged"
            )


def merge_file(path: Path, sources: list[tuple[str, list[Block]]], result: MergeResult) -> None:
    """Append to one target file, under its lock, the sources' blocks it lacks (written
    atomically; torn bytes of the target are moved to its quarantine file first, not lost)."""
    with held(path) as data:
        have = read_blocks(path, data) if data else []
        seen = {k for k, _ in have}
        added: list[bytes] = []
        repeated, rows = 0, 0
        per_store: dict[str, int] = {}
        for origin, blocks in sources:
            for key, chunk in blocks:
                if key in seen:
                    repeated += 1
                    continue
                seen.add(key)
                added.append(chunk)
                rows += chunk.count(b"\n")
                per_store[origin] = per_store.get(origin, 0) + 1
        if added or not path.exists():
            text = (",".join(HEADER) + "\n").encode() + b"".join(c for _, c in have) + b"".join(added)
            atomic_write(path, lambda p: p.write_bytes(text))
    # counted once written: a failed write (a full disk) leaves the result at what is on disk
    result.added += len(added)
    result.rows += rows
    result.repeated += repeated
    result.held += len(seen)
    for origin, n in per_store.items():
        result.per_store[origin] = result.per_store.get(origin, 0) + n


Files = dict[Path, dict[str, list[Block]]]  # store folder -> its file names -> their blocks


def read_stores(stores: list[StoreFolder]) -> Files:
    """Every store's blocks, each file checked against its device.json's GPU (check_gpu)."""
    files = {s.path: {f.name: _read_locked(f) for f in s.files()} for s in stores}
    for s in stores:
        check_gpu(s, files[s.path])
    return files


def check_gpu_group(slug: str, stores: list[StoreFolder], target: Path, files: Files) -> dict[str, list[Block]]:
    """Check that one GPU's stores and its target agree on GPU, driver and libraries; the
    target's own blocks (empty for a new target)."""
    mine: dict[str, list[Block]] = {}
    if (target / "device.json").is_file():
        mine = {f.name: _read_locked(f) for f in store_files(target)}
    idents = {target: identity([b for blocks in mine.values() for b in blocks])} if mine else {}
    idents |= {s.path: identity([b for blocks in files[s.path].values() for b in blocks]) for s in stores}
    check_identity(slug, idents)
    return mine


def write_gpu(
    stores: list[StoreFolder], mine: dict[str, list[Block]], files: Files, result: MergeResult
) -> MergeResult:
    """Append one GPU's stores to its target folder, suite file by suite file (each written
    atomically; `result` counts what is on disk); device.json records the merge."""
    target = result.folder
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(set(mine) | {n for s in stores for n in files[s.path]}):
        merge_file(target / name, [(str(s.path), files[s.path].get(name, [])) for s in stores], result)
    doc = read_device(target) if (target / "device.json").is_file() else dict(stores[0].device)
    doc.setdefault("merged", [])
    doc["merged"].append({"at": utc_now(), "added": result.added, "from": dict(result.per_store)})
    write_json(target / "device.json", doc)
    return result


def merge_gpu(slug: str, stores: list[StoreFolder], target: Path) -> MergeResult:
    """Merge one GPU's stores into its target folder, after checking that every row is of the
    GPU its device.json names and that they and the target agree on GPU, driver and libraries."""
    files = read_stores(stores)
    mine = check_gpu_group(slug, stores, target, files)
    return write_gpu(stores, mine, files, MergeResult(slug, target, len(stores)))


def merge(sources: Sequence[Path], out: Path, log: Callable[[str], None] | None = None) -> list[MergeResult]:
    """`python -m cudnn_bench merge`: every store under the sources into OUT/<gpu-slug>/. Every
    store and target is read and checked before anything is written, so a refusal writes nothing;
    a write that fails (a full disk) is one sentence saying what is safely merged."""
    out = out_folder(Path(out), "merge --out")
    stores = find_stores(sources, exclude=[p.parent for p in out.glob("*/device.json")])
    by_slug: dict[str, list[StoreFolder]] = {}
    for s in stores:
        by_slug.setdefault(s.slug, []).append(s)
    files = read_stores(stores)
    mine = {slug: check_gpu_group(slug, group, out / slug, files) for slug, group in by_slug.items()}
    results: list[MergeResult] = []
    for slug, group in sorted(by_slug.items()):
        results.append(MergeResult(slug, out / slug, len(group)))
        try:
            write_gpu(group, mine[slug], files, results[-1])
        except OSError as exc:
            raise BenchError(write_failed(exc, results)) from None
        if log:
            log(results[-1].summary())
    return results


def write_failed(exc: OSError, results: list[MergeResult]) -> str:
    """One sentence for a merge whose write failed: what is safely on disk, and that a rerun
    adds the rest (every file is replaced atomically, so none is half-written)."""
    why = "the disk is full" if is_disk_full(exc) else (exc.strerror or str(exc))
    added, rows = sum(r.added for r in results), sum(r.rows for r in results)
    fix = "free space" if is_disk_full(exc) else "fix that"
    return (
        f"merge: {why} writing into {results[-1].folder}: {added} configurations ({rows} rows) are merged "
        f"and safely on disk, no file is half-written; {fix} and rerun the same merge to add the rest"
    )
