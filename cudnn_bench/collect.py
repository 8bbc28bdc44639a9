"""The collection: plan, measure every configuration, append its rows, resume, report.

`collect(opts)` opens the GPU environment (env.open_env), plans the suites within the budget,
skips what the record files already hold, and measures the rest configuration by configuration
(measure.measure); each configuration's rows are appended and fsynced before the next starts,
so Ctrl-C or a crash loses at most the one in flight. Then the ncu counter pass (ncu_pass).
`run` takes an open `Env`, which tests build from fakes.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from seer.errors import UnknownGPUError
from seer.hardware import gpus

from . import libs, ncu_pass
from .configs import TORCH_CONFIGS
from .cost import CostModel
from .coverage import measure_order
from .env import Env, open_env
from .errors import BenchError, DiskFull, is_disk_full
from .measure import measure
from .options import Options
from .plan import Plan, make_plan, only_calls
from .redo import calls_to_redo
from .runtime import DeviceInfo
from .store import Store, utc_now, write_json
from .suites import SUITES
from .timing import TimingOptions as TimingOptions  # re-exported: Options(timing=TimingOptions(...))


# ====================================================================== progress
class Progress:
    """A one-line progress bar with an ETA on stderr; the ETA scales the plan's estimate of
    what is left by how fast the run has gone against the estimate so far."""

    def __init__(self, n: int, est_total: float, deadline: float | None, stream=None, enabled: bool = True):
        self.n, self.est_total, self.deadline = n, est_total, deadline
        self.done, self.est_done, self.wall_done = 0, 0.0, 0.0
        self.stream = stream or sys.stderr
        self.enabled = enabled and n > 0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self._last = 0.0

    @staticmethod
    def fmt(s: float) -> str:
        s = max(0, int(s))
        return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"

    def eta(self) -> float:
        rate = self.wall_done / self.est_done if self.est_done > 0 else 1.0
        left = max(0.0, self.est_total - self.est_done) * rate
        if self.deadline is not None:
            left = min(left, max(0.0, self.deadline - time.monotonic()))
        return left

    def line(self, label: str = "") -> str:
        width = 24
        frac = self.done / self.n if self.n else 1.0
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        return (
            f"[{bar}] {self.done}/{self.n} {100 * frac:5.1f}%  elapsed "
            f"{self.fmt(time.monotonic() - self.t0)}  ETA {self.fmt(self.eta())}  {label}"
        )[:160]

    def update(self, est_s: float, wall_s: float, label: str = "") -> None:
        self.done += 1
        self.est_done += est_s
        self.wall_done += wall_s
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if now - self._last > 0.2 or self.done == self.n:
                self.stream.write("\r" + self.line(label).ljust(160))
                self.stream.flush()
                self._last = now
        elif now - self._last > 30 or self.done == self.n:
            self.stream.write(self.line(label) + "\n")
            self.stream.flush()
            self._last = now

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


# ====================================================================== the run
def cost_for(opts: Options, spec: gpus.GPUSpec) -> CostModel:
    """The cost model of a run's timing options on a GPU."""
    t = opts.timing
    return CostModel.for_gpu(
        spec,
        warmup=t.warmup,
        reps=t.reps,
        min_reps=t.min_reps,
        target_ms=t.target_ms,
        slow_ms=t.slow_ms,
        gemm_algos=opts.gemm_algos,
    )


def plan_for(opts: Options, device_name: str | None = None, spec: gpus.GPUSpec | None = None) -> Plan:
    if spec is None:
        try:
            spec = gpus.lookup(device_name or opts.gpu_for_plan)
        except UnknownGPUError:
            spec = gpus.lookup(opts.gpu_for_plan)
    return make_plan(
        opts.suites,
        opts.maths,
        opts.budget,
        cost_for(opts, spec),
        max_call_ms=opts.max_call_ms,
        max_bytes=opts.max_bytes,
        limit=opts.limit,
        shard=opts.shard,
    )


