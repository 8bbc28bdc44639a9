"""The harness store's block format: rows of one configuration are written together, each
carrying the block's length, so a torn write is recognised and only complete blocks are read.
A configuration measured again (`collect --redo`) is appended as a new block, which supersedes
the earlier one: readers see the last complete block of each configuration."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data.records.files import read_bytes, warn
from seer.errors import DataError, SeerError

BLOCK_KEY = ("suite", "config_key", "math")  # one configuration's block in a harness store file


def _fields(line: bytes) -> list[str] | None:
    """The cells of one CSV line, None if it does not parse."""
    text = line.decode("utf-8", errors="replace").rstrip("\r\n")
    if '"' not in text:
        return text.split(",")
    try:
        return next(csv.reader([text], strict=True))
    except (csv.Error, StopIteration):
        return None


@dataclass
class Blocks:
    """A store file split into what is kept (the header and every complete configuration
    block) and what is not (torn lines, garbage, incomplete blocks), with line numbers."""

    keep: bytes
    kept_lines: list[int] = field(default_factory=list)  # line number of each kept row
    dropped: list[tuple[int, bytes]] = field(default_factory=list)  # (line number, bytes)
    done: set[tuple[str, ...]] = field(default_factory=set)  # BLOCK_KEY of every complete block
    chunks: list[tuple[tuple[str, ...], bytes]] = field(default_factory=list)  # each kept block: key, bytes
    superseded: list[tuple[tuple[str, ...], bytes]] = field(default_factory=list)  # complete, measured again later

    @property
    def dropped_bytes(self) -> int:
        return sum(len(b) for _, b in self.dropped)

    def describe(self) -> str:
        """'3 lines (812 bytes: lines 14-16)': what was dropped, for a warning."""
        runs: list[list[int]] = []
        for n, _ in self.dropped:
            if runs and runs[-1][1] == n - 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        shown = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:5])
        more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
        k = len(self.dropped)
        return f"{k} line{'s' * (k != 1)} ({self.dropped_bytes} bytes: line{'s' * (k != 1)} {shown}{more})"


def is_block_file(header: Iterable[str]) -> bool:
    """Whether a CSV header is a harness store's: every row carries its block's key and length."""
    return {*BLOCK_KEY, "config_rows"} <= set(header)


def scan_blocks(data: bytes) -> Blocks:
    """Split a store file's bytes into complete blocks and the rest. A block is consecutive rows
    of one configuration (BLOCK_KEY), each carrying config_rows = the block's length; every
    complete line ends in a newline, so a last line without one is torn. A bad line or a new
    block ends the block in progress: an incomplete block is never kept. Of two complete blocks
    of one configuration the later is kept and the earlier is `superseded`."""
    if b"\n" not in data:  # a header alone: its newline may be all that is missing
        data += b"\n"
    nl = data.find(b"\n")
    header = _fields(data[:nl]) or []
    if not is_block_file(header):
        raise SeerError("scan_blocks needs a store file's header (suite, config_key, math, config_rows)")
    idx = [header.index(c) for c in BLOCK_KEY]
    i_rows, width = header.index("config_rows"), len(header)
    out = Blocks(b"")
    kept: dict[tuple[str, ...], list[tuple[int, bytes]]] = {}  # the last complete block of each key
    block: list[tuple[int, bytes]] = []
    key, want = None, 0
    pos, line = nl + 1, 2
    while pos < len(data):
        end = data.find(b"\n", pos)
        chunk = data[pos:] if end < 0 else data[pos : end + 1]
        cells = _fields(chunk) if end >= 0 else None
        n = int(cells[i_rows]) if cells and len(cells) == width and cells[i_rows].isdigit() else 0
        if n < 1:  # torn, blank or garbage: it ends the block in progress
            out.dropped += block + [(line, chunk)]
            block, key = [], None
        else:
            assert cells is not None  # n >= 1 was read from them
            k = tuple(cells[i] for i in idx)
            if block and (k, n) != (key, want):  # a new block before the last one was complete
                out.dropped += block
                block = []
            key, want = k, n
            block.append((line, chunk))
            if len(block) == want:
                if k in kept:
                    out.superseded.append((k, b"".join(c for _, c in kept.pop(k))))
                kept[k] = block
                block = []
        pos, line = (len(data) if end < 0 else end + 1), line + 1
    out.dropped += block
    out.dropped.sort(key=lambda d: d[0])
    out.chunks = [(k, b"".join(c for _, c in b)) for k, b in kept.items()]
    out.kept_lines = [ln for b in kept.values() for ln, _ in b]
    out.done = set(kept)
    out.keep = data[: nl + 1] + b"".join(c for _, c in out.chunks)
    return out


def read_raw(path: str | Path) -> tuple[pd.DataFrame, np.ndarray]:
    """A CSV's cells as text and each row's line number. A harness store file (rows carrying
    config_rows) keeps only its complete configuration blocks and warns about the rest."""
    data = read_bytes(path)
    lines = None
    if is_block_file(_fields(data.split(b"\n", 1)[0]) or []):
        blocks = scan_blocks(data)
        if blocks.dropped:
            warn(
                f"{path}: skipped {blocks.describe()}: not part of a complete configuration block "
                "(a torn write or garbage)"
            )
        data, lines = blocks.keep, np.asarray(blocks.kept_lines, dtype=int)
    try:
        raw = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(str(path), None, None, f"a readable CSV file ({exc})".replace("\n", " ")) from None
    return raw, (np.arange(len(raw)) + 2 if lines is None else lines)
