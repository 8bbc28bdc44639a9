"""What a lent GPU session needs, checked on the CPU: cuDNN's runtime dependencies loaded first
and their versions checked, the cuBLASLt compute-type fallback, CUPTI's dropped records and
missing names, the GPU span of a call, shards of the plan, and the one-shot call."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd
import pytest
from fakes import FakeTracer, fake_env

from cudnn_bench import collect as K
from cudnn_bench import libs
from cudnn_bench import measure as M
from cudnn_bench import oneshot as O
from cudnn_bench.configs import ConvConfig, GemmConfig
from cudnn_bench.cost import CostModel
from cudnn_bench.cublaslt import COMPUTE_NAMES, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC
from cudnn_bench.env import SIMULATE, open_env
from cudnn_bench.errors import BenchError, LibraryNotFound
from cudnn_bench.ncu_pass import calls_of
from cudnn_bench.plan import Budget, PlanItem, Shard, make_plan, stratum
from seer.data import records
from seer.data.variants import CONV_ALGOS
from seer.hardware import gpus

REPO = Path(__file__).resolve().parents[2]
CONV = ConvConfig(1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, name="tiny")
GEMM = GemmConfig(1, 256, 128, 64, "tn", "layer")


def _opts(**kw):
    return K.Options(progress=False, timing=K.TimingOptions(warmup=1, reps=4, min_reps=2), **kw)


def _measure(cfg, env, suite="test_set_ii"):
    return pd.DataFrame(K.measure(env, PlanItem(suite, cfg, "fma", 0.1), _opts()))


# ---------------------------------------------------------------- libraries
def test_cudnns_runtime_dependencies_load_before_cudnn(tmp_path, monkeypatch):
    """cuBLASLt, NVRTC and its builtins are loaded (by full path) before any cuDNN library."""
    names = {"cublaslt": "libcublasLt.so.13", "nvrtc": "libnvrtc.so.13",
             "nvrtc_builtins": "libnvrtc-builtins.so.13.0", "cudnn": "libcudnn.so.9"}
    for n in [*names.values(), *libs.CUDNN_SUBLIBS]:
        (tmp_path / n).write_bytes(b"")
    order: list[str] = []
    monkeypatch.setattr(libs, "candidates", lambda kind: [libs.Candidate(str(tmp_path / names[kind]), "wheel")])
    monkeypatch.setattr(libs, "_load", lambda path, mode=0: order.append(Path(path).name) or object())
    monkeypatch.setattr(libs, "_LOADED", {})
    libs.load_cudnn()
    assert order == ["libcublasLt.so.13", "libnvrtc.so.13", "libnvrtc-builtins.so.13.0",
                     *libs.CUDNN_SUBLIBS, "libcudnn.so.9"]
    assert set(libs.loaded()) == {"cublaslt", "nvrtc", "nvrtc_builtins", "cudnn"}
    assert libs.loaded()["nvrtc"] == str((tmp_path / "libnvrtc.so.13").resolve())


def test_missing_runtime_dependencies_are_a_note_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(libs, "candidates", lambda kind: [libs.Candidate(str(tmp_path / "absent.so"), "wheel")])
    monkeypatch.setattr(libs, "_LOADED", {})
    assert libs.preload_runtime_deps() == {}
    notes = libs.version_notes({"cudnn": "9.28.0", "cublaslt": "13.10.0", "nvrtc": "", "cuda": "13.0"})
    assert notes == [n for n in notes if "NVRTC was not found" in n] and len(notes) == 1


def test_builtins_are_found_by_their_versioned_soname(tmp_path, monkeypatch):
    lib = tmp_path / "nvidia_cu13" / "lib"
    lib.mkdir(parents=True)
    for n in ("libnvrtc-builtins.so.13.0", "libnvrtc-builtins.alt.so.13.0"):
        (lib / n).write_bytes(b"")
    monkeypatch.setattr(libs, "_wheel_dirs", lambda pkg: [tmp_path / pkg.replace(".", "_")])
    first = libs.candidates("nvrtc_builtins")[0]
    assert first == libs.Candidate(str(lib / "libnvrtc-builtins.so.13.0"), "wheel")


@pytest.mark.parametrize("versions, expect", [
    ({"cudnn": "9.19.0", "cublaslt": "13.1.0", "nvrtc": "13.0", "cuda": "13.0"}, ["cudnn 9.19.0", "cublaslt 13.1.0"]),
    ({"cudnn": "9.28.0", "cublaslt": "12.9.1", "nvrtc": "13.0", "cuda": "13.0"}, ["cublaslt 12.9.1", "CUDA 13"]),
    ({"cudnn": "9.28.0", "cublaslt": "13.10.0", "nvrtc": "13.0", "cuda": "13.0"}, []),
])
def test_version_notes(versions, expect):
    notes = libs.version_notes(versions)
    assert len(notes) == len(expect) and all(e in n for e, n in zip(expect, notes))


def test_another_major_version_is_one_sentence():
    with pytest.raises(LibraryNotFound, match=r"cudnn 8\.9\.7 was found.*cudnn 9\.x") as info:
        libs.version_notes({"cudnn": "8.9.7"})
    assert "\n" not in str(info.value)


def test_real_nvrtc_where_installed():
    if libs.find("nvrtc") is None:
        pytest.skip("no NVRTC here (the GPU image has the wheel)")
    libs.preload_runtime_deps()
    assert libs.nvrtc_version().split(".")[0].isdigit()


# ---------------------------------------------------------------- cuBLASLt compute type
def test_pedantic_without_algorithms_falls_back_to_compute_32f():
    env = fake_env(no_algos_for=(CUBLAS_COMPUTE_32F_PEDANTIC,))
    df = _measure(GEMM, env, "gemm_layers")
    assert (df["status"] == "ok").all() and set(df["compute_type"]) == {"CUBLAS_COMPUTE_32F"}
    computes = [a[1] for a in env.lt.lib.named("cublasLtMatmulDescCreate")]
    assert computes == [CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F]
    # the ncu worker must make the same call: the compute type travels with it
    df["fp32_inst"] = float("nan")
    refs = calls_of({"gemm_layers": df})
    assert {r.compute for r in refs} == {"CUBLAS_COMPUTE_32F"}
    assert {v: k for k, v in COMPUTE_NAMES.items()}[refs[0].compute] == CUBLAS_COMPUTE_32F


def test_pedantic_is_kept_where_it_works_and_no_algorithm_at_all_is_a_status():
    df = _measure(GEMM, fake_env(), "gemm_layers")
    assert set(df["compute_type"]) == {"CUBLAS_COMPUTE_32F_PEDANTIC"}
    df = _measure(GEMM, fake_env(no_algos_for=(CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F)), "gemm_layers")
    assert list(df["status"]) == ["not_supported"] and "no usable algorithm" in df["message"].iloc[0]


# ---------------------------------------------------------------- CUPTI: span, names, dropped records
def test_gpu_span_and_host_gap_flag():
    quiet = _measure(CONV, fake_env())
    gappy = _measure(CONV, fake_env(host_gap_ms=0.05))
    for df in (quiet, gappy):
        ok = df[df["status"] == "ok"]
        assert ok["gpu_span_ms"].notna().all()
        # the span covers every kernel of the call, so it is at least the longest kernel's time
        assert (ok.groupby("call_id")["gpu_span_ms"].first()
                >= ok.groupby("call_id")["kernel_time_ms"].max() - 1e-9).all()
        # the time some kernel ran lies within the span, at least the longest kernel's
        assert (ok["gpu_busy_ms"] <= ok["gpu_span_ms"] + 1e-9).all() and (ok["gpu_gaps"] >= 0).all()
        assert (ok.groupby("call_id")["gpu_busy_ms"].first()
                >= ok.groupby("call_id")["kernel_time_ms"].max() - 1e-9).all()
    q, g = (d[d["status"] == "ok"].groupby("algo").first() for d in (quiet, gappy))
    assert (q["gpu_span_ms"] - g["gpu_span_ms"]).abs().max() < 1e-6  # the gap is not GPU time
    assert (g["time_ms"] > q["time_ms"] + 0.04).all()  # the events see it
    assert not q["host_gap"].astype(bool).any()
    fast = g[g["gpu_span_ms"] < 0.5]  # where 0.05 ms is more than 10% of the call
    assert len(fast) and fast["host_gap"].astype(bool).all()


def test_seer_learns_from_the_gpu_span_where_there_is_one(tmp_path):
    df = _measure(CONV, fake_env(host_gap_ms=0.05))
    path = tmp_path / "test_set_ii.csv"
    records.write_csv(df, path)
    rec = records.read_csv(path)
    ok = rec["status"] == "ok"
    assert (rec.loc[ok, "time_ms"] == rec.loc[ok, "gpu_span_ms"]).all()
    assert (rec.loc[ok, "event_time_ms"] > rec.loc[ok, "time_ms"]).all()
    again = records.read_csv(records.write_csv(rec, tmp_path / "again.csv"))
    assert (again.loc[ok, "time_ms"] == rec.loc[ok, "time_ms"]).all()  # idempotent
    assert (again.loc[ok, "event_time_ms"] == rec.loc[ok, "event_time_ms"]).all()


@pytest.mark.parametrize("warmup", [1, 2])
def test_chunked_calls_with_set_up_and_overlapping_kernels_split_into_whole_calls(warmup):
    """As cuDNN on the H100: calls that loop over batch chunks, a one-off set-up kernel on the
    first call, and kernels overlapping on a side stream. Each call's kernels add up to the whole
    call (the events' time here, with no host gaps), every chunk has its row, the set-up none."""
    from fakes import ALGO_KERNELS

    chunks = {1: 4, 4: 3, 5: 8}
    env = fake_env(chunks=chunks, setup=True, overlap=True)
    opts = K.Options(progress=False, timing=K.TimingOptions(warmup=warmup, reps=5, min_reps=5))
    df = pd.DataFrame(K.measure(env, PlanItem("test_set_ii", CONV, "fma", 0.1), opts))
    ok = df[df["status"] == "ok"]
    assert ok["kernel"].notna().all() and not ok["message"].fillna("").astype(bool).any()
    calls = ok.groupby("algo")
    t = calls["time_ms"].first()
    assert calls["kernel_time_ms"].sum().to_numpy() == pytest.approx(t.to_numpy(), rel=1e-3)  # whole calls
    span = calls["gpu_span_ms"].first()
    assert ((span > 0.6 * t) & (span < t * 1.001)).all()  # one chunk would be a quarter or less
    for algo, n in chunks.items():
        launches = calls["launches"].sum()[CONV_ALGOS[algo]]
        assert launches == n * len(ALGO_KERNELS[algo])  # every chunk, no set-up kernel
    assert "setup_kernel" not in " ".join(ok["kernels"])


def test_a_call_whose_records_do_not_split_says_why():
    env = fake_env()
    take = env.tracer.take
    env.tracer.take = lambda: take()[1:] or []  # every take loses its first record
    opts = K.Options(progress=False, timing=K.TimingOptions(warmup=2, reps=5, min_reps=5))
    df = pd.DataFrame(K.measure(env, PlanItem("test_set_ii", CONV, "fma", 0.1), opts))
    ok = df[df["status"] == "ok"]
    assert "kernel" not in ok and ok["time_ms"].notna().all()
    one = ok[ok["algo"] == "IMPLICIT_GEMM"]["message"].iloc[0]  # one kernel a call: 4 records of 5 calls
    assert one == "CUPTI: 4 kernel records of 5 timed calls (the last warm-up call alone: 0) split into no equal calls"


def test_dropped_records_leave_the_call_without_kernel_rows():
    df = _measure(CONV, fake_env(tracer=FakeTracer(drop_every=4)))
    ok = df[df["status"] == "ok"]
    no_kernels = ok[ok["kernel"].isna()]
    assert len(no_kernels) and len(ok[ok["kernel"].notna()])
    assert no_kernels["gpu_span_ms"].isna().all() and (no_kernels["role"] == "main").all()


def test_a_run_without_kernel_names_stops_with_one_sentence(tmp_path):
    env = fake_env(tracer=FakeTracer(nameless=True))
    opts = _opts(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=3))
    with pytest.raises(BenchError, match="no kernel names") as info:
        K.run(opts, env, log=lambda s: None)
    assert "\n" not in str(info.value)
    saved = pd.read_csv(next(tmp_path.glob("*/test_set_ii.csv")))
    assert saved["config_key"].nunique() == 1  # the first configuration is kept, the run stopped


