"""cudnn_bench/packing.py: a call's pack carries what it changed, in parts the device tool brings
home (files of at most 16 MiB), that concatenate back into the archive."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from cudnn_bench import packing


def _unpacked(out: Path, name: str = "data.tgz") -> dict[str, bytes]:
    parts = [out / name] + sorted(out.glob(f"{name}.[0-9]*"), key=lambda p: int(p.suffix[1:]))
    blob = b"".join(p.read_bytes() for p in parts)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    gpu = tmp_path / "data" / "gpu"
    gpu.mkdir(parents=True)
    (gpu / "grid.csv").write_text("h\n1\n")
    (gpu / "old.csv.gz").write_bytes(b"committed")
    (gpu / ".grid.csv.lock").write_text("")
    return tmp_path / "data"


def test_a_pack_carries_only_what_changed_since_the_call_began(data: Path, tmp_path: Path) -> None:
    before = packing.snapshot(data)
    out = tmp_path / "out"
    out.mkdir()
    assert packing.pack(data, out, before) == []  # nothing written yet: nothing to carry
    with open(data / "gpu" / "grid.csv", "a") as fh:
        fh.write("2\n")
    (data / "gpu" / "traces").mkdir()
    (data / "gpu" / "traces" / "t.json").write_text("{}")
    assert packing.pack(data, out, before) == ["data.tgz"]
    assert _unpacked(out) == {"data/gpu/grid.csv": b"h\n1\n2\n", "data/gpu/traces/t.json": b"{}"}
    assert not list(out.glob("*.part"))


def test_without_a_snapshot_everything_but_locks_is_packed(data: Path, tmp_path: Path) -> None:
    packing.pack(data, tmp_path)
    assert set(_unpacked(tmp_path)) == {"data/gpu/grid.csv", "data/gpu/old.csv.gz"}


def test_a_large_pack_comes_in_parts_that_concatenate(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packing, "MAX_PART_BYTES", 40_000)
    blob = os.urandom(100_000)  # incompressible: about three parts
    (data / "gpu" / "grid.csv").write_bytes(blob)
    out = tmp_path / "out"
    out.mkdir()
    (out / "data.tgz.7").write_bytes(b"a larger earlier pack's tail")
    written = packing.pack(data, out, {})
    assert written == ["data.tgz in 3 parts"]
    assert sorted(p.name for p in out.iterdir()) == ["data.tgz", "data.tgz.1", "data.tgz.2"]
    assert all(p.stat().st_size <= 40_000 for p in out.iterdir())
    assert _unpacked(out)["data/gpu/grid.csv"] == blob


def test_a_pack_over_the_parts_the_tool_returns_is_left_out_and_the_last_one_kept(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    packing.pack(data, out, {})
    kept = (out / "data.tgz").read_bytes()
    monkeypatch.setattr(packing, "MAX_PART_BYTES", 10_000)
    (data / "gpu" / "grid.csv").write_bytes(os.urandom(50_000))
    [note] = packing.pack(data, out, {})
    assert note.startswith("data.tgz left out: over 3 parts")
    assert (out / "data.tgz").read_bytes() == kept and not list(out.glob("*.part"))
