"""One device call that does a whole GPU session's work and always hands back what it measured.

    python3 -m cudnn_bench.oneshot [--out-dir DIR] [--data data] [--limit 9.5m] [--shard I/N]
    (or: bash cudnn_bench/gpu_oneshot.sh, which runs it with the GPU image's python3 into $OUT)

A lent GPU comes for 10 minutes a command, results come back only through one folder ($OUT),
and a command that runs past its limit is killed. So this runs every step as a subprocess
bounded by the time left, most valuable first, and a packer thread copies what the call wrote or
changed in `data/` into DIR/data.tgz every minute, in 15 MiB parts where it is larger
(`packing.py`): a killed call still returns what was measured. A second call with the data
unpacked in the working tree (`cudnn_bench/unpack_call.sh`) resumes (the stores skip what they
hold).

Steps: 1 versions (nvidia-smi, `cudnn_bench info`); 2 core: Test-set-II (all 12 network x batch
sets) and the GEMM layers, everything; 3 PyTorch profiler traces (once per GPU); 4 grid (its
time less the side steps'): first the stored calls an older harness got wrong (`--redo unsplit`,
the SEER grid's: those calls only, each configuration's other calls kept as stored), then, in
turns by their shares of the time (`--interleave`: the gradients of conv_grid's core 0.5, conv_grid
0.35, the rest of the SEER grid 0.15), each in stratified order (any prefix is a spread-out
sample; conv_grid's core of real CNN layers and the first points of its space-filling design
first), first every suite's configurations beyond the trust distance of what is stored
(coverage.measure_order), until the reserve for the side steps (`SIDE_STEPS`, each only while
the data lacks some of its suite, each at most a fixed time a call): 5 the memory-bound suite
(PyTorch's kernels on the harness's stream), 6 the convolution gradients of Test-set-II's layers
(`conv_bwd`: cuDNN's backward-data and backward-filter), 7 Test-set-II and the GEMM layers with
tensor cores (TF32, BF16, FP16); 8 the ncu counters of a stratified sample; 9 `cudnn_bench report`. Step 2 also
measures again, first, what the older harness got wrong of Test-set-II and the GEMM layers. The
backend is the pure-ctypes `driver` one (nothing to build); if it cannot start, the core step is
retried once with CuPy, and if CUPTI cannot, once without kernel names (Test-set-II's scoring
needs none).
`session_coverage` prints what one such call covers (`python -m cudnn_bench plan --session`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seer.data.records import BLOCK_KEY, read_raw
from seer.errors import SeerError
from seer.hardware import gpus

from .argtypes import redo_reasons, shard, whole
from .cli import Parser
from .cost import CostModel
from .coverage import measure_order, within_trust
from .errors import BenchError
from .packing import Snapshot, pack, snapshot
from .plan import Budget, Plan, PlanItem, make_plan, only_calls, prefix
from .redo import calls_to_redo
from .runtime import BACKENDS
from .store import suite_file
from .suites import SUITES

LIMIT_S = 570.0  # the device tool's 10-minute command limit, less half a minute of margin
VERSIONS_S = 45.0  # nvidia-smi + `info` (loads every library once)
CORE_MAX_S = 240.0  # Test-set-II and the GEMM layers, at most
TRACES_S = 90.0  # PyTorch profiler traces
COUNTERS_S = 60.0  # the ncu sample's budget (its timeout is 1.5x)
FINISH_S = 30.0  # report and final packing
PACK_EVERY_S = 60.0
STOP_GRACE_S = 15.0  # SIGINT first (the harness saves and stops), SIGKILL after this
# a collect process's start-up (Python, CUDA, cuDNN), which its --stop-after clock counts
STEP_START_S = 8.0
# the census (cudnn_bench.census): cuDNN's kernel choices asked of descriptors, right after the
# core; at most this a call until the GPU's census folder holds the whole design (the H200 of
# 2026-11-30 asked 3,409 configurations in 170 s, 20 a second: the simulated cuDNN answers 1,600)
CENSUS_S = 45.0
CENSUS_STEP = "census: cuDNN's kernel choices by workspace query and graph capture (no timing)"
CORE_SUITES = ("gemm_layers", "test_set_ii")
# the grid step's suites (after the redo), measured in turns by their shares (plan.interleave)
GRID_SUITES = ("conv_grid", "seer_grid", "conv_bwd_grid")
GRID_STEP = "grid: conv_grid, seer_grid, conv_bwd_grid, in turns by share"


@dataclass(frozen=True)
class SideStep:
    """A suite measured after the grid step in every call until the GPU's data holds it whole,
    in at most `max_s` a call: its time is taken from the grid only while something is left."""

    name: str  # what --skip calls it
    title: str
    suites: tuple[str, ...]
    max_s: float
    start_s: float = STEP_START_S  # a fixed start-up of the step's process, counted in its --stop-after
    maths: tuple[str, ...] = ("fma",)


SIDE_STEPS = (
    # about 40 s by the cost model, once: importing PyTorch and starting CUDA in it take 20 s
    SideStep("memory", "memory: memory-bound kernels (PyTorch's)", ("memory_ops",), 120.0, 20.0),
    # Test-set-II's layers at batch 32 and 128 in about 80 s by the (uncalibrated) cost model (the
    # H100's last 62, its 1x1 layers, 4.5 s: with no start-up counted their step stopped before it began)
    SideStep("backward", "backward: convolution gradients (cuDNN's data and filter)", ("conv_bwd",), 90.0),
    # Test-set-II and the GEMM layers with tensor cores, about 55 s a math mode by the cost model:
    # TF32 first (PyTorch's default for cuDNN's convolutions), then BF16 and FP16
    SideStep(
        "tensor",
        "tensor: Test-set-II and GEMM layers in TF32, BF16, FP16",
        CORE_SUITES,
        45.0,
        maths=("tf32", "bf16", "fp16"),
    ),
)
# what --skip may leave out, in the order the steps run (the core step opens the data folder every later step needs)
SKIPPABLE = ("census", "traces", "grid", *(s.name for s in SIDE_STEPS), "counters")


# ====================================================================== running steps
@dataclass
class StepResult:
    name: str
    rc: int
    seconds: float


@dataclass
class Session:
    """Where things go and how much time is left."""

    out_dir: Path
    data: Path
    deadline: float
    log_path: Path
    start_files: Snapshot = field(default_factory=dict)  # data/ before the call: packs carry the rest
    results: list[StepResult] = field(default_factory=list)
    last_output: list[str] = field(default_factory=list)  # the lines of the latest step
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pack(self) -> list[str]:
        """What the call wrote or changed in data/ into out_dir (packing.pack)."""
        return pack(self.data, self.out_dir, self.start_files)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def log(self, line: str) -> None:
        with self._lock:
            print(line, flush=True)
            with open(self.log_path, "a") as fh:
                fh.write(line + "\n")


def _heed_sigint() -> None:
    """In the step's process before it runs: SIGINT back to its default. A shell starts a
    background job (`... &`, nohup) with SIGINT ignored, its children inherit that, and Python
    then installs no KeyboardInterrupt handler: the step would ignore the stop and be killed
    STOP_GRACE_S later without saving."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_step(sess: Session, name: str, argv: list[str], timeout: float) -> int:
    """Run one step, its output into the log; past `timeout` it gets SIGINT (the harness
    then saves and stops), and SIGKILL after STOP_GRACE_S. Returns its exit code."""
    if timeout <= 1:
        sess.log(f"=== {name}: skipped, no time left")
        sess.results.append(StepResult(name, -1, 0.0))
        return -1
    sess.log(f"=== {name} (at most {timeout:.0f} s): {' '.join(argv)}")
    t0 = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=env,
            preexec_fn=_heed_sigint if os.name == "posix" else None,
        )
    except OSError as exc:
        sess.log(f"{name}: cannot start ({exc})")
        sess.results.append(StepResult(name, 127, 0.0))
        return 127
    sess.last_output = []

    def read() -> None:
        for ln in proc.stdout or ():  # stdout=PIPE: never None
            sess.last_output.append(ln.rstrip())
            sess.log(f"  {ln.rstrip()}")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        sess.log(f"{name}: time is up, stopping it")
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
    reader.join(timeout=5)
    secs = time.monotonic() - t0
    sess.log(f"=== {name}: exit {rc} after {secs:.0f} s")
    sess.results.append(StepResult(name, rc, secs))
    return rc


