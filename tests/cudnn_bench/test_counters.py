"""cudnn_bench.counters and ncu_pass: the ncu command, parsing its CSV (synthetic fixtures until
a GPU run replaces them), attributing kernels to calls, and merging counters into records."""
from __future__ import annotations

import csv
import io
import json
import math
import subprocess
from pathlib import Path

import pytest
from fakes import fake_env

from cudnn_bench import collect as K
from cudnn_bench import counters as C
from cudnn_bench import ncu_pass as N
from cudnn_bench import store as ST
from cudnn_bench.errors import BenchError
from cudnn_bench.plan import Budget
from seer.data import records

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def test_profile_and_import_commands():
    cmd = C.profile_command("ncu", "/o/rep", ["python3", "-m", "cudnn_bench", "ncu-worker"], C.metric_list())
    s = " ".join(cmd)
    assert "--clock-control none" in s and "--nvtx" in s and "--profile-from-start off" in s
    assert cmd[-4:] == ["python3", "-m", "cudnn_bench", "ncu-worker"] and "-o /o/rep" in s
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    for m in ("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum", "dram__sectors_read.sum",
              "dram__sectors_write.sum", "smsp__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
              "dram__throughput.avg.pct_of_peak_sustained_elapsed", "launch__occupancy_limit_shared_mem",
              "launch__registers_per_thread", "gpu__time_duration.sum"):
        assert m in metrics
    imp = C.import_command("ncu", "r.ncu-rep", rename=True)
    assert imp[:3] == ["ncu", "--import", "r.ncu-rep"] and "--print-units" in imp and imp[-2:] == ["--print-nvtx-rename", "kernel"]
    assert "--print-nvtx-rename" not in C.import_command("ncu", "r.ncu-rep")


@pytest.mark.parametrize("text,value", [("1,234.5", 1234.5), ("4.0e-05", 4e-5), ("n/a", math.nan), ("", math.nan),
                                        ("0", 0.0), ("12,000,000", 12e6)])
def test_numbers(text, value):
    got = C.number(text)
    assert (math.isnan(got) and math.isnan(value)) or got == value


def test_units():
    assert C.scale(412672, "nsecond") == pytest.approx(0.412672)  # ms
    assert C.scale(2.0, "usecond") == pytest.approx(0.002) and C.scale(3.0, "second") == 3000.0
    assert C.scale(1.755, "Ghz") == pytest.approx(1.755e9) and C.scale(1.755, "cycle/nsecond") == pytest.approx(1.755e9)
    assert C.scale(2.0, "Mbyte") == 2e6 and C.scale(41.0, "%") == 41.0


def test_parse_the_raw_page():
    ks = C.parse_raw_csv((FIX / "ncu_raw_synthetic.csv").read_text())  # SYNTHETIC fixture
    assert [k.id for k in ks] == [0, 1, 2, 3]
    main = ks[2]
    assert main.name.startswith("sm90_xmma_fprop_implicit_gemm") and main.grid == (98, 2, 1) and main.block == (128, 1, 1)
    assert main.get("dram__sectors_read.sum") == 3211264
    assert main.get("gpu__time_duration.sum") == pytest.approx(0.412672)  # ns -> ms
    assert main.get("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum") == 1849688064
    assert math.isnan(ks[3].get("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum"))  # "n/a"
    assert main.units["dram__sectors_read.sum"] == "sector"


def test_nvtx_ranges_attribute_kernels_to_calls():
    ks = C.parse_raw_csv((FIX / "ncu_raw_synthetic.csv").read_text())
    C.attach_ranges(ks, C.parse_raw_csv((FIX / "ncu_nvtx_synthetic.csv").read_text()))
    assert [k.range for k in ks] == ["", "seer:111", "seer:111", "seer:222"]
    calls = C.by_call(ks)
    assert sorted(calls) == [111, 222] and [k.id for k in calls[111]] == [1, 2]  # the stray kernel 0 is dropped


