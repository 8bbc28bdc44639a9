"""cudnn_bench/unpack_call.sh: a call's data.tgz lands in data/ with every suite the repository
keeps gzipped gzipped again (else a grown grid would not travel to the device), the rest plain."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "cudnn_bench" / "unpack_call.sh"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with the script, a gzipped suite and a plain one, as committed."""
    r = tmp_path / "repo"
    (r / "cudnn_bench").mkdir(parents=True)
    shutil.copy(SCRIPT, r / "cudnn_bench" / SCRIPT.name)
    gpu = r / "data" / "gpu"
    gpu.mkdir(parents=True)
    (gpu / "grid.csv.gz").write_bytes(gzip.compress(b"h\n1\n", mtime=0))
    (gpu / "small.csv").write_text("h\n1\n")
    _git(r, "init", "-q")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "x")
    return r


def _archive(tmp_path: Path) -> Path:
    """What a call packs: data/<gpu>/ with its suites plain and grown."""
    src = tmp_path / "call" / "data" / "gpu"
    src.mkdir(parents=True)
    (src / "grid.csv").write_text("h\n1\n2\n")
    (src / "small.csv").write_text("h\n1\n2\n")
    tgz = tmp_path / "data.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(tmp_path / "call" / "data", arcname="data")
    return tgz


def test_grown_suites_are_gzipped_again(repo: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(repo / "cudnn_bench" / SCRIPT.name), str(_archive(tmp_path))],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    gpu = repo / "data" / "gpu"
    assert not (gpu / "grid.csv").exists()
    assert gzip.decompress((gpu / "grid.csv.gz").read_bytes()) == b"h\n1\n2\n"
    assert (gpu / "small.csv").read_text() == "h\n1\n2\n"  # committed plain: stays plain
    assert not (gpu / "small.csv.gz").exists()


def test_no_archive_is_one_sentence_and_exit_2(repo: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(repo / "cudnn_bench" / SCRIPT.name), str(tmp_path / "none.tgz")],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "data.tgz" in done.stderr


def test_a_pack_in_parts_is_joined_from_the_call_folder(repo: Path, tmp_path: Path) -> None:
    whole = _archive(tmp_path).read_bytes()
    call = tmp_path / "files_at"
    call.mkdir()
    cut = len(whole) // 2
    (call / "data.tgz").write_bytes(whole[:cut])
    (call / "data.tgz.1").write_bytes(whole[cut:])
    done = subprocess.run(
        ["bash", str(repo / "cudnn_bench" / SCRIPT.name), str(call)], cwd=repo, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "2 parts" in done.stdout
    assert gzip.decompress((repo / "data" / "gpu" / "grid.csv.gz").read_bytes()) == b"h\n1\n2\n"