def device_spec(dev: DeviceInfo) -> gpus.GPUSpec:
    """The GPU's datasheet entry, or one made from what the device reports (peaks guessed)."""
    try:
        return gpus.lookup(dev.name)
    except UnknownGPUError:
        flops = dev.sms * 128 * 2 * dev.max_clock_mhz * 1e6  # 128 FP32 lanes per SM since Ampere
        return gpus.GPUSpec(
            gpus.slug_for(dev.name),
            dev.name,
            dev.cc,
            dev.sms,
            flops / 1e12,
            1000.0,
            dev.l2_bytes / 2**20,
            dev.max_clock_mhz,
            "device query (peaks guessed)",
        )


@dataclass(frozen=True)
class Tick:
    """Where a run stands, told to a watcher at its start and after every stored configuration
    (the Ray driver's progress line adds up the shards' ticks)."""

    done: int  # configurations measured by this run so far
    todo: int  # configurations this run set out to measure (the plan less what was stored)
    skipped: int  # configurations already stored before this run
    rows: int  # rows this run stored
    est_done: float  # planned GPU seconds of the measured configurations
    est_todo: float  # planned GPU seconds of the whole todo list


Watch = Callable[[Tick], None]


@dataclass
class RunResult:
    folder: Path
    measured: int
    skipped: int
    left: int
    plan: Plan
    interrupted: bool = False
    stopped_early: bool = False  # --stop-after ended this invocation before the plan did


def library_table(env: Env) -> dict[str, dict[str, str]]:
    """Each GPU library the run loaded: resolved path and version (device.json)."""
    paths = libs.loaded()
    cupti = getattr(env.tracer, "path", "")
    if cupti:
        paths.setdefault("cupti", libs.resolved(cupti))
    versions = {
        "cudnn": env.versions.get("cudnn_version", ""),
        "cublaslt": env.versions.get("cublas_version", ""),
        "nvrtc": libs.nvrtc_version(),
        "cupti": str(getattr(env.tracer, "version", "") or ""),
    }
    return {kind: {"path": path, "version": versions.get(kind, "")} for kind, path in sorted(paths.items())}


def open_stores(folder: Path, suites: Iterable[str]) -> dict[str, Store]:
    """One locked store per suite; if one cannot be had, those already opened are let go."""
    stores: dict[str, Store] = {}
    try:
        for suite in suites:
            stores[suite] = Store(folder / f"{suite}.csv")
    except BaseException:
        for st in stores.values():
            st.close()
        raise
    return stores


VERSION_LIBRARY = {"cudnn_version": "cudnn", "cublas_version": "cublaslt"}  # versions' key -> library


def known_versions(old: dict, libraries: dict[str, dict[str, str]], versions: dict) -> tuple[dict, dict]:
    """`libraries` and `versions` with each version this run left blank (a library it never
    loaded: a convolution-only run opens no cuBLASLt) taken from the folder's earlier
    device.json where that named the same library file; a version this run read always wins."""
    was = old.get("libraries", {})

    def same_file(kind: str) -> bool:
        return kind in libraries and was.get(kind, {}).get("path") == libraries[kind]["path"]

    libraries = {
        kind: {**row, "version": row["version"] or (was[kind].get("version", "") if same_file(kind) else "")}
        for kind, row in libraries.items()
    }
    versions = {
        k: v or (old.get("versions", {}).get(k, "") if same_file(VERSION_LIBRARY.get(k, "")) else "")
        for k, v in versions.items()
    }
    return libraries, versions