def test_real_h100_exports_attribute_kernels_to_calls():
    """ncu of CUDA 13.1 renames a kernel in a range 'seer:<call_id>/<kernel name>' (real export)."""
    ks = C.parse_raw_csv((FIX / "ncu_raw_h100.csv").read_text())
    C.attach_ranges(ks, C.parse_raw_csv((FIX / "ncu_nvtx_h100.csv").read_text()))
    calls = json.loads((FIX / "ncu_calls_h100.json").read_text())
    assert [k.call_id for k in ks] == [c["call_id"] for c in calls] == [
        961836885130403743, 714916163229894905, 843817952919446722, 847492440991661901]
    assert ks[0].name.startswith("nvjet_sm90_tst_48x64") and "/" in ks[0].range


def test_merge_reports_fills_records_from_kept_exports(tmp_path):
    """The exports a GPU call brought back are merged on a machine without a GPU; a suite file
    committed gzipped is merged into and gzipped again."""
    import gzip
    import shutil

    folder = tmp_path / "h100-sxm"
    (folder / "ncu").mkdir(parents=True)
    (folder / "device.json").write_text(json.dumps({"device": {"cc": "9.0", "sms": 132}}))
    (folder / "gemm_layers.csv.gz").write_bytes(gzip.compress((FIX / "ncu_records_h100.csv").read_bytes()))
    base = folder / "ncu" / "20261126-090725-001"
    shutil.copy(FIX / "ncu_raw_h100.csv", f"{base}.raw.csv")
    shutil.copy(FIX / "ncu_nvtx_h100.csv", f"{base}.nvtx.csv")
    shutil.copy(FIX / "ncu_calls_h100.json", f"{base}.calls.json")
    msgs: list[str] = []
    assert N.merge_reports(folder, log=msgs.append) == 4
    assert not (folder / "gemm_layers.csv").exists() and (folder / "gemm_layers.csv.gz").is_file()
    df = records.read_csv(folder / "gemm_layers.csv.gz")
    assert len(df) == 32 and df["dram_read_bytes"].notna().sum() == df["fp32_util_pct"].notna().sum() == 4
    with pytest.raises(BenchError, match="holds no ncu exports"):
        N.merge_reports(tmp_path)


def test_sequence_fallback():
    ks = C.parse_raw_csv((FIX / "ncu_raw_synthetic.csv").read_text())
    C.attach_by_sequence(ks, [(5, 1), (6, 2), (7, 1)])
    assert [k.call_id for k in ks] == [5, 6, 6, 7]
    with pytest.raises(BenchError, match="cannot attribute"):
        C.attach_by_sequence(ks, [(5, 2)])


def test_not_a_csv():
    with pytest.raises(BenchError):
        C.parse_raw_csv("==PROF== No kernels were profiled.\n")


def test_norm_name_matches_cupti_and_ncu_spellings():
    assert C.norm_name("void computeOffsetsKernel<false, false>(fft2d_offsets)") == \
        C.norm_name("computeOffsetsKernel<false,false>")
    assert C.norm_name("sm90_xmma_gemm_f32f32") == "sm90_xmma_gemm_f32f32"


def test_seer_type():
    assert C.seer_type(86.5, 41.0) == "compute" and C.seer_type(20.0, 88.0) == "memory"
    assert C.seer_type(20.0, 30.0) == "under" and C.seer_type(math.nan, 3.0) == ""


def _records(tmp_path, tracer=True) -> Path:
    opts = K.Options(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=2), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=3, min_reps=2))
    return K.run(opts, fake_env(tracer=tracer)).folder


def test_merge_fills_counters_of_traced_kernels(tmp_path):
    folder = _records(tmp_path)
    df = ST.read_frame(folder / "test_set_ii.csv")
    call = df[(df["algo"] == "IMPLICIT_PRECOMP_GEMM") & (df["status"] == "ok")]["call_id"].iloc[0]
    ks = C.parse_raw_csv((FIX / "ncu_raw_synthetic.csv").read_text())[1:3]  # offsets + main kernel
    for k in ks:
        k.range = f"seer:{int(call)}"
    out, n = C.merge(df, C.by_call(ks), "9.0", 132)
    assert n == 1 and len(out) == len(df)
    rows = out[out["call_id"] == call].set_index("role")
    assert rows.loc["main", "dram_read_bytes"] == 3211264 * 32 and rows.loc["main", "dram_write_bytes"] == 1605632 * 32
    assert rows.loc["main", "fp32_inst"] == 1849688064 and rows.loc["main", "kernel_type"] == "compute"
    assert rows.loc["main", "fp32_util_pct"] == pytest.approx(86.51)
    # ncu's occupancy limits win over the model: min(32, 5, 3, 16) = 3 blocks per SM
    assert rows.loc["main", "blocks_per_sm"] == 3 and rows.loc["main", "b_max"] == 3 * 132
    assert rows.loc["main", "occupancy_source"] == "ncu" and rows.loc["main", "ncu_kernel_time_ms"] == pytest.approx(0.412672)
    assert rows.loc["pre", "kernel_type"] == "under"
    # untouched calls keep empty counters; the file written back still resumes and validates
    assert out[out["call_id"] != call]["fp32_inst"].isna().all()
    ST.rewrite(folder / "test_set_ii.csv", out)
    with ST.Store(folder / "test_set_ii.csv") as st:
        assert len(st.done) == 2
    records.read_csv(folder / "test_set_ii.csv")


