"""cudnn_bench.store under damaged files and two writers: nothing complete is lost, nothing torn is read."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from cudnn_bench import store as ST
from cudnn_bench.errors import BenchError
from seer.data import records


def _block(key: str, n: int = 3, t: float = 0.0230798123) -> list[dict]:
    return [{"suite": "s", "config_key": key, "math": "fma", "gpu": "NVIDIA H100 80GB HBM3", "op": "gemm",
             "batch": 1, "m": 2, "n": 3, "k": 4, "time_ms": t, "status": "ok", "kernel_index": i,
             "call_key": f"{key}|fma|0"} for i in range(n)]


def _store(p, keys, n=3) -> list[bytes]:
    """Write one block per key; returns each block's bytes (header first)."""
    parts = []
    with ST.Store(p) as st:
        parts.append(p.read_bytes())
        for k in keys:
            before = p.stat().st_size
            st.append(_block(k, n))
            parts.append(p.read_bytes()[before:])
    return parts


def test_a_garbage_and_a_blank_line_mid_file_lose_no_complete_block(tmp_path, capsys):
    p = tmp_path / "s.csv"
    keys = [f"c{i}" for i in range(30)]
    parts = _store(p, keys)
    garbage = b"\x00\x17garbage,that,is,no,row\n"
    damaged = b"".join(parts[:8]) + garbage + b"".join(parts[8:13]) + b"\n" + b"".join(parts[13:])
    p.write_bytes(damaged)
    capsys.readouterr()
    with ST.Store(p) as st:
        assert st.done == {("s", k, "fma") for k in keys}  # all 30, not 7
        assert st.recovered_bytes == len(garbage) + 1
    assert p.read_bytes() == b"".join(parts)  # every complete block kept, in order
    side = tmp_path / "s.csv.quarantine"
    assert garbage in side.read_bytes()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(p) in err and str(side) in err
    assert "2 lines" in err and f"{len(garbage) + 1} bytes" in err and "lines 23, 39" in err
    assert records.read_csv(p)["config_key"].nunique() == 30


def test_an_incomplete_block_mid_file_is_quarantined_and_measured_again(tmp_path):
    p = tmp_path / "s.csv"
    parts = _store(p, ["a", "b", "c"])
    torn_b = b"".join(parts[2].splitlines(keepends=True)[:2])  # 2 of b's 3 rows
    p.write_bytes(parts[0] + parts[1] + torn_b + parts[3])
    with ST.Store(p) as st:
        assert st.done == {("s", "a", "fma"), ("s", "c", "fma")}
        st.append(_block("b"))
    assert (tmp_path / "s.csv.quarantine").read_bytes().endswith(torn_b)
    df = records.read_csv(p)
    assert list(df["config_key"]) == ["a"] * 3 + ["c"] * 3 + ["b"] * 3


def test_the_repair_is_atomic(tmp_path, monkeypatch):
    p = tmp_path / "s.csv"
    parts = _store(p, ["a", "b"])
    damaged = parts[0] + parts[1] + b"garbage\n" + parts[2]
    p.write_bytes(damaged)

    def crash(path, write):
        def half(tmp):
            tmp.write_bytes(damaged[:10])
            raise KeyboardInterrupt
        return records.atomic_write(path, half)

    monkeypatch.setattr(ST, "atomic_write", crash)
    with pytest.raises(KeyboardInterrupt):
        ST.Store(p)
    assert p.read_bytes() == damaged  # untouched: the rewrite never showed half a file
    assert sorted(x.name for x in tmp_path.iterdir() if not x.name.startswith(".")) == ["s.csv", "s.csv.quarantine"]
    monkeypatch.undo()
    with ST.Store(p) as st:  # the lock was released, the repair runs again
        assert len(st.done) == 2