def test_cluster_dims_are_recorded_where_cupti_has_them():
    from cudnn_bench.cupti import KernelRecord

    rows = M.kernel_rows([[KernelRecord("k", 0, 1000, (4, 1, 1), (128, 1, 1), 32, 0, 0, cluster=(2, 1, 1))]],
                         "9.0", 132)
    assert (rows[0]["cluster_x"], rows[0]["cluster_y"], rows[0]["cluster_z"]) == (2, 1, 1)
    rows = M.kernel_rows([[KernelRecord("k", 0, 1000, (4, 1, 1), (128, 1, 1), 32, 0, 0)]], "9.0", 132)
    assert "cluster_x" not in rows[0]


# ---------------------------------------------------------------- shards
def test_shards_are_disjoint_stratified_and_whole():
    cost = CostModel.for_gpu(gpus.lookup("h100-sxm"))
    full = make_plan(["seer_grid", "test_set_ii"], ["fma"], Budget(), cost)
    parts = [make_plan(["seer_grid", "test_set_ii"], ["fma"], Budget(), cost, shard=Shard(i, 4))
             for i in range(1, 5)]
    keys = [{it.key for it in p.items} for p in parts]
    assert sum(len(k) for k in keys) == len(full.items) and set().union(*keys) == {it.key for it in full.items}
    strata = {stratum(it.config) for it in full.items if it.suite == "seer_grid"}
    for p in parts:  # every shard spreads over the filter sizes and strides
        assert {stratum(it.config) for it in p.items if it.suite == "seer_grid"} == strata
    assert parts[1].total["seer_grid"] == 1080 and "shard 2/4" in parts[1].summary()