def test_merge_expands_calls_recorded_without_kernels(tmp_path):
    folder = _records(tmp_path, tracer=False)
    df = ST.read_frame(folder / "test_set_ii.csv")
    ok = df[df["status"] == "ok"]
    call = ok["call_id"].iloc[0]
    ks = C.parse_raw_csv((FIX / "ncu_raw_synthetic.csv").read_text())[1:3]
    for k in ks:
        k.range = f"seer:{int(call)}"
    out, n = C.merge(df, C.by_call(ks), "9.0", 132)
    rows = out[out["call_id"] == call]
    assert n == 1 and len(out) == len(df) + 1 and len(rows) == 2
    assert list(rows["role"]) == ["pre", "main"] and list(rows["kernel_time_source"]) == ["ncu", "ncu"]
    assert list(rows["regs_per_thread"]) == [32, 96] and rows["kernels"].iloc[0].count(";") == 1
    assert rows["time_ms"].nunique() == 1  # the call's own time is kept
    ST.rewrite(folder / "test_set_ii.csv", out)
    with ST.Store(folder / "test_set_ii.csv") as st:
        assert len(st.done) == 2  # config_rows was recounted: both blocks are still complete
    records.read_csv(folder / "test_set_ii.csv")


def test_choose_samples_every_variant_first():
    calls = [N.CallRef("s", i, f"k{i}", "fma", "conv_fwd", algo, None, 2, var, 1.0)
             for i, (algo, var) in enumerate([("GEMM", "a")] * 5 + [("FFT", "b")] * 5 + [("GEMM", "c")] * 5)]
    got = N.choose(calls, "sample", Budget(count=3))
    assert {(c.algo, c.variant) for c in got} == {("GEMM", "a"), ("FFT", "b"), ("GEMM", "c")}
    assert len(N.choose(calls, "all", Budget(seconds=4.5))) == 4
    assert N.choose(calls, "none", Budget()) == []


def _ncu_csv(kernels: list[tuple[int, str, str]], rename: bool) -> str:
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    metrics = ["dram__sectors_read.sum", "dram__sectors_write.sum", "gpu__time_duration.sum",
               "smsp__sass_thread_inst_executed_op_fp32_pred_on.sum"]
    w.writerow(list(C.FIXED_COLUMNS) + metrics)
    w.writerow([""] * len(C.FIXED_COLUMNS) + ["sector", "sector", "nsecond", "inst"])
    for i, name, rng in kernels:
        # as ncu 2025 renames a kernel in a range: "<range>/<kernel name>"
        w.writerow([str(i), "1", "python3", "h", f"{rng}/{name}" if rename and rng else name, "1", "7", "(256, 1, 1)",
                    "(8, 4, 1)", "0", "9.0", "1,000", "500", "20,000", "4,096"])
    return "==PROF== Connected to process 1\n" + out.getvalue()


