"""seer.fitsfile.read: every file that is no fits file is one sentence naming it; a FIFO or device
is refused before it is opened (reading it would block forever)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from badfiles import unreadable

from seer import fitsfile
from seer.errors import SeerError

ROOT = Path(__file__).resolve().parents[3]


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fits.json"
    os.mkfifo(fifo)
    code = "import sys, seer\ntry:\n    seer.load(sys.argv[1])\nexcept seer.SeerError as e:\n    print(e)\n"
    r = subprocess.run(
        [sys.executable, "-c", code, str(fifo)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )  # the old reader blocked here until the timeout
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.strip() == f"{fifo}: expected a regular file or folder, not a FIFO, socket or device"


def test_an_unreadable_file_is_one_sentence(tmp_path, monkeypatch):
    path = tmp_path / "t4.json"
    path.write_text("{}")
    unreadable(monkeypatch, path)
    with pytest.raises(SeerError) as info:
        fitsfile.read(path)
    assert str(info.value) == f"{path}: expected a readable file (Permission denied)"


@pytest.mark.parametrize(
    "content,match",
    [
        (None, "fits file .*nope.json does not exist"),
        (b"", "got an empty file"),
        (b'{"schema": "seer.fits/2", "gpu": ', r"is not valid JSON \(truncated or corrupt at line 1\)"),
        (b"\xff\xfe{}", r"byte 0 is not UTF-8"),
        ("folder", "a file, not a folder"),
    ],
)
def test_missing_empty_corrupt_binary_files_and_folders_are_one_sentence(tmp_path, content, match):
    path = tmp_path / "nope.json"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(SeerError, match=match) as info:
        fitsfile.read(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