@pytest.mark.parametrize("text", ["0/3", "4/3", "1", "a/b", "1/0"])
def test_bad_shards(text):
    with pytest.raises(BenchError):
        Shard.parse(text)


# ---------------------------------------------------------------- the one-shot call
def _oneshot(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {"CUDNN_BENCH_SIMULATE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "cudnn_bench.oneshot", "--out-dir", str(tmp_path / "out"),
                           "--data", str(tmp_path / "data"), "--max-configs", "2", "--limit", "400s", *extra],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


def test_oneshot_packs_what_it_measured_and_a_second_call_resumes(tmp_path):
    first = _oneshot(tmp_path)
    assert first.returncode == 0, first.stdout[-2000:]
    out = tmp_path / "out"
    assert {"data.tgz", "oneshot.log", "report.txt", "steps.json"} <= {p.name for p in out.iterdir()}
    assert not list(out.glob("*.part"))
    with tarfile.open(out / "data.tgz") as tar:
        names = tar.getnames()
    assert {"data/simulated-gpu/test_set_ii.csv", "data/simulated-gpu/gemm_layers.csv",
            "data/simulated-gpu/seer_grid.csv", "data/simulated-gpu/memory_ops.csv",
            "data/simulated-gpu/conv_bwd.csv", "data/simulated-gpu/device.json",
            "data/simulated-gpu/census/census-000000.csv.gz"} <= set(names)
    assert not [n for n in names if n.endswith(".lock")]
    steps = {s["name"]: s["rc"] for s in json.loads((out / "steps.json").read_text())}
    assert steps["core: Test-set-II and GEMM layers"] == 0 and steps[O.GRID_STEP] == 0
    before = (tmp_path / "data" / "simulated-gpu" / "test_set_ii.csv").read_bytes()
    second = _oneshot(tmp_path, "--skip", "grid,counters,traces")
    assert second.returncode == 0
    assert "already in" in second.stdout  # the stores skip what they hold
    assert (tmp_path / "data" / "simulated-gpu" / "test_set_ii.csv").read_bytes() == before


def test_simulation_names_its_factory_and_a_bad_name_is_one_sentence(monkeypatch):
    monkeypatch.setenv(SIMULATE, "fakes:fake_env")  # tests/ is on the path under pytest
    env = open_env(_opts(), need_conv=True, need_gemm=True)
    assert env.device.name == "Simulated GPU" and env.notes[-1].startswith(f"{SIMULATE}=fakes:fake_env")
    assert env.tracer is not None and env.dnn is not None and env.lt is not None
    env.close()
    for bad in ("no_such_module:make", "fakes:no_such_function", "fakes"):
        monkeypatch.setenv(SIMULATE, bad)
        with pytest.raises(BenchError, match="names no simulated GPU") as info:
            open_env(_opts(), need_conv=True, need_gemm=True)
        assert "\n" not in str(info.value)


def test_a_step_past_its_time_is_interrupted_and_the_session_goes_on(tmp_path):
    sess = O.Session(tmp_path, tmp_path / "data", time.monotonic() + 60, tmp_path / "log")
    t0 = time.monotonic()
    rc = O.run_step(sess, "sleeper", [sys.executable, "-c", "import time; print('hi', flush=True); time.sleep(30)"], 1.5)
    assert rc != 0 and time.monotonic() - t0 < 10
    log = (tmp_path / "log").read_text()
    assert "  hi" in log and "time is up" in log
    assert O.run_step(sess, "late", ["true"], 0.5) == -1  # no time left: skipped, not run


def test_session_coverage_is_computed_from_the_plan():
    text = O.session_coverage("h100-sxm")
    core = make_plan(["test_set_ii", "gemm_layers"], ["fma"], Budget(),
                       CostModel.for_gpu(gpus.lookup("h100-sxm")))
    n = sum(1 for i in core.items if i.suite == "test_set_ii")
    assert f"all {n} configurations" in text and "all 12 sets" in text
    one = int(text.split("conv_grid: ")[1].split(" of ")[0])
    two = int(O.session_coverage("h100-sxm", calls=2).split("conv_grid: ")[1].split(" of ")[0])
    assert 0 < one < two
    # the grid step's suites take turns by share: each gets some of one call's time
    for suite in O.GRID_SUITES:
        assert int(text.split(f"  {suite}: ")[1].split(" of ")[0]) > 0
    assert "in turns by their shares" in text


def test_session_coverage_resumes_a_data_folder_and_costs_only_the_wrong_calls(tmp_path, monkeypatch):
    opts = K.Options(out=tmp_path, suites=["seer_grid"], limit=3, budget=Budget(), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=2, min_reps=1))
    folder = K.run(opts, fake_env(), log=lambda s: None).folder
    assert folder.name == "h100-sxm"
    fresh, resumed = O.session_coverage("h100-sxm"), O.session_coverage("h100-sxm", data=tmp_path)
    assert "from nothing stored" in fresh and f"resuming {folder}" in resumed and "(3 stored before)" in resumed
    assert "measured again first" not in resumed

    stored = set(pd.read_csv(folder / "seer_grid.csv")["config_key"])
    def calls_to_redo(path, reasons, raw):
        grid = (raw["suite"] == "seer_grid").any()
        return {("seer_grid", k, "fma"): frozenset({"IMPLICIT_GEMM"}) for k in stored} if grid else {}

    monkeypatch.setattr(O, "calls_to_redo", calls_to_redo)
    text = O.session_coverage("h100-sxm", data=tmp_path)
    line = next(x for x in text.splitlines() if "measured again first" in x)
    assert "3 stored configurations, 3 of them only in the calls that were wrong" in line
    cost = CostModel.for_gpu(gpus.lookup("h100-sxm"))
    again = O.resume(make_plan(["seer_grid"], ["fma"], Budget(), cost), folder, cost).redo
    assert [i.calls for i in again] == [{"IMPLICIT_GEMM"}] * 3
    # IMPLICIT_GEMM's calls alone cost less than the configurations' every call
    assert 0 < sum(i.est_s for i in again) < sum(cost.config_s(i.config) for i in again)