def write_device(folder: Path, env: Env, plan: Plan, opts: Options) -> None:
    """device.json of the store: the GPU, libraries and plan its rows were measured with."""
    path = folder / "device.json"
    try:
        old = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        old = {}  # a torn or foreign file: this run's own record replaces it
    libraries, versions = known_versions(old if isinstance(old, dict) else {}, library_table(env), env.versions)
    write_json(
        path,
        {
            "device": env.device.to_dict(),
            "versions": versions,
            "backend": env.backend.name,
            "libraries": libraries,
            "sm_clock_mhz_at_start": env.sm_clock_mhz(),
            "plan": plan.summary().splitlines(),
            "options": {k: str(v) for k, v in vars(opts).items()},
            "notes": env.notes,
            "written_at": utc_now(),
        },
    )


def disk_full(folder: Path, measured: int, rows: int) -> str:
    """One sentence for a collect the disk stopped: what is safely stored, and that a rerun resumes."""
    return (
        f"the disk is full: {measured} configurations ({rows} rows) measured by this run are safely in "
        f"{folder}, beside those stored before (every stored configuration is fsynced; a torn last one "
        "is set aside on the next start); free space and rerun the same command to resume"
    )


def unnamed(rows: list[dict]) -> bool:
    """A configuration whose successful calls all came back without a kernel name."""
    ok = [r for r in rows if r.get("status") == "ok"]
    return bool(ok) and not any(str(r.get("kernel") or "").strip() for r in ok)


