"""`collect --redo unsplit`: configurations an older harness split wrongly are measured again,
and the new blocks supersede the old ones in the store (nothing is lost: they move aside)."""
from __future__ import annotations

import pandas as pd
import pytest
from fakes import fake_env

from cudnn_bench import collect as K
from cudnn_bench import measure as M
from cudnn_bench import redo as R
from cudnn_bench import store as ST
from cudnn_bench.export import report
from cudnn_bench.plan import Budget
from cudnn_bench.timing import time_call
from seer.data import records
from seer.data.records import read_raw, scan_blocks


def _row(key: str, **kw) -> dict:
    return {"suite": "s", "config_key": key, "math": "fma", "gpu": "NVIDIA H100 80GB HBM3", "op": "gemm",
            "batch": 1, "m": 2, "n": 3, "k": 4, "time_ms": 1.5, "status": "ok", **kw}


def test_a_block_measured_again_supersedes_the_old_one(tmp_path):
    p = tmp_path / "s.csv"
    with ST.Store(p) as st:
        st.append([_row("a", kernel="old")])
        st.append([_row("b", kernel="k")])
    with ST.Store(p) as st:
        assert st.redo([("s", "a", "fma"), ("s", "zzz", "fma")]) == 1  # only what the store holds
        assert not st.is_done(("s", "a", "fma")) and st.is_done(("s", "b", "fma"))
        st.append([_row("a", kernel="new"), _row("a", kernel="new2")])
        # before closing, readers already see the new block only
        assert list(records.read_csv(p)["kernel"]) == ["k", "new", "new2"]
    assert list(read_raw(p)[0]["kernel"]) == ["k", "new", "new2"]
    assert p.read_text().count(",old,") == 0  # compacted on closing
    side = (tmp_path / "s.csv.superseded").read_text()
    assert side.startswith("# ") and "1 configuration block measured again since" in side and ",old," in side


def test_a_run_killed_after_measuring_again_is_compacted_on_the_next_opening(tmp_path):
    p = tmp_path / "s.csv"
    with ST.Store(p) as st:
        st.append([_row("a", kernel="old")])
    p.write_bytes(p.read_bytes() + ST.format_rows([{**_row("a", kernel="new"), "config_rows": 1}]).encode())
    blocks = scan_blocks(p.read_bytes())
    assert [k for k, _ in blocks.chunks] == [("s", "a", "fma")] and len(blocks.superseded) == 1
    with ST.Store(p) as st:
        assert st.done == {("s", "a", "fma")}
    assert list(read_raw(p)[0]["kernel"]) == ["new"] and (tmp_path / "s.csv.superseded").is_file()


def test_unsplit_names_the_configurations_an_older_harness_split_wrongly():
    def calls(key: str, *rows: dict) -> list[dict]:
        return [{"suite": "s", "config_key": key, "math": "fma", "status": "ok", "kernel": "", "message": "",
                 "time_ms": "1.0", "gpu_span_ms": "", **r} for r in rows]

    named = {"kernel": "k", "gpu_span_ms": "1.0"}
    raw = pd.DataFrame(
        calls("fine", named, named)
        + calls("lost", named, {})  # a call without names beside named ones
        + calls("said", named, {"message": "CUPTI: 9 kernel records of 4 timed calls split into no equal calls"})
        + calls("untraced", {}, {})  # --launch-meta none: no names anywhere
        + calls("chunk", named, {"kernel": "k", "time_ms": "2.0", "gpu_span_ms": "0.5"})  # span of one chunk
        + calls("failed", named, {"status": "not_supported"})
    )
    assert R.unsplit(raw) == {("s", "lost", "fma"), ("s", "chunk", "fma")}
    assert R.unsplit(raw.iloc[0:0]) == set()


def _period_split(records_: list, calls: int):
    """The split before the fix: the shortest period the last calls repeat (a chunk, where a
    first call's set-up kernel leaves no even share), over warm-up and timed calls together."""
    n, names = len(records_), [r.name for r in records_]
    for k in ([n // calls] if n % calls == 0 else []) + list(range(1, n // calls + 1)):
        tail = names[n - k * calls :]
        if all(tail[i * k : (i + 1) * k] == tail[-k:] for i in range(calls)):
            return [list(records_[n - (calls - i) * k : n - (calls - i - 1) * k]) for i in range(calls)]
    return None


def _old_timed(env, fn, opts):
    env.tracer.take()
    timing = time_call(env.backend, env.stream, fn, opts.timing, env.flusher, env.events)
    per_call = _period_split(env.tracer.take(), timing.calls)
    return timing, M.Traced(per_call[-timing.reps :] if per_call else None)


def test_collect_redo_unsplit_measures_again_what_the_old_split_got_wrong(tmp_path, monkeypatch):
    def env():
        return fake_env(chunks={1: 4}, setup=True)  # the old split finds the chunk in larger calls

    opts = K.Options(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=12), progress=False,
                     timing=K.TimingOptions(warmup=2, reps=4, min_reps=4))
    with monkeypatch.context() as m:
        m.setattr(M, "timed", _old_timed)
        first = K.run(opts, env(), log=lambda s: None)
    path = first.folder / "test_set_ii.csv"
    wrong = R.keys_to_redo(path, ["unsplit"])
    assert first.measured == 12 and 0 < len(wrong) < 12
    assert f"collect --redo unsplit measures them again): test_set_ii {len(wrong)}" in report(first.folder)

    lines: list[str] = []
    again = K.run(K.Options(**{**vars(opts), "redo": ["unsplit"]}), env(), log=lines.append)
    assert (again.measured, again.skipped) == (len(wrong), 12 - len(wrong))
    assert f"{len(wrong)} stored configurations are measured again first (--redo unsplit)" in lines
    assert R.keys_to_redo(path, ["unsplit"]) == set() and "--redo" not in report(first.folder)
    blocks = scan_blocks(path.read_bytes())
    assert len(blocks.chunks) == 12 and not blocks.superseded
    side = (first.folder / "test_set_ii.csv.superseded").read_text()
    assert f"{len(wrong)} configuration blocks measured again since" in side  # the old ones, kept aside
    rec = records.read_csv(path)
    redone = rec[(rec["status"] == "ok") & rec["config_key"].isin({k for _, k, _ in wrong})]
    events = redone["event_time_ms"].fillna(redone["time_ms"])
    calls = redone.assign(events=events).groupby("call_id").agg(k=("kernel_time_ms", "sum"), t=("events", "first"))
    assert calls["k"].to_numpy() == pytest.approx(calls["t"].to_numpy(), rel=1e-3)  # whole calls now
    # a redo with nothing wrong left measures nothing
    assert K.run(K.Options(**{**vars(opts), "redo": ["unsplit"]}), env(), log=lambda s: None).measured == 0
