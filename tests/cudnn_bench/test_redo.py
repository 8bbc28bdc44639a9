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


XMMA = "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize256x64x8_stage3_warpsize2x2x1_g1_ffma"


def test_unsplit_names_the_calls_an_older_harness_split_wrongly():
    def calls(key: str, *rows: dict, op: str = "conv_fwd") -> list[dict]:
        return [{"suite": "s", "config_key": key, "math": "fma", "status": "ok", "kernel": "", "message": "",
                 "time_ms": "1.0", "gpu_span_ms": "", "op": op, "algo": f"A{i}", "call_id": f"{key}{i}", **r}
                for i, r in enumerate(rows)]

    named = {"kernel": "k", "gpu_span_ms": "1.0"}
    layer = {"batch": "64", "c_in": "16", "h_in": "32", "w_in": "32", "c_out": "64", "kh": "3", "kw": "3",
             "stride_h": "1", "stride_w": "1", "pad_h": "1", "pad_w": "1", "dil_h": "1", "dil_w": "1", "groups": "1"}
    gap = {"time_ms": "2.0", "gpu_span_ms": "0.5", "algo": "IMPLICIT_PRECOMP_GEMM", "role": "main", **layer}
    raw = pd.DataFrame(
        calls("fine", named, named)
        + calls("lost", named, {}, named)  # a call without names beside named ones
        + calls("said", named, {"message": "CUPTI: 9 kernel records of 4 timed calls split into no equal calls"})
        + calls("untraced", {}, {})  # --launch-meta none: no names anywhere
        + calls("chunk", named, {"kernel": "k", "time_ms": "2.0", "gpu_span_ms": "0.5"})  # span of one chunk
        + calls("failed", named, {"status": "not_supported"})
        + calls("gemm", named, {}, op="gemm")  # cuBLASLt names its algorithms afresh: all of them again
        # events beyond the span, but the kernel's 256 blocks of 256 x 64 cover the 64*32*32 x 64 output:
        # not chunked, the span is the call's time already (and 255 blocks do not cover it)
        + calls("gap", named, {**gap, "kernel": XMMA, "blocks": "256"})
        + calls("short", named, {**gap, "kernel": XMMA, "blocks": "255"})
    )
    assert R.unsplit(raw) == {("s", "lost", "fma"): {"A1"}, ("s", "chunk", "fma"): {"A1"},
                              ("s", "gemm", "fma"): None, ("s", "short", "fma"): {"IMPLICIT_PRECOMP_GEMM"}}
    assert R.unsplit(raw.iloc[0:0]) == {}
    assert R.merge({("a",): frozenset({"X"}), ("b",): None}, {("a",): frozenset({"Y"}), ("b",): frozenset({"Z"})}) \
        == {("a",): {"X", "Y"}, ("b",): None}