@pytest.mark.parametrize("zipped", [False, True])
def test_counters_pass_orchestration(tmp_path, zipped):
    """A pass samples, profiles and merges; a suite committed gzipped (not collected in this call)
    is sampled and merged into too, and left gzipped."""
    import gzip

    folder = _records(tmp_path)
    stored = folder / "test_set_ii.csv"
    if zipped:
        ST.zip_stored(stored)
        stored = folder / "test_set_ii.csv.gz"
    seen = []

    def runner(cmd, **kw):
        seen.append(cmd)
        if "--import" not in cmd:  # the profile run: the worker is told its calls in a JSON file
            calls = json.loads(Path(cmd[cmd.index("--calls") + 1]).read_text())
            Path(cmd[cmd.index("-o") + 1] + ".ncu-rep").write_bytes(b"report")
            df = ST.read_frame(folder / "test_set_ii.csv")
            ks, i = [], 0
            for c in calls:
                for name in df[df["call_id"].astype(str) == str(c["call_id"])]["kernel"]:
                    ks.append((i, name, f"seer:{c['call_id']}"))
                    i += 1
            runner.ks = ks
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return subprocess.CompletedProcess(cmd, 0, _ncu_csv(runner.ks, "--print-nvtx-rename" in cmd), "")

    opts = K.Options(counters="sample", counters_budget=Budget(count=3))
    msgs = []
    n = N.counters_pass(folder, opts, log=msgs.append, ncu="/opt/ncu", runner=runner)
    assert n == 3 and len(seen) == 3
    assert stored.is_file() and (folder / "test_set_ii.csv.gz").is_file() == zipped
    if zipped:
        assert gzip.decompress(stored.read_bytes()).startswith(b"source,")
    df = records.read_csv(stored)
    with_counters = df[df["dram_read_bytes"].notna()]
    assert with_counters["call_id"].nunique() == 3 and (with_counters["dram_read_bytes"] == 32000).all()
    assert list((folder / "ncu").glob("*.raw.csv")) and list((folder / "ncu").glob("*.nvtx.csv"))
    # a rerun profiles only calls that still lack counters
    N.counters_pass(folder, opts, log=msgs.append, ncu="/opt/ncu", runner=runner)
    df = records.read_csv(stored)
    assert df[df["dram_read_bytes"].notna()]["call_id"].nunique() == 6


def test_counters_pass_without_ncu(tmp_path, monkeypatch):
    import cudnn_bench.libs as libs

    monkeypatch.setattr(libs, "ncu_path", lambda: None)
    msgs = []
    assert N.counters_pass(tmp_path, K.Options(), log=msgs.append) == 0
    assert "ncu (Nsight Compute) was not found" in msgs[0]


def test_merge_falls_back_to_launch_order_when_spellings_differ(tmp_path):
    folder = _records(tmp_path)
    df = ST.read_frame(folder / "test_set_ii.csv")
    call = df[(df["algo"] == "IMPLICIT_PRECOMP_GEMM") & (df["status"] == "ok")]["call_id"].iloc[0]
    ks = C.parse_raw_csv((FIX / "ncu_raw_synthetic.csv").read_text())[1:3]
    ks[0].name = "computeOffsetsKernel<(bool)0, (bool)0>(fft2d_offsets)"  # another demangler's spelling
    for k in ks:
        k.range = f"seer:{int(call)}"
    out, _ = C.merge(df, C.by_call(ks), "9.0", 132)
    rows = out[out["call_id"] == call].set_index("role")
    assert rows.loc["pre", "ncu_kernel_time_ms"] == pytest.approx(0.002304)
    assert rows.loc["main", "fp32_inst"] == 1849688064


def test_a_call_looping_over_groups_is_too_dear_for_the_sample():
    """ncu replays every launch: cuDNN's FFT on a depthwise layer launches thousands of kernels
    (one row each distinct launch, `launches` counting them), so its estimate exceeds a sample's
    budget and the sample spends its minute on other calls (conv_grid has many depthwise layers)."""
    import pandas as pd

    from cudnn_bench.cost import CostModel
    from cudnn_bench.ncu_pass import calls_of
    from seer.data.paths import REPO
    from seer.hardware import gpus

    path = REPO / "data" / "h100-sxm" / "test_set_ii.csv"
    if not path.is_file():
        pytest.skip("no stored H100 data")
    refs = calls_of({"test_set_ii": pd.read_csv(path, low_memory=False)}, CostModel.for_gpu(gpus.lookup("h100-sxm")))
    dear = [r for r in refs if r.est_s > 60]
    assert dear and {r.algo for r in dear} <= {"FFT", "FFT_TILING", "WINOGRAD_NONFUSED"}
    looped = [r for r in refs if r.algo in ("FFT", "FFT_TILING") and not r.config_key.endswith(":g1:NCHW")]
    assert looped and all(r.est_s > 60 for r in looped)
    assert sum(r.est_s < 5 for r in refs) > 0.8 * len(refs)