def test_the_shell_wrapper_parses():
    assert subprocess.run(["bash", "-n", str(REPO / "cudnn_bench" / "gpu_oneshot.sh")]).returncode == 0


def _scripted(tmp_path: Path, first_core_says: str):
    """run_session with a stand-in for run_step: the first core step fails saying
    `first_core_says`, every later step succeeds and the collection writes its folder."""
    import argparse

    calls: list[list[str]] = []

    def step(sess, name, argv, timeout):
        calls.append(argv)
        core = "collect" in argv and ",".join(O.GRID_SUITES) not in argv
        if core and len([c for c in calls if "collect" in c]) == 1:
            sess.last_output = [first_core_says]
            return 2
        if "collect" in argv:
            (sess.data / "gpu").mkdir(parents=True, exist_ok=True)
            (sess.data / "gpu" / "device.json").write_text("{}")
        sess.last_output = []
        return 0

    sess = O.Session(tmp_path, tmp_path / "data", time.monotonic() + 570, tmp_path / "log")
    args = argparse.Namespace(backend="driver", max_configs=None, skip={"traces", "counters"}, shard=None,
                              redo=["unsplit"])
    O.run_session(args, sess, step=step)
    return [c for c in calls if "collect" in c]


def test_a_cupti_failure_still_measures_test_set_ii_without_names(tmp_path):
    core = _scripted(tmp_path, "cudnn_bench: CUPTI cannot trace kernels here (...)")
    assert "--launch-meta" not in core[0] and core[1][core[1].index("--launch-meta") + 1] == "none"
    assert core[1][core[1].index("--backend") + 1] == "driver"
    assert all(c[c.index("--redo") + 1] == "unsplit" for c in core)  # core steps and the grid
    grid = [c for c in core if ",".join(O.GRID_SUITES) in c]
    assert len(grid) == 1 and "--interleave" in grid[0] and all("--interleave" not in c for c in core if c not in grid)