def run(opts: Options, env: Env, log: Callable[[str], None] | None = None, watch: Watch | None = None) -> RunResult:
    """Measure the plan on an open environment, appending to data/<gpu-slug>/<suite>.csv;
    `watch` (if given) hears a Tick at the start and after every stored configuration."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    spec = device_spec(env.device)
    plan = plan_for(opts, spec=spec)
    if env.torch_ops is None and any(isinstance(i.config, TORCH_CONFIGS) for i in plan.items):
        # open_env's note says why (no PyTorch with CUDA): the other suites go on without it
        plan = replace(plan, items=[i for i in plan.items if not isinstance(i.config, TORCH_CONFIGS)])
    folder = Path(opts.out) / gpus.slug_for(env.device.name)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        stores = open_stores(folder, dict.fromkeys(i.suite for i in plan.items))  # locks first: a
        # second run into the folder is refused before it writes anything, device.json included
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFull(disk_full(folder, 0, 0)) from None
        raise
    try:
        write_device(folder, env, plan, opts)
    except OSError as exc:
        for st in stores.values():
            st.close()
        if is_disk_full(exc):
            raise DiskFull(disk_full(folder, 0, 0)) from None
        raise
    for note in env.notes:
        log(f"note: {note}")
    for st in stores.values():
        st.redo(calls_to_redo(st.path, opts.redo))
    cost = cost_for(opts, spec)
    todo = [
        only_calls(i, stores[i.suite].calls_of(i.key), cost) for i in plan.items if not stores[i.suite].is_done(i.key)
    ]
    # what the stored data leave uncovered first; with --interleave each part in turns by suite
    # share: a run stopped early spread its time
    todo = measure_order(todo, [k for st in stores.values() for k in st.done], interleaved=opts.interleave)
    todo.sort(key=lambda i: i.key not in stores[i.suite].again)  # known-wrong data before new configurations
    redone = sum(i.key in stores[i.suite].again for i in todo)
    skipped = len(plan.items) - len(todo)
    log(
        f"{env.device.name} (cc {env.device.cc}, {env.device.sms} SMs), backend {env.backend.name}, "
        f"cuDNN {env.versions.get('cudnn_version') or '-'}, cuBLASLt {env.versions.get('cublas_version') or '-'}, "
        f"driver {env.versions.get('driver_version')}"
    )
    log(plan.summary())
    if skipped:
        log(f"{skipped} configurations are already in {folder} and are skipped")
    if redone:
        partial = sum(i.calls is not None for i in todo)
        cost_s = sum(i.est_s for i in todo if i.key in stores[i.suite].again)
        log(
            f"{redone} stored configurations are measured again first (--redo {','.join(opts.redo)}), "
            f"{partial} of them only in the calls that were wrong: about {cost_s:.0f} GPU seconds"
        )
    limits = [s for s in (opts.budget.seconds, opts.stop_after) if s is not None]
    began = opts.started if opts.started is not None else time.monotonic()
    deadline = began + min(limits) if limits else None
    by_stop = opts.stop_after is not None and (opts.budget.seconds is None or opts.stop_after < opts.budget.seconds)
    est_todo = sum(i.est_s for i in todo)
    prog = Progress(len(todo), est_todo, deadline, enabled=opts.progress)
    measured, interrupted, rows_stored, est_done = 0, False, 0, 0.0
    full = False  # the disk filled: what was stored before is safe (each block is fsynced)
    tell = watch or (lambda tick: None)
    tell(Tick(0, len(todo), skipped, 0, 0.0, est_todo))
    try:
        for item in todo:
            t0 = time.monotonic()
            if deadline is not None and t0 + item.est_s > deadline:
                # one that would not end in time is left for the next run (a smaller one may still fit)
                if t0 > deadline:
                    break
                continue
            rows = measure(env, item, opts)
            wall = time.monotonic() - t0
            for r in rows:
                r["wall_s"] = round(wall, 4)
            stores[item.suite].append(rows)
            measured, rows_stored, est_done = measured + 1, rows_stored + len(rows), est_done + item.est_s
            prog.update(item.est_s, wall, item.config.name or item.config.key())
            tell(Tick(measured, len(todo), skipped, rows_stored, est_done, est_todo))
            if env.tracer is not None and unnamed(rows):
                raise BenchError(
                    f"CUPTI gave no kernel names for {item.config.key()} (or its call launched no "
                    f"kernel): rows without names are useless to seer.fit, so the run stops "
                    f"({measured} configurations are saved "
                    f"in {folder}; --launch-meta none measures without names)"
                )
    except KeyboardInterrupt:
        interrupted = True
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        full = True
    finally:
        prog.close()
        for st in stores.values():
            try:
                st.close()
            except OSError as exc:
                if not is_disk_full(exc):
                    raise
                full = True
    if full:
        raise DiskFull(disk_full(folder, measured, rows_stored))
    left = len(todo) - measured
    dropped = getattr(env.tracer, "dropped", 0)
    if dropped:
        log(
            f"CUPTI dropped {dropped} activity records; the calls they belonged to are recorded without per-kernel rows"
        )
    if interrupted:
        log(f"interrupted: {measured} configurations saved in {folder}; rerun the same command to resume")
    elif left:
        log(f"the time limit is reached: {measured} measured, {left} left; rerun the same command to go on")
    else:
        log(f"done: {measured} configurations measured into {folder}")
    return RunResult(folder, measured, skipped, left, plan, interrupted, stopped_early=bool(left) and by_stop)


def collect(opts: Options, log: Callable[[str], None] | None = None, watch: Watch | None = None) -> RunResult:
    """`python -m cudnn_bench collect`: open the GPU, measure, then the counter pass."""
    need_conv = any(SUITES[s].op in ("conv_fwd", "conv_bwd") for s in opts.suites)
    need_gemm = any(SUITES[s].op == "gemm" for s in opts.suites)
    need_memory = any(SUITES[s].op == "memory" for s in opts.suites)
    env = open_env(opts, need_conv, need_gemm, trace=opts.launch_meta == "cupti", need_memory=need_memory)
    try:
        result = run(opts, env, log, watch)
    finally:
        env.close()
    if result.interrupted:
        return result
    if result.stopped_early and opts.counters != "none":
        (log or print)("the counter pass waits until the timing pass is complete (run the same command again)")
        return result
    if opts.counters != "none":
        try:
            ncu_pass.counters_pass(result.folder, opts, log=log)
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            raise DiskFull(
                f"the disk is full in the counter pass: the {result.measured + result.skipped} configurations of "
                f"the timing pass are safely in {result.folder} (the counters are merged by atomic rewrites, none "
                "half-written); free space and rerun the same command to add the counters"
            ) from None
    return result
