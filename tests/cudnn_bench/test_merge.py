"""Merging stores (shards, sessions) into data/<gpu-slug>/: every row once, nothing mixed."""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from badfiles import unreadable
from fakes import fake_env
from stores import ORDER, SUITES, assert_same_rows, collect_into, rows_of

from cudnn_bench import collect as K
from cudnn_bench.__main__ import main
from cudnn_bench.errors import BenchError
from cudnn_bench.merge import merge
from cudnn_bench.plan import Budget, Shard
from cudnn_bench.store import lock

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    return collect_into(tmp_path_factory.mktemp("whole"))


@pytest.fixture(scope="module")
def shard_stores(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shards")
    for i in (1, 2, 3):
        collect_into(root / f"{i}-of-3", Shard(i, 3))
    return root


@pytest.fixture
def shards(shard_stores, tmp_path) -> Path:
    """Three shard stores of the plan, a copy each test may spoil."""
    return Path(shutil.copytree(shard_stores, tmp_path / "shards"))


def test_shards_merge_into_the_single_run(shards, whole, tmp_path):
    logged = []
    (res,) = merge([shards], tmp_path / "data", logged.append)
    assert res.slug == "h100-sxm" and res.stores == 3 and res.repeated == 0
    assert res.added == res.held == 300 and res.folder == tmp_path / "data" / "h100-sxm"
    assert_same_rows(res.folder, whole)
    assert not rows_of(res.folder).duplicated(ORDER).any()
    assert "300 configurations" in logged[0]
    # the target is a store: a collect into it finds everything done
    again = K.run(K.Options(out=tmp_path / "data", suites=SUITES, budget=Budget(), progress=False,
                            counters="none"), fake_env(), log=lambda s: None)
    assert (again.measured, again.skipped) == (0, 300)


def test_merging_again_or_overlapping_stores_keeps_every_row_once(shards, whole, tmp_path):
    out = tmp_path / "data"
    merge([shards], out)
    (res,) = merge([shards, whole.parent], out)  # the same shards again and the whole run
    assert res.added == 0 and res.repeated == 600 and res.held == 300
    assert_same_rows(out / "h100-sxm", whole)
    merged = out / "h100-sxm" / "device.json"
    assert [m["added"] for m in pd.read_json(merged, typ="series")["merged"]] == [300, 0]


def test_a_store_with_another_library_version_is_refused(shards, tmp_path):
    f = shards / "2-of-3" / "h100-sxm" / "test_set_ii.csv"
    f.write_text(f.read_text().replace(",9.28.0,", ",9.29.1,"))
    with pytest.raises(BenchError, match=r"refusing to mix cuDNN versions within h100-sxm \(9\.28\.0 in .*9\.29\.1"):
        merge([shards], tmp_path / "data")
    assert not (tmp_path / "data" / "h100-sxm").exists()


def test_a_target_of_another_driver_is_refused(shards, tmp_path):
    (res,) = merge([shards / "1-of-3"], tmp_path / "data")
    f = res.folder / "gemm_layers.csv"
    f.write_text(f.read_text().replace(",580.159.04,", ",575.1.0,"))
    with pytest.raises(BenchError, match="refusing to mix drivers"):
        merge([shards / "2-of-3"], tmp_path / "data")


def test_a_store_being_written_is_refused(shards, tmp_path):
    with lock(shards / "3-of-3" / "h100-sxm" / "gemm_layers.csv"), pytest.raises(BenchError, match="being written"):
        merge([shards], tmp_path / "data")


def test_a_torn_tail_is_left_out_and_an_older_column_set_is_read(shards, whole, tmp_path, capsys):
    f = shards / "1-of-3" / "h100-sxm" / "test_set_ii.csv"
    with open(f, "a") as fh:
        fh.write("seer,test_set_ii,NVIDIA H100")  # a write cut short by a crash
    g = shards / "2-of-3" / "h100-sxm" / "gemm_layers.csv"
    pd.read_csv(g, dtype=str, keep_default_na=False).drop(columns=["cluster_x", "lt_stages"]).to_csv(g, index=False)
    (res,) = merge([shards], tmp_path / "data")
    assert "left out of the merge" in capsys.readouterr().err
    got = rows_of(res.folder).drop(columns=["cluster_x", "lt_stages"])
    want = rows_of(whole).drop(columns=["cluster_x", "lt_stages"])
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=0, atol=2e-6)


def test_merge_command(shards, tmp_path, capsys):
    assert main(["merge", str(shards), "--out", str(tmp_path / "data")]) == 0
    assert "h100-sxm: 300 configurations" in capsys.readouterr().out
    assert main(["merge", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a folder" in err
    (tmp_path / "empty").mkdir()
    assert main(["merge", str(tmp_path / "empty")]) == 2
    assert "no store under" in capsys.readouterr().err


def test_rows_of_another_gpu_than_device_json_are_refused_and_nothing_is_written(shards, tmp_path):
    device = shards / "2-of-3" / "h100-sxm" / "device.json"
    doc = json.loads(device.read_text())
    doc["device"]["name"] = "Tesla T4"  # the rows stay the H100's
    device.write_text(json.dumps(doc))
    with pytest.raises(BenchError) as info:
        merge([shards], tmp_path / "data")
    msg = str(info.value)
    assert "\n" not in msg and str(shards / "2-of-3" / "h100-sxm") in msg
    assert "rows of NVIDIA H100 80GB HBM3" in msg and "device.json names Tesla T4 (t4)" in msg
    assert not (tmp_path / "data").exists()


def _merge_cli(*args: str) -> subprocess.CompletedProcess:
    """python -m cudnn_bench merge in a child process: a read that blocks ends with the timeout."""
    return subprocess.run([sys.executable, "-m", "cudnn_bench", "merge", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("name", ["test_set_ii.csv", "device.json"])
def test_a_fifo_in_a_store_is_refused_without_blocking(name, shards, tmp_path):
    fifo = shards / "3-of-3" / "h100-sxm" / name
    fifo.unlink()
    os.mkfifo(fifo)
    r = _merge_cli(str(shards), "--out", str(tmp_path / "data"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"cudnn_bench: merge: {fifo}: expected a regular file or folder, "
                                             "not a FIFO, socket or device"]


def test_a_full_disk_mid_merge_says_what_is_merged_and_a_rerun_adds_the_rest(shards, whole, tmp_path, monkeypatch,
                                                                             capsys):
    import cudnn_bench.merge as MG

    real, writes = MG.atomic_write, []

    def filling(path, write):  # the second suite file does not fit
        writes.append(path)
        if len(writes) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, write)

    monkeypatch.setattr(MG, "atomic_write", filling)
    out = tmp_path / "data"
    assert main(["merge", str(shards), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    first = pd.read_csv(writes[0])
    n, rows = first.drop_duplicates(["suite", "config_key", "math"]).shape[0], len(first)
    assert len(err) == 1 and "the disk is full" in err[0]
    assert f"{n} configurations ({rows} rows) are merged and safely on disk" in err[0]
    assert "rerun the same merge" in err[0]
    monkeypatch.undo()
    assert main(["merge", str(shards), "--out", str(out)]) == 0
    assert_same_rows(out / "h100-sxm", whole)


def test_an_unreadable_store_file_is_one_line(shards, tmp_path, monkeypatch, capsys):
    bad = shards / "1-of-3" / "h100-sxm" / "gemm_layers.csv"
    unreadable(monkeypatch, bad)
    assert main(["merge", str(shards), "--out", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cudnn_bench: merge: {bad} cannot be read (Permission denied)"]
    assert not (tmp_path / "data").exists()