def test_a_driver_backend_that_cannot_start_falls_back_to_cupy(tmp_path):
    core = _scripted(tmp_path, "cudnn_bench: no usable CUDA GPU: ...")
    # core, retry, grid, memory, backward, tensor
    assert [c[c.index("--backend") + 1] for c in core] == ["driver", "cupy", "cupy", "cupy", "cupy", "cupy"]


def test_the_side_steps_follow_the_grid_until_the_gpu_holds_their_suites(tmp_path):
    steps: list[tuple[str, list[str], float]] = []

    def session() -> list[str]:
        steps[:] = _recorded(tmp_path)
        return [name.split(":")[0] for name, _, _ in steps]

    opts = K.Options(out=tmp_path / "data", suites=["test_set_ii"], limit=1, budget=Budget(), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=1, min_reps=1))
    folder = K.run(opts, fake_env(), log=lambda s: None).folder
    memory, _, tensor = O.SIDE_STEPS
    assert session()[-5:] == ["grid", "memory", "backward", "tensor", "counters"]
    census = next(argv for name, argv, _ in steps if name == O.CENSUS_STEP)  # right after the core
    names = [n.split(":")[0] for n, _, _ in steps]
    assert names.index("census") == names.index("core") + 1 and census[census.index("--stop-after") + 1] == "45s"
    for side in O.SIDE_STEPS:
        timeout = next(t for name, argv, t in steps if name.startswith(side.name))
        argv = next(argv for name, argv, t in steps if name.startswith(side.name))
        t = O.side_time(side, folder)
        assert argv[argv.index("--suite") + 1] == ",".join(side.suites) and side.start_s < t <= side.max_s
        assert argv[argv.index("--math") + 1] == ",".join(side.maths)
        # measured until the step's time (its start-up counted in it), then the grace to stop
        assert argv[argv.index("--stop-after") + 1] == f"{int(t)}s" and timeout == t + O.STOP_GRACE_S
    assert O.side_time(tensor, folder) == tensor.max_s  # three math modes of the core take longer
    K.run(K.Options(**{**vars(opts), "suites": ["memory_ops"], "limit": None}), fake_env(), log=lambda s: None)
    assert O.side_time(memory, folder) == 0 and "memory" not in session()  # all stored: no step, no reserve
    assert "backward" in session() and not [n for n in _skipped(tmp_path, "backward") if n.startswith("backward")]


