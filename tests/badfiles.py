"""Bad input files for tests: FIFOs that cannot hang a test, and files a non-root user could not
read.

seer must refuse a FIFO before opening it; should it open one to read (and block), `unblocking`
opens and closes the write end after WATCHDOG_S, so the reader sees an empty file and the test
fails instead of hanging. Tests run as root, which ignores chmod 000: `unreadable` makes a file
raise what reading it would raise for another user."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

WATCHDOG_S = 20.0


@contextmanager
def unblocking(fifo: Path) -> Iterator[None]:
    done = threading.Event()

    def writer() -> None:
        if done.wait(WATCHDOG_S):
            return
        while not done.is_set():
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # ENXIO while nobody reads
            except OSError:
                pass
            time.sleep(0.1)

    threading.Thread(target=writer, daemon=True).start()
    try:
        yield
    finally:
        done.set()


def unreadable(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Reading `path` (Path.read_bytes, which seer's opener uses) raises PermissionError, as
    chmod 000 does for a user other than root."""
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