def test_a_partial_redo_writes_the_block_again_with_only_those_calls_new(tmp_path):
    p = tmp_path / "s.csv"
    with ST.Store(p) as st:
        st.append([_row("a", algo="A", kernel="a1"), _row("a", algo="B", kernel="old"),
                   _row("a", algo="A", kernel="a2"), _row("a", algo="C", kernel="c")])
        st.append([_row("b", algo="A", kernel="k")])
    with ST.Store(p) as st:
        assert st.redo({("s", "a", "fma"): frozenset({"B", "C"})}) == 1
        assert st.calls_of(("s", "a", "fma")) == {"B", "C"} and st.calls_of(("s", "b", "fma")) is None
        st.append([_row("a", algo="C", kernel="c-new"), _row("a", algo="B", kernel="b-new1"),
                   _row("a", algo="B", kernel="b-new2")])
    got = read_raw(p)[0]
    a = got[got["config_key"] == "a"]
    # the stored calls not measured again kept, in the stored order of algorithms
    assert list(a["kernel"]) == ["a1", "a2", "b-new1", "b-new2", "c-new"]
    assert set(a["config_rows"]) == {"5"} and list(got[got["config_key"] == "b"]["kernel"]) == ["k"]
    assert ",old," in (tmp_path / "s.csv.superseded").read_text()


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
    wrong = R.calls_to_redo(path, ["unsplit"])
    assert first.measured == 12 and 0 < len(wrong) < 12
    before = records.read_csv(path)
    assert f"what it still shows then is cuDNN chunking the call): test_set_ii {len(wrong)}\n" in report(first.folder) + "\n"

    lines: list[str] = []
    asked: dict = {}

    def measure(e, item, o):
        asked[item.key] = item.calls
        return M.measure(e, item, o)

    monkeypatch.setattr(K, "measure", measure)
    again = K.run(K.Options(**{**vars(opts), "redo": ["unsplit"]}), env(), log=lines.append)
    assert (again.measured, again.skipped) == (len(wrong), 12 - len(wrong))
    assert any(s.startswith(f"{len(wrong)} stored configurations are measured again first (--redo unsplit), "
                            f"{len(wrong)} of them only in the calls that were wrong") for s in lines)
    assert R.calls_to_redo(path, ["unsplit"]) == {} and "--redo" not in report(first.folder)
    blocks = scan_blocks(path.read_bytes())
    assert len(blocks.chunks) == 12 and not blocks.superseded
    side = (first.folder / "test_set_ii.csv.superseded").read_text()
    assert f"{len(wrong)} configuration blocks measured again since" in side  # the old ones, kept aside
    rec = records.read_csv(path)
    redone = rec[(rec["status"] == "ok") & rec["config_key"].isin({k for _, k, _ in wrong})]
    events = redone["event_time_ms"].fillna(redone["time_ms"])
    calls = redone.assign(events=events).groupby("call_id").agg(k=("kernel_time_ms", "sum"), t=("events", "first"))
    assert calls["k"].to_numpy() == pytest.approx(calls["t"].to_numpy(), rel=1e-3)  # whole calls now
    # only the wrong calls were measured again: the others of the same configurations are as stored
    assert asked == wrong and all(asked.values())
    cols = ["config_key", "algo", "kernel_index", "kernel", "time_ms", "call_id"]
    kept = [f[f["config_key"].isin({k for _, k, _ in wrong})] for f in (before, rec)]
    kept = [f[[(k, a) not in {(kk, x) for (_, kk, _), v in wrong.items() for x in v}
               for k, a in zip(f["config_key"], f["algo"])]][cols].reset_index(drop=True) for f in kept]
    assert len(kept[0]) and kept[0].equals(kept[1])
    # a redo with nothing wrong left measures nothing
    assert K.run(K.Options(**{**vars(opts), "redo": ["unsplit"]}), env(), log=lambda s: None).measured == 0


def test_what_a_redo_still_shows_is_not_measured_again_in_every_call(tmp_path, monkeypatch):
    """A configuration measured again that shows the same (the GPU chunks the call) is what the
    GPU does: the next call leaves it, also with the side file committed gzipped."""
    import gzip

    monkeypatch.setattr(M, "timed", _old_timed)  # both runs split as the old harness did
    opts = K.Options(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=12), progress=False,
                     timing=K.TimingOptions(warmup=2, reps=4, min_reps=4))
    first = K.run(opts, fake_env(chunks={1: 4}, setup=True), log=lambda s: None)
    path = first.folder / "test_set_ii.csv"
    wrong = R.calls_to_redo(path, ["unsplit"])
    assert wrong and R.measured_again(path) == set()
    K.run(K.Options(**{**vars(opts), "redo": ["unsplit"]}), fake_env(chunks={1: 4}, setup=True), log=lambda s: None)
    assert R.redo_of(read_raw(path)[0], ["unsplit"]).keys() == wrong.keys()  # the symptom is still there
    assert R.measured_again(path) == set(wrong) and R.calls_to_redo(path, ["unsplit"]) == {}
    assert f"test_set_ii {len(wrong)} ({len(wrong)} measured again)" in report(first.folder)
    side = first.folder / "test_set_ii.csv.superseded"
    side.with_name(side.name + ".gz").write_bytes(gzip.compress(side.read_bytes()))
    side.unlink()
    assert R.calls_to_redo(path, ["unsplit"]) == {}
    again = K.run(K.Options(**{**vars(opts), "redo": ["unsplit"]}), fake_env(chunks={1: 4}, setup=True),
                  log=lambda s: None)
    assert again.measured == 0


def test_a_configuration_measured_again_runs_only_the_calls_asked_for():
    from cudnn_bench.plan import PlanItem
    from cudnn_bench.suites import test_set_ii

    item = PlanItem("test_set_ii", test_set_ii()[0], "fma", 1.0)
    opts = K.Options(progress=False, timing=K.TimingOptions(warmup=1, reps=2, min_reps=1))
    every = {r["algo"] for r in M.measure(fake_env(), item, opts)}
    some = M.measure(fake_env(), PlanItem(**{**vars(item), "calls": frozenset({"FFT", "GEMM"})}), opts)
    assert len(every) > 2 and {r["algo"] for r in some} == {"FFT", "GEMM"}