def _recorded(tmp_path, **args) -> list[tuple[str, list[str], float]]:
    """(name, argv, timeout) of each step of a session whose steps all succeed without running
    (run_session's arguments: traces skipped, no shard, no redo, unless `args` say otherwise)."""
    import argparse

    steps: list[tuple[str, list[str], float]] = []

    def step(sess, name, argv, timeout):
        steps.append((name, argv, timeout))
        sess.last_output = []
        return 0

    sess = O.Session(tmp_path, tmp_path / "data", time.monotonic() + 570, tmp_path / "log")
    given = {"backend": "driver", "max_configs": None, "skip": {"traces"}, "shard": None, "redo": [], **args}
    O.run_session(argparse.Namespace(**given), sess, step=step)
    return steps


def _skipped(tmp_path, skip: str) -> list[str]:
    """The steps of a scripted session with `skip` left out."""
    return [name for name, _, _ in _recorded(tmp_path, skip={"traces", skip})]


def test_the_grid_gets_the_counters_time_when_counters_are_skipped(tmp_path):
    """With --skip counters, the ncu reserve goes to the grid (the first H100 call left 2 minutes idle)."""
    import argparse

    timeouts: dict[str, float] = {}

    def step(sess, name, argv, timeout):
        timeouts[name] = timeout
        if "collect" in argv:
            (sess.data / "gpu").mkdir(parents=True, exist_ok=True)
            (sess.data / "gpu" / "device.json").write_text("{}")
        sess.last_output = []
        return 0

    def grid_s(skip: set[str]) -> float:
        sess = O.Session(tmp_path, tmp_path / "data", time.monotonic() + 570, tmp_path / "log")
        args = argparse.Namespace(backend="driver", max_configs=None, skip=skip, shard=None, redo=[])
        O.run_session(args, sess, step=step)
        return timeouts[O.GRID_STEP]

    with_counters, without = grid_s({"traces"}), grid_s({"traces", "counters"})
    assert without - with_counters == pytest.approx(O.COUNTERS_S * 1.5, abs=2.0)