def test_a_second_writer_is_refused_while_the_first_holds_the_store(tmp_path):
    p = tmp_path / "s.csv"
    with ST.Store(p):
        with pytest.raises(BenchError, match="being written by another run") as e:
            ST.Store(p)
        assert str(p) in str(e.value) and "\n" not in str(e.value)
        with pytest.raises(BenchError, match="another run"):
            ST.rewrite(p, ST.read_frame(p))
        code = ("import sys; from cudnn_bench.store import Store; from seer.errors import SeerError\n"
                f"try:\n    Store({str(p)!r})\nexcept SeerError as e:\n    print(e); sys.exit(2)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "being written by another run" in r.stdout, r.stderr
    with ST.Store(p) as st:  # released on close
        st.append(_block("a"))
    assert records.read_csv(p)["config_key"].tolist() == ["a"] * 3


def test_readers_drop_a_torn_tail_and_a_partial_block(tmp_path, capsys):
    p = tmp_path / "s.csv"
    parts = _store(p, ["a", "b"])
    partial = b"".join(_store(tmp_path / "other.csv", ["c"], n=18)[1].splitlines(keepends=True)[:12])
    torn = ST.format_rows([{**_block("d", 1)[0], "config_rows": 1}]).encode()
    cut = torn[: torn.index(b"0.023") + len(b"0.023")]  # the time cut short, no newline
    p.write_bytes(b"".join(parts) + partial + cut)
    capsys.readouterr()
    df = records.read_csv(p)
    assert list(df["config_key"]) == ["a"] * 3 + ["b"] * 3
    assert (df["time_ms"] == 0.0230798123).all()  # never the cut 0.023
    err = capsys.readouterr().err
    assert "13 lines" in err and "lines 8-20" in err and str(p) in err
    frame = ST.read_frame(p)
    assert list(frame["config_key"]) == ["a"] * 3 + ["b"] * 3
    with ST.Store(p) as st:  # the store agrees: c and d are not done
        assert st.done == {("s", "a", "fma"), ("s", "b", "fma")}


def test_a_complete_last_line_without_its_newline_is_torn(tmp_path):
    p = tmp_path / "s.csv"
    parts = _store(p, ["a", "b"])
    p.write_bytes(b"".join(parts)[:-1])  # b's last row lost only its newline: the write was cut
    assert list(records.read_csv(p)["config_key"]) == ["a"] * 3


def test_rewrite_keeps_what_it_drops_in_the_quarantine(tmp_path):
    p = tmp_path / "s.csv"
    parts = _store(p, ["a", "b"])
    p.write_bytes(parts[0] + parts[1] + b"junk line\n" + parts[2])
    df = ST.read_frame(p)
    df.loc[0, "fp32_inst"] = 5.0
    ST.rewrite(p, df)
    assert b"junk line" in (tmp_path / "s.csv.quarantine").read_bytes()
    back = records.read_csv(p)
    assert len(back) == 6 and back["fp32_inst"].iloc[0] == 5.0


def test_store_files_and_load_ignore_the_lock_and_quarantine_files(tmp_path):
    p = tmp_path / "s.csv"
    parts = _store(p, ["a"])
    p.write_bytes(parts[0] + b"junk\n" + parts[1])
    ST.Store(p).close()
    names = {x.name for x in tmp_path.iterdir()}
    assert {"s.csv", "s.csv.quarantine", ".s.csv.lock"} <= names
    assert [x.name for x in ST.store_files(tmp_path)] == ["s.csv"]
    assert len(records.load(tmp_path)) == 3
    assert isinstance(records.load(tmp_path), pd.DataFrame)


def test_a_second_collect_into_the_same_folder_is_refused(tmp_path, capsys):
    from fakes import fake_env

    from cudnn_bench import collect as K
    from cudnn_bench.plan import Budget

    opts = K.Options(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=3), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=3, min_reps=2))
    held = ST.Store(tmp_path / "h100-sxm" / "test_set_ii.csv")  # the first run, still measuring
    with pytest.raises(BenchError, match="being written by another run"):
        K.run(opts, fake_env(), log=lambda s: None)
    held.close()
    res = K.run(opts, fake_env(), log=lambda s: None)
    assert res.measured == 3
    df = records.read_csv(tmp_path / "h100-sxm" / "test_set_ii.csv")
    assert not df.duplicated(["call_key", "kernel_index"]).any()