# ====================================================================== packing
class Packer(threading.Thread):
    """Packs every PACK_EVERY_S seconds until stopped."""

    def __init__(self, sess: Session, every: float = PACK_EVERY_S):
        super().__init__(daemon=True)
        self.sess, self.every, self.stop = sess, every, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.every):
            try:
                self.sess.pack()
            except Exception as exc:  # packing must never end the session
                self.sess.log(f"packing failed ({exc}); the next try may work")


# ====================================================================== the session
def gpu_folder(data: Path) -> Path | None:
    """The data/<gpu-slug> folder the collection writes (the newest device.json)."""
    found = sorted(data.glob("*/device.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def rows_by_suite(folder: Path) -> dict[str, int]:
    """Data lines per suite file (a quick count for the summary; header excluded)."""
    out = {}
    for p in sorted(folder.glob("*.csv")):
        with open(p, "rb") as fh:
            out[p.stem] = max(0, sum(1 for _ in fh) - 1)
    return out


def collect_argv(
    py: str, data: Path, suites: tuple[str, ...], backend: str, stop_after: float, extra: list[str]
) -> list[str]:
    return [
        py,
        "-m",
        "cudnn_bench",
        "collect",
        "--out",
        str(data),
        "--suite",
        ",".join(suites),
        "--budget",
        "none",
        "--stop-after",
        f"{max(1, int(stop_after))}s",
        "--counters",
        "none",
        "--backend",
        backend,
        "--no-progress",
        *extra,
    ]


def run_session(args: argparse.Namespace, sess: Session, step: Callable = run_step) -> int:
    """The steps in order of value; returns 0 when the core step measured something."""
    py, data = sys.executable, sess.data
    limit = ["--limit", str(args.max_configs)] if args.max_configs else []
    extra = limit + (["--redo", ",".join(args.redo)] if args.redo else [])
    step(
        sess,
        "versions: nvidia-smi",
        [
            "nvidia-smi",
            "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,"
            "power.limit,temperature.gpu,memory.used,memory.total",
            "--format=csv",
        ],
        min(15.0, sess.left()),
    )
    step(sess, "versions: libraries and device", [py, "-m", "cudnn_bench", "info"], min(VERSIONS_S, sess.left()))
    reserve = (0.0 if "counters" in args.skip else COUNTERS_S * 1.5) + FINISH_S
    backend = args.backend

    def core(label: str, more: list[str]) -> int:
        core_s = min(CORE_MAX_S, sess.left() - reserve)
        return step(
            sess, label, collect_argv(py, data, CORE_SUITES, backend, core_s, extra + more), core_s + STOP_GRACE_S
        )

    rc = core("core: Test-set-II and GEMM layers", [])
    if rc == 2 and any("CUPTI" in ln for ln in sess.last_output):
        # Test-set-II's scoring (each algorithm's time, cuDNN's ranking) needs no kernel names
        sess.log("CUPTI failed: measuring Test-set-II and the GEMM layers without kernel names")
        rc = core("core (no CUPTI)", ["--launch-meta", "none"])
    elif rc == 2 and backend == "driver" and gpu_folder(data) is None:
        sess.log("the driver backend could not start: trying CuPy's")
        backend = "cupy"
        rc = core("core (cupy)", [])
    folder = gpu_folder(data)
    if folder is None:
        sess.log("nothing was measured: see the lines above")
        return 1
    sess.pack()
    if "census" not in args.skip and census_left(folder):
        t = max(0.0, min(CENSUS_S, sess.left() - reserve))
        argv = [
            py,
            "-m",
            "cudnn_bench",
            "census",
            "--out",
            str(data),
            "--stop-after",
            f"{t:.0f}s",
            "--backend",
            backend,
        ]
        # the census takes --limit and no --redo: it times nothing, so nothing is measured again
        step(sess, CENSUS_STEP, argv + limit, t + STEP_START_S + STOP_GRACE_S)
    if "traces" not in args.skip:  # torch_traces keeps the traces recorded before: it adds what is missing
        step(
            sess,
            "traces: PyTorch profiler",
            [py, "-m", "cudnn_bench.torch_traces", "--out", str(folder / "traces")],
            min(TRACES_S, sess.left() - reserve),
        )
    sides = {s.name: 0.0 if s.name in args.skip else side_time(s, folder) for s in SIDE_STEPS}
    grid_s = sess.left() - reserve - sum(sides.values())
    if "grid" not in args.skip:
        shard = ["--shard", args.shard] if args.shard else []
        step(
            sess,
            GRID_STEP,
            collect_argv(py, data, GRID_SUITES, backend, grid_s - STOP_GRACE_S, extra + shard + ["--interleave"]),
            grid_s,
        )
    for side in SIDE_STEPS:  # until the GPU holds them: what a step stores, later calls skip
        if sides[side.name] > 0:
            t = min(sides[side.name], sess.left() - reserve)
            more = extra + ["--math", ",".join(side.maths)]
            # as the core: measuring until t, the grace after it (the grid step leaves its grace unused)
            step(sess, side.title, collect_argv(py, data, side.suites, backend, t, more), t + STOP_GRACE_S)
    if "counters" not in args.skip:
        step(
            sess,
            "counters: ncu sample",
            [
                py,
                "-m",
                "cudnn_bench",
                "counters",
                "--data",
                str(folder),
                "--counters",
                "sample",
                "--counters-budget",
                f"{int(COUNTERS_S)}s",
                "--backend",
                backend,
            ],
            min(COUNTERS_S * 1.5, sess.left() - FINISH_S),
        )
    try:
        report = subprocess.run(
            [py, "-m", "cudnn_bench", "report", str(folder)],
            capture_output=True,
            text=True,
            timeout=max(5.0, min(60.0, sess.left())),
        )
        text = report.stdout + report.stderr
    except subprocess.TimeoutExpired:
        text = "report: no time left"
    (sess.out_dir / "report.txt").write_text(text)
    sess.log(text.strip())
    return 0 if any(rows_by_suite(folder).values()) else 1


def census_left(folder: Path) -> int:
    """How many configurations of the census design the census serving `folder` (a
    data/<gpu-slug>; seer.data.census.shared: its own or its architecture's) holds no answers of."""
    from seer.data.census import shared

    from . import census

    return len(census.design(exclude=census.held_out()).left(shared(folder.parent, folder.name)))


def side_time(side: SideStep, folder: Path) -> float:
    """Seconds a side step needs this call for what `folder` lacks of its suites (0 when it
    holds them whole), at most its `max_s`."""
    try:
        spec = gpus.lookup(folder.name)
    except SeerError:
        spec = gpus.lookup("h100-sxm")
    cost = CostModel.for_gpu(spec)
    return side_s(side, resume(make_plan(list(side.suites), list(side.maths), Budget(), cost), folder, cost).new)


def side_s(side: SideStep, new: list[PlanItem]) -> float:
    """A side step's time for its configurations not stored (`new`): its start-up and their
    estimate, at most its `max_s`; none when there are none."""
    return min(side.max_s, side.start_s + sum(i.est_s for i in new)) if new else 0.0


def summary(sess: Session, t0: float) -> str:
    lines = [f"{'step':<40} {'exit':>5} {'seconds':>8}"]
    lines += [f"{r.name[:40]:<40} {r.rc:>5} {r.seconds:>8.0f}" for r in sess.results]
    folder = gpu_folder(sess.data)
    if folder is not None:
        lines.append(f"rows in {folder}: " + ", ".join(f"{k} {v}" for k, v in rows_by_suite(folder).items()))
    lines.append(
        f"wall time {time.monotonic() - t0:.0f} s; files in {sess.out_dir}: "
        + ", ".join(sorted(p.name for p in sess.out_dir.iterdir() if p.is_file()))
    )
    return "\n".join(lines)


# ====================================================================== what one call covers
@dataclass
class Resume:
    """Where a data folder stands for one suite's plan: what is stored, what of it to redo."""

    new: list[PlanItem]  # not stored yet, in plan order
    redo: list[PlanItem]  # stored, measured again (--redo unsplit), only the calls that were wrong
    stored: int


def resume(plan: Plan, folder: Path | None, cost: CostModel, reasons: tuple[str, ...] = ("unsplit",)) -> Resume:
    """The plan's items against a data/<gpu-slug> folder's stores (None: nothing stored)."""
    done: set[tuple[str, ...]] = set()
    redo: dict[tuple[str, ...], frozenset[str] | None] = {}
    for suite in dict.fromkeys(i.suite for i in plan.items):
        path = suite_file(folder, suite) if folder else None
        if path is not None:
            raw = read_raw(path)[0]
            done |= set(raw[list(BLOCK_KEY)].itertuples(index=False, name=None))
            redo |= calls_to_redo(path, list(reasons), raw)
    again = [only_calls(i, redo[i.key], cost) for i in plan.items if i.key in redo]
    return Resume([i for i in plan.items if i.key not in done], again, sum(i.key in done for i in plan.items))


def session_coverage(gpu: str = "h100-sxm", limit_s: float = LIMIT_S, calls: int = 1, data: Path | None = None) -> str:
    """What `calls` one-shot calls of `limit_s` cover, by the planner's cost model, resuming
    `data` (its data/<gpu-slug> folder's stores: what they hold is skipped, what an older
    harness split wrongly is measured again first, only in the calls that were wrong): the core
    step, then the grid step's redo, then its suites in turns by share (plan.interleave), until
    the time is up."""
    spec = gpus.lookup(gpu)
    cost = CostModel.for_gpu(spec)
    folder = (
        data / gpus.slug_for(spec.name) if data is not None and (data / gpus.slug_for(spec.name)).is_dir() else None
    )
    core = resume(make_plan(list(CORE_SUITES), ["fma"], Budget(), cost), folder, cost)
    census_s = CENSUS_S if folder is None or census_left(folder) else 0.0
    fixed = VERSIONS_S + census_s + TRACES_S + COUNTERS_S * 1.5 + FINISH_S
    core_s = sum(i.est_s for i in core.new + core.redo)
    side_lines, sides_s = [], 0.0
    for side in SIDE_STEPS:
        new = resume(make_plan(list(side.suites), list(side.maths), Budget(), cost), folder, cost).new
        todo, t = new, 0.0
        for _ in range(calls):  # each call takes what its time allows of what is left
            took = side_s(side, todo)
            done = prefix(todo, max(0.0, took - side.start_s) + 1e-9)
            todo, t = todo[len(done) :], t + took
            if not done:
                break
        got = new[: len(new) - len(todo)]
        sides_s += t
        side_lines.append(
            f"  {', '.join(side.suites)}"
            + (f" in {', '.join(side.maths)}" if side.maths != ("fma",) else "")
            + f", after the grid step (at most {side.max_s:.0f} s a call): "
            + (f"{len(got)} of {len(new)} configurations not stored, in about {_span(t)}" if new else "all stored")
        )
    grid_s = max(0.0, calls * (limit_s - fixed) - core_s - sides_s)
    n_ii = sum(1 for i in core.new if i.suite == "test_set_ii")
    n_gemm = sum(1 for i in core.new if i.suite == "gemm_layers")
    lines = [
        f"{calls} one-shot call(s) of {limit_s / 60:.1f} min on {spec.name} (cudnn_bench/gpu_oneshot.sh), "
        "by the planner's cost model (datasheet peaks, calibrated on the first H100 run; `report` shows how "
        "far off it was)" + (f", resuming {folder}:" if folder else ", from nothing stored:"),
        f"  fixed: versions {VERSIONS_S:.0f} s, "
        + (f"census {census_s:.0f} s a call until whole, " if census_s else "census whole, ")
        + f"traces {TRACES_S:.0f} s (first call), ncu sample "
        f"{COUNTERS_S * 1.5:.0f} s, report and packing {FINISH_S:.0f} s",
        (
            f"  test_set_ii: all {n_ii} configurations (AlexNet, VGG-16, ResNet-50, MobileNetV2 x batch 1, 32, "
            "128: all 12 sets)"
            if not core.stored
            else f"  test_set_ii and gemm_layers: {core.stored} stored, {n_ii + n_gemm} new"
        )
        + (f", gemm_layers: all {n_gemm}" if not core.stored else "")
        + (f", {len(core.redo)} measured again" if core.redo else "")
        + f", about {core_s / 60:.1f} GPU minutes",
        *side_lines,
    ]
    left = grid_s
    plans = {suite: make_plan([suite], ["fma"], Budget(), cost) for suite in GRID_SUITES}
    states = {suite: resume(plans[suite], folder, cost) for suite in GRID_SUITES}
    for suite, state in states.items():
        redo_s = sum(i.est_s for i in state.redo)
        if state.redo:
            whole = sum(cost.config_s(i.config, i.math) for i in state.redo)
            lines.append(
                f"  {suite}, measured again first (--redo unsplit): {len(state.redo)} stored configurations, "
                f"{sum(i.calls is not None for i in state.redo)} of them only in the calls that were wrong, "
                f"about {_span(redo_s)} ({_span(whole)} whole)"
            )
        left -= redo_s
    lines.append(
        f"  then, with the time left (about {max(0.0, left) / 60:.1f} minutes), in turns by their shares of it:"
    )
    unstored = {i.key for state in states.values() for i in state.new}
    stored = [i.key for plan in plans.values() for i in plan.items if i.key not in unstored]
    todo = measure_order([i for state in states.values() for i in state.new], stored, interleaved=True)
    taken = prefix(todo, max(0.0, left))  # as collect orders it
    grid = [i for plan in plans.values() for i in plan.items]
    suite_of = np.array([i.suite for i in grid], dtype=object)
    before = within_trust(grid, stored)  # each grid item, once for every suite
    after = within_trust(grid, stored + [i.key for i in taken])  # any suite's calls cover
    for suite, state in states.items():
        full = plans[suite]
        got = [i for i in taken if i.suite == suite]
        n = len(full.items)
        what = (
            "its core first (every distinct layer of torchvision's CNN families at one batch size, and the "
            f"first points of the space-filling design: {_core_count(suite, full)} configurations)"
            if SUITES[suite].tier is not None
            else "a stratified spread (filter size x stride)"
        )
        rest = sum(i.est_s for i in state.new)
        mine = suite_of == suite
        lines.append(
            f"  {suite}: {len(got)} of {n} plannable configurations ({100 * len(got) / max(1, n):.0f}%) in "
            f"{sum(i.est_s for i in got) / 60:.1f} minutes"
            + (f" ({state.stored} stored before)" if state.stored else "")
            + f", {what}, those beyond the trust distance of what is measured first (within it: "
            f"{100 * before[mine].mean():.0f}% of the suite -> {100 * after[mine].mean():.0f}%); what is not "
            f"stored is about {rest / 60:.0f} GPU minutes, about {rest / max(1.0, limit_s - fixed):.0f} such calls"
        )
    lines += [
        "  each later call resumes where the last stopped; --shard I/N splits the grids between machines",
        "  not covered: gemm_grid; the grids in other math modes (--math tf32,fp16,bf16)",
    ]
    return "\n".join(lines)


def _span(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 90 else f"{seconds / 60:.1f} minutes"


def _core_count(suite: str, plan: Plan) -> int:
    tier = SUITES[suite].tier
    return sum(1 for i in plan.items if tier is not None and tier(i.config) == 0)


# ====================================================================== CLI
def seconds(text: str) -> float:
    try:
        b = Budget.parse(text)
    except BenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if b.seconds is None or b.seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a time such as 9.5m or 570s, got {text!r}")
    return b.seconds


def skipped_steps(text: str) -> set[str]:
    """--skip's step names, checked: a misspelt or unskippable name (the core step opens the data
    folder every later step needs) would otherwise run the step it meant to leave out, on device
    time that cannot be had back."""
    names = {s.strip() for s in text.split(",") if s.strip()}
    unknown = sorted(names - set(SKIPPABLE))
    if unknown:
        raise argparse.ArgumentTypeError(f"no step {', '.join(unknown)} to skip (steps: {', '.join(SKIPPABLE)})")
    return names


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m cudnn_bench.oneshot",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--out-dir",
        type=Path,
        default=Path(os.environ.get("OUT", "oneshot-out")),
        help="where data.tgz, ncu.tgz, oneshot.log and report.txt go (default: $OUT, else ./oneshot-out)",
    )
    p.add_argument(
        "--data", type=Path, default=Path("data"), help="the data folder to resume and extend (default: data)"
    )
    p.add_argument(
        "--limit",
        type=seconds,
        default=LIMIT_S,
        metavar="TIME",
        help=f"wall time of the whole call (default: {LIMIT_S / 60:.1f}m)",
    )
    p.add_argument(
        "--shard",
        type=lambda t: str(shard(t)),
        default=None,
        metavar="I/N",
        help="only this slice of the grids, conv_grid and seer_grid (python -m cudnn_bench collect --help)",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="driver",
        help="GPU runtime (default: driver, pure ctypes, nothing to build)",
    )
    p.add_argument(
        "--skip",
        type=skipped_steps,
        default=set(),
        metavar="STEPS",
        help="steps to leave out: " + ", ".join(SKIPPABLE),
    )
    p.add_argument(
        "--redo",
        type=lambda t: [] if t.strip() == "none" else redo_reasons(t),
        default=["unsplit"],
        metavar="REASONS",
        help="stored configurations to measure again in the core and grid steps, or none "
        "(default: unsplit; python -m cudnn_bench collect --help)",
    )
    p.add_argument(
        "--max-configs",
        type=whole(1),
        default=None,
        metavar="N",
        help="at most N configurations per suite (smoke runs)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    t0 = time.monotonic()
    try:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        args.data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        sys.stderr.write(f"cudnn_bench.oneshot: cannot create {exc.filename}: {exc.strerror}\n")
        return 2
    sess = Session(args.out_dir, args.data, t0 + args.limit, args.out_dir / "oneshot.log", snapshot(args.data))
    sess.log(
        f"cudnn_bench one-shot session, {args.limit:.0f} s, data {args.data}, out {args.out_dir}, "
        f"started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}"
    )
    packer = Packer(sess)
    packer.start()
    try:
        rc = run_session(args, sess)
    except KeyboardInterrupt:
        rc = 130
    finally:
        packer.stop.set()
        sess.log("packed: " + (", ".join(sess.pack()) or "nothing new in data/"))
        sess.log(summary(sess, t0))
        (args.out_dir / "steps.json").write_text(json.dumps([vars(r) for r in sess.results], indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