def test_packs_from_two_threads_do_not_collide(tmp_path):
    """The packer thread and a step's own pack share data.tgz.part: one at a time."""
    import threading

    data = tmp_path / "data" / "gpu"
    data.mkdir(parents=True)
    (data / "x.csv").write_text("a\n" * 200_000)
    errors: list[BaseException] = []

    def go():
        try:
            for _ in range(3):
                O.pack(tmp_path / "data", tmp_path)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and (tmp_path / "data.tgz").is_file() and not (tmp_path / "data.tgz.part").exists()


def test_skip_names_a_step_it_can_leave_out(capsys):
    """`--skip core` ran the core step anyway (2026-11-27): a name that is no skippable step
    stops with one line and exit code 2 before any device time is spent."""
    assert O.build_parser().parse_args(["--skip", "traces, counters"]).skip == {"traces", "counters"}
    with pytest.raises(SystemExit) as exc:
        O.build_parser().parse_args(["--skip", "traces,core"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "no step core to skip" in err and "\n" not in err


@pytest.mark.parametrize("max_configs", [None, 5])
def test_every_steps_command_line_is_one_its_program_accepts(tmp_path, max_configs):
    """The 2026-11-30 H200 call's census step was handed the grid's `--redo unsplit`, which the
    census does not take: it stopped at once (exit 2) and the call's census was lost."""
    from cudnn_bench.__main__ import build_parser

    opts = K.Options(out=tmp_path / "data", suites=["test_set_ii"], limit=1, budget=Budget(), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=1, min_reps=1))
    K.run(opts, fake_env(), log=lambda s: None)
    steps = _recorded(tmp_path, max_configs=max_configs, shard="1/4", redo=["unsplit"])
    ours = [a[3:] for _, a, _ in steps if a[1:3] == ["-m", "cudnn_bench"]]
    assert {a[0] for a in ours} >= {"info", "collect", "census", "counters"}
    for argv in ours:
        build_parser().parse_args(argv)  # SystemExit(2) on an argument the subcommand does not take
