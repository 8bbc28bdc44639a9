"""What every `python -m seer...` command shares: one-line errors, exit codes, and checks of
paths before any long work (a fit should not run for a minute and then find it cannot write).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from seer.errors import SeerError

INTERRUPTED = 130  # the shell's code for a command stopped by Ctrl-C (128 + SIGINT)


def data_path(text: str) -> Path:
    """argparse type of --data: a non-empty path (an empty one would silently mean the default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "is empty: give a data file or folder, or leave --data out for the default data"
        )
    return Path(text)


def writable_dir(path: str | Path, what: str) -> Path:
    """Make sure `path` is (or can become) a folder we can write in, by writing a probe file:
    permission bits alone do not tell (root ignores them; a read-only mount does not)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise SeerError(f"{what} {path} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as exc:
        raise SeerError(f"{what} {path} cannot be written ({exc.strerror or exc})") from None
    return path


def writable_file(path: str | Path, what: str, suffixes: Iterable[str]) -> Path:
    """Check an output file's name and that its folder takes files, before the work that fills it."""
    path = Path(path)
    suffixes = tuple(suffixes)
    if path.suffix not in suffixes:
        raise SeerError(f"{what} must end in {' or '.join(suffixes)}, got {str(path)!r}")
    if path.is_dir():
        raise SeerError(f"{what} {path} is a folder, not a file")
    writable_dir(path.parent, f"the folder of {what}")
    return path


def known_gpu(name: str, fits_file: bool = True) -> str:
    """Check a --gpu before the work: a GPU seer has fits for or can move fits to (or, with
    `fits_file`, a fits file); anything else is one sentence that lists them, so that a typo or
    an unfitted GPU does not end in a bare "no fits"."""
    from seer.errors import UnknownGPUError
    from seer.hardware import gpus
    from seer.hardware.describe import is_description

    if is_description(name):  # "cc=8.6,sms=84,...": a GPU described, built and registered
        return described_gpu(name)
    if fits_file and (name.endswith(".json") or Path(name).is_file()):
        return name
    try:
        gpus.lookup(name)
    except UnknownGPUError:
        from seer.fitsfile import unknown_gpu

        raise SeerError(unknown_gpu(name, fits_file)) from None
    return name


def described_gpu(description: str, extra: str | None = None) -> str:
    """Register the GPU a --gpu "key=value,..." or --gpu-info FILE (nvidia-smi output, a JSON
    description; `extra`: a --gpu "sms=..." beside it) describes (seer.hardware.describe) and say
    what was assumed; its name, which the GPU lookups then know."""
    from seer.hardware.describe import describe

    r = describe(description, extra)
    if r.note:
        print(f"note: {r.note}", file=sys.stderr, flush=True)
    return r.spec.name


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as the command line tools print theirs: one line, without the source line."""
    print(f"warning: {message}", file=sys.stderr if file is None else file, flush=True)


def run(main: Callable[[], int], prog: str) -> int:
    """Run a command's main: a SeerError or an OS error (disk full, permission) is one line and
    exit code 2, Ctrl-C one line and 130."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_line
            return main()
    except SeerError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; nothing half-written is left behind", file=sys.stderr)
        return INTERRUPTED
    except OSError as exc:  # disk full, permission, a vanished folder: one line, not a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"{prog}: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
