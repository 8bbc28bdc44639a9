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
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from seer.data.records import atomic_write, is_block_file, scan_blocks, warn
from seer.hardware import gpus

from .errors import BenchError
from .store import HEADER, _header, format_rows, held, lock, store_files, utc_now, write_json

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
    path = folder / "device.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BenchError(f"merge: {path} is not readable JSON ({exc})") from None
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
    """A source's blocks, read under its lock (a source is never written: no quarantine)."""
    with lock(path):
        return read_blocks(path, path.read_bytes())


def merge_file(path: Path, sources: list[tuple[str, list[Block]]], result: MergeResult) -> None:
    """Append to one target file, under its lock, the sources' blocks it lacks (written
    atomically; torn bytes of the target are moved to its quarantine file first, not lost)."""
    with held(path) as data:
        have = read_blocks(path, data) if data else []
        seen = {k for k, _ in have}
        added: list[bytes] = []
        for origin, blocks in sources:
            for key, chunk in blocks:
                if key in seen:
                    result.repeated += 1
                    continue
                seen.add(key)
                added.append(chunk)
                result.rows += chunk.count(b"\n")
                result.per_store[origin] = result.per_store.get(origin, 0) + 1
        result.added += len(added)
        result.held += len(seen)
        if added or not path.exists():
            text = (",".join(HEADER) + "\n").encode() + b"".join(c for _, c in have) + b"".join(added)
            atomic_write(path, lambda p: p.write_bytes(text))


def merge_gpu(slug: str, stores: list[StoreFolder], target: Path) -> MergeResult:
    """Merge one GPU's stores into its target folder, suite file by suite file, after checking
    that they and the target agree on GPU, driver and libraries; device.json records the merge."""
    result = MergeResult(slug, target, len(stores))
    files = {s.path: {f.name: _read_locked(f) for f in s.files()} for s in stores}
    mine: dict[str, list[Block]] = {}
    if (target / "device.json").is_file():
        mine = {f.name: _read_locked(f) for f in store_files(target)}
    idents = {target: identity([b for blocks in mine.values() for b in blocks])} if mine else {}
    idents |= {p: identity([b for blocks in by_name.values() for b in blocks]) for p, by_name in files.items()}
    check_identity(slug, idents)
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(set(mine) | {n for by_name in files.values() for n in by_name}):
        merge_file(target / name, [(str(s.path), files[s.path].get(name, [])) for s in stores], result)
    doc = read_device(target) if (target / "device.json").is_file() else dict(stores[0].device)
    doc.setdefault("merged", [])
    doc["merged"].append({"at": utc_now(), "added": result.added, "from": dict(result.per_store)})
    write_json(target / "device.json", doc)
    return result


def merge(sources: Sequence[Path], out: Path, log: Callable[[str], None] | None = None) -> list[MergeResult]:
    """`python -m cudnn_bench merge`: every store under the sources into OUT/<gpu-slug>/."""
    out = Path(out)
    stores = find_stores(sources, exclude=[p.parent for p in out.glob("*/device.json")])
    by_slug: dict[str, list[StoreFolder]] = {}
    for s in stores:
        by_slug.setdefault(s.slug, []).append(s)
    results = []
    for slug, group in sorted(by_slug.items()):
        res = merge_gpu(slug, group, out / slug)
        if log:
            log(res.summary())
        results.append(res)
    return results
