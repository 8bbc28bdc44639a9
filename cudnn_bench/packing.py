"""A call's data/ packed for the trip home through the device tool's $OUT.

The tool brings back at most 8 files of 16 MiB each, 64 MiB together, and leaves out any file over
that, silently for the call. On 2026-11-27 the H100's data/ outgrew one 15 MiB archive: every
pack after the call's first minute was left out and a 9-minute call's 1,006 configurations were
lost. So a pack holds only what the call wrote or changed (the CPU side already has the rest:
the device starts from its working tree), and an archive larger than one file is split into
numbered parts, `data.tgz`, `data.tgz.1`, `data.tgz.2`, that concatenate back into one gzipped tar:
    cat data.tgz data.tgz.[0-9]* | tar xz        (cudnn_bench/unpack_call.sh does this)
"""

from __future__ import annotations

import os
import tarfile
import threading
from pathlib import Path
from typing import BinaryIO, cast

MAX_PART_BYTES = 15 << 20  # the device tool returns files of at most 16 MiB
MAX_PARTS = 3  # 45 MiB of data, leaving room in the 8 files and 64 MiB for ncu.tgz and the logs

Snapshot = dict[str, tuple[int, int]]  # path relative to data/'s parent -> (size, mtime_ns)
_PACKING = threading.Lock()  # the packer thread and the steps' own packs share the .part files


def _files(data: Path) -> list[Path]:
    return sorted(
        p for p in data.rglob("*") if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".lock")
    )


def _stamp(p: Path) -> tuple[int, int] | None:
    try:
        st = p.stat()
    except OSError:  # replaced or removed since it was listed
        return None
    return st.st_size, st.st_mtime_ns


def snapshot(data: Path) -> Snapshot:
    """What data/ holds before a call writes anything: a pack then carries only what changed."""
    if not data.is_dir():
        return {}
    stamps = {str(p.relative_to(data.parent)): _stamp(p) for p in _files(data)}
    return {k: v for k, v in stamps.items() if v is not None}


class _Parts:
    """A write-only stream cut into files of at most MAX_PART_BYTES: `<name>.part`, `<name>.1.part`..."""

    def __init__(self, out_dir: Path, name: str):
        self.out_dir, self.name = out_dir, name
        self.paths: list[Path] = []
        self._fh: BinaryIO | None = None
        self._left = 0

    def _next(self) -> None:
        if self._fh is not None:
            self._fh.close()
        k = len(self.paths)
        self.paths.append(self.out_dir / (f"{self.name}.part" if k == 0 else f"{self.name}.{k}.part"))
        self._fh = open(self.paths[-1], "wb")  # noqa: SIM115 (closed by _next and close)
        self._left = MAX_PART_BYTES

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            if self._fh is None or self._left == 0:
                self._next()
            assert self._fh is not None
            n = min(self._left, len(view))
            self._fh.write(view[:n])
            self._left -= n
            view = view[n:]
        return len(data)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def part_names(name: str, n: int) -> list[str]:
    """The names of an archive's n parts as they come home, in the order they concatenate."""
    return [name] + [f"{name}.{k}" for k in range(1, n)]


def _write(files: list[Path], root: Path, out_dir: Path, name: str) -> str:
    parts = _Parts(out_dir, name)
    try:
        # "w|gz": a stream, which only writes (no seek back over what a finished part holds)
        with tarfile.open(fileobj=cast(BinaryIO, parts), mode="w|gz") as tar:
            for p in files:
                try:
                    tar.add(p, arcname=str(p.relative_to(root)))
                except OSError:  # a file replaced while packing: the next pack has it
                    continue
    finally:
        parts.close()
    if len(parts.paths) > MAX_PARTS:
        for p in parts.paths:
            p.unlink()
        return f"{name} left out: over {MAX_PARTS} parts of {MAX_PART_BYTES >> 20} MiB"
    final = part_names(name, len(parts.paths))
    for p, f in zip(parts.paths, final, strict=True):
        os.replace(p, out_dir / f)
    for stale in out_dir.glob(f"{name}.[0-9]*"):  # a larger earlier pack's tail
        if stale.name not in final and not stale.name.endswith(".part"):
            stale.unlink()
    return name if len(final) == 1 else f"{name} in {len(final)} parts"


def pack(data: Path, out_dir: Path, since: Snapshot | None = None) -> list[str]:
    """data/ into out_dir/data.tgz (ncu reports apart, into ncu.tgz: they are large): with
    `since`, only the files new or changed since that snapshot. Each part is written beside and
    renamed over the last, so a kill mid-write leaves the previous pack."""
    with _PACKING:
        if not data.is_dir():
            return []
        before = since or {}
        changed = [p for p in _files(data) if before.get(str(p.relative_to(data.parent))) != _stamp(p)]
        written = []
        for name, want in (
            ("data.tgz", lambda p: not p.name.endswith(".ncu-rep")),
            ("ncu.tgz", lambda p: p.name.endswith(".ncu-rep")),
        ):
            files = [p for p in changed if want(p)]
            if files:
                written.append(_write(files, data.parent, out_dir, name))
        return written
