"""cudnn_bench.store and the run loop: resumable writing under simulated interruptions."""
from __future__ import annotations

import errno

import numpy as np
import pandas as pd
import pytest
from fakes import fake_env

from cudnn_bench import collect as K
from cudnn_bench import store as ST
from cudnn_bench.plan import Budget
from seer.data import records


def _row(suite="s", key="conv_fwd:a", math="fma", **kw):
    return {"suite": suite, "config_key": key, "math": math, "gpu": "NVIDIA H100 80GB HBM3", "op": "gemm",
            "batch": 1, "m": 2, "n": 3, "k": 4, "time_ms": 1.5, "status": "ok", **kw}


def test_header_once_blocks_and_done(tmp_path):
    p = tmp_path / "s.csv"
    with ST.Store(p) as st:
        st.append([_row(key="a", kernel="k1"), _row(key="a", kernel="k2")])
        st.append([_row(key="b")])
        assert st.is_done(("s", "a", "fma")) and st.is_done(("s", "b", "fma"))
    text = p.read_text()
    assert text.count("suite,") == 1 and text.splitlines()[0].split(",") == list(ST.HEADER)
    with ST.Store(p) as st:
        assert st.done == {("s", "a", "fma"), ("s", "b", "fma")}
        assert st.recovered_bytes == 0
    df = records.read_csv(p)
    assert len(df) == 3 and list(df["config_rows"]) == ["2", "2", "1"]


def test_torn_tail_is_cut_back_to_the_last_complete_block(tmp_path):
    p = tmp_path / "s.csv"
    with ST.Store(p) as st:
        st.append([_row(key="a")])
    good = p.read_bytes()
    torn = ST.format_rows([{**_row(key="b"), "config_rows": 3}] * 2)  # 2 of 3 rows, last one half
    p.write_bytes(good + torn.encode()[:-25])
    with ST.Store(p) as st:
        assert st.done == {("s", "a", "fma")} and st.recovered_bytes > 0
        st.append([_row(key="b")])
    assert p.read_bytes().startswith(good)
    assert list(records.read_csv(p)["config_key"]) == ["a", "b"]


class FullDisk:
    """A store file on a disk that fills: half of the next write reaches it, then every flush fails."""

    def __init__(self, fh):
        self.fh, self.closed = fh, False

    def write(self, text: str) -> None:
        self.fh.write(text[: len(text) // 2])
        self.fh.flush()

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self) -> int:
        return self.fh.fileno()

    def close(self) -> None:  # as a buffered file does: closed, then the failed flush raised
        self.closed = True
        self.fh.close()
        self.flush()


def test_a_failed_append_closes_cleanly_and_its_torn_block_is_set_aside(tmp_path):
    p = tmp_path / "s.csv"
    st = ST.Store(p)
    st.append([_row(key="a")])
    st._fh = FullDisk(st._fh)
    with pytest.raises(OSError, match="No space left"):
        st.append([_row(key="b"), _row(key="b")])
    st.close()  # the append's error was raised once; closing neither raises again nor keeps the lock
    with ST.Store(p) as again:
        assert again.done == {("s", "a", "fma")} and again.recovered_bytes > 0
    assert (tmp_path / "s.csv.quarantine").exists()


def test_format_rows_sanitizes_and_rejects_unknown_fields():
    text = ST.format_rows([_row(message="line one\nline two", time_ms=np.float64(0.25), reps=np.int64(7))])
    assert text.count("\n") == 1 and "line one line two" in text and ",0.25," in text and ",7," in text
    with pytest.raises(KeyError, match="not_a_field"):
        ST.format_rows([_row(not_a_field=1)])


def test_a_file_with_other_columns_is_migrated(tmp_path):
    p = tmp_path / "s.csv"
    pd.DataFrame([{"suite": "s", "config_key": "a", "math": "fma", "config_rows": "1", "gpu": "g",
                   "op": "gemm", "time_ms": "2.0"}]).to_csv(p, index=False)
    with ST.Store(p) as st:
        assert st.done == {("s", "a", "fma")}
    assert p.read_text().splitlines()[0].split(",") == list(ST.HEADER)


def _opts(tmp_path, **kw):
    return K.Options(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=6), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=3, min_reps=2), **kw)


def test_a_crash_mid_run_keeps_finished_configurations_and_a_rerun_skips_them(tmp_path, monkeypatch):
    real = K.measure
    calls = {"n": 0}

    def crashing(env, item, opts):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("simulated crash in the 4th configuration")
        return real(env, item, opts)

    monkeypatch.setattr(K, "measure", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        K.run(_opts(tmp_path), fake_env())
    f = tmp_path / "h100-sxm" / "test_set_ii.csv"
    df = records.read_csv(f)
    assert df["config_key"].nunique() == 3  # every finished configuration, nothing of the 4th
    monkeypatch.setattr(K, "measure", real)
    res = K.run(_opts(tmp_path), fake_env())
    assert (res.skipped, res.measured, res.left) == (3, 3, 0)
    df = records.read_csv(f)
    assert df["config_key"].nunique() == 6
    assert not df.duplicated(["call_key", "kernel_index"]).any()


def test_ctrl_c_is_an_orderly_stop(tmp_path, monkeypatch):
    real = K.measure
    calls = {"n": 0}

    def interrupted(env, item, opts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(env, item, opts)

    monkeypatch.setattr(K, "measure", interrupted)
    msgs = []
    res = K.run(_opts(tmp_path), fake_env(), log=msgs.append)
    assert res.interrupted and res.measured == 2
    assert any("rerun the same command to resume" in m for m in msgs)
    assert records.read_csv(tmp_path / "h100-sxm" / "test_set_ii.csv")["config_key"].nunique() == 2


def test_rewrite_round_trip(tmp_path):
    p = tmp_path / "s.csv"
    with ST.Store(p) as st:
        st.append([_row(key="a", kernel="x"), _row(key="a", kernel="y")])
    df = ST.read_frame(p)
    df.loc[0, "fp32_inst"] = 123.0
    ST.rewrite(p, df)
    with ST.Store(p) as st:
        assert st.done == {("s", "a", "fma")}
    assert records.read_csv(p)["fp32_inst"].iloc[0] == 123.0


def test_a_suite_file_committed_gzipped_is_resumed_and_appended(tmp_path):
    import gzip

    p = tmp_path / "s.csv"
    with ST.Store(p) as st:
        st.append([_row(key="a")])
    (tmp_path / "s.csv.gz").write_bytes(gzip.compress(p.read_bytes()))
    p.unlink()
    with ST.Store(p) as st:
        assert st.done == {("s", "a", "fma")}  # what the committed file held
        st.append([_row(key="b")])
    assert not (tmp_path / "s.csv.gz").exists()
    assert set(records.read_csv(p)["config_key"]) == {"a", "b"}
    assert ST.unzip_stored(p) is False  # nothing left to unzip


def test_rows_set_aside_join_a_side_file_committed_gzipped(tmp_path):
    import gzip

    side = tmp_path / "s.csv.superseded"
    side.with_name(side.name + ".gz").write_bytes(gzip.compress(b"# earlier\nold rows\n"))
    ST._append_durably(side, [b"new rows"], "later")
    text = side.read_text().splitlines()
    assert text[:2] == ["# earlier", "old rows"] and text[-1] == "new rows"
    assert not side.with_name(side.name + ".gz").exists()
