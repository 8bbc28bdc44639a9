"""Reading and writing files safely: atomic writes, paths that cannot block a reader, and
one warning format for data that was skipped."""

from __future__ import annotations

import gzip
import json
import os
import stat
import sys
import tempfile
import zlib
from pathlib import Path

from seer.errors import DataError, SeerError

GZIP_MAGIC = b"\x1f\x8b"


def warn(message: str) -> None:
    """One warning line on stderr, as the command line tools print theirs (data kept going)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


def atomic_write(path: str | Path, write) -> Path:
    """Call write(tmp_path) then rename over `path`, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# ---------------------------------------------------------------- reading files safely
def data_path(path: str | Path | None, what: str = "an existing file or folder") -> Path:
    """The path, refused in one sentence if empty, missing, or not a regular file or folder
    (a FIFO or device would block the reader forever)."""
    if path is None or not str(path).strip():
        raise SeerError("no data path given: pass a records file or folder")
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataError(str(path), None, None, what) from None
    except OSError as exc:
        raise DataError(str(path), None, None, f"a readable file or folder ({exc.strerror})") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DataError(str(path), None, None, "a regular file or folder, not a FIFO, socket or device")
    return path


def read_bytes(path: str | Path, what: str = "a CSV file with a header row") -> bytes:
    """A file's content, gunzipped if it ends in .gz or holds gzip data; a missing, special (FIFO, device),
    unreadable, empty or corrupt file is a DataError naming it: every input file of seer is
    opened here, so none can block a reader or end in a traceback."""
    path = data_path(path, "an existing file")
    if path.is_dir():
        raise DataError(str(path), None, None, "a file, not a folder")
    try:
        data = path.read_bytes()
        if path.suffix == ".gz" or data[:2] == GZIP_MAGIC:  # a profiler may gzip a trace kept as .json
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DataError(str(path), None, None, f"a readable file ({reason})".replace("\n", " ")) from None
    if not data.strip():
        raise DataError(str(path), None, None, f"{what}, got an empty file")
    return data


def read_text(path: str | Path, what: str = "a text file") -> str:
    """A file's text (UTF-8, gunzipped if .gz), through read_bytes' checks; bytes that are not
    UTF-8 are a DataError naming the offset."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(str(path), None, None, f"{what} (byte {exc.start} is not UTF-8)") from None


def read_json(path: str | Path, what: str = "a JSON file") -> object:
    """A JSON file's content, through read_text's checks; a truncated or corrupt file is a
    DataError naming the line where parsing stopped."""
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(str(path), None, None, f"{what} (not valid JSON at line {exc.lineno}: {exc.msg})") from None
