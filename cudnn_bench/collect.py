"""The collection: plan, measure every configuration, append its rows, resume, report.

`collect(opts)` opens the GPU environment (lazily importing everything GPU), plans the
suites within the budget, skips what the record files already hold, and measures the rest
configuration by configuration; each configuration's rows are appended and fsynced before
the next starts, so Ctrl-C or a crash loses at most the one in flight. The measuring
functions take an `Env` whose parts (backend, cuDNN, cuBLASLt, tracer) tests replace by fakes.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

from seer import gpus, occupancy
from seer.errors import UnknownGPUError
from seer.variants import CONV_ALGOS

from . import libs
from . import suites as S
from .cublaslt import COMPUTE_NAMES, CublasLt, GemmProblem, LtAlgo, compute_types
from .cudnn import ConvProblem, Cudnn
from .cupti import KernelRecord, span_ms, split_calls, summarize
from .errors import (BenchError, CudnnError, CublasError, CublasNotSupported, DeviceOutOfMemory, FatalGPUError,
                     LibraryStatusError, NoGPUError, status_of)
from .runtime import Backend, BufferPool, DeviceInfo
from .store import Store, write_json
from .timing import EventPool, Flusher, Timing, TimingOptions, time_call

GiB = 1 << 30


@dataclass
class Options:
    out: Path = Path("data")
    suites: list[str] = field(default_factory=lambda: list(S.RUN_ORDER))
    maths: list[str] = field(default_factory=lambda: ["fma"])
    budget: S.Budget = field(default_factory=lambda: S.Budget(seconds=14 * 60))
    timing: TimingOptions = field(default_factory=TimingOptions)
    backend: str = "auto"
    device: int = 0
    launch_meta: str = "cupti"  # cupti | none
    counters: str = "sample"  # all | sample | none
    counters_budget: S.Budget = field(default_factory=lambda: S.Budget(seconds=3 * 60))
    workspace_limit: int = 8 * GiB
    gemm_algos: int = 8
    algos: tuple[int, ...] = tuple(CONV_ALGOS)
    max_call_ms: float = 250.0
    max_bytes: int = 16 * GiB
    limit: int | None = None
    stop_after: float | None = None  # seconds of wall time for this invocation (resume later)
    shard: S.Shard | None = None  # only this slice of every suite (--shard i/n)
    gpu_for_plan: str = "h100-sxm"  # only for `plan` on a machine without a GPU
    progress: bool = True


@dataclass
class Env:
    """Everything a measurement needs; built by `open_env` on a GPU, or from fakes in tests."""

    backend: Backend
    device: DeviceInfo
    stream: int
    pool: BufferPool
    flusher: Flusher | None
    events: EventPool
    dnn: Cudnn | None = None
    dnn_handle: object = None
    lt: CublasLt | None = None
    lt_handle: object = None
    tracer: object = None  # cupti.CuptiTracer or a fake with take()
    nvml: object = None
    versions: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def sm_clock_mhz(self) -> float:
        if self.nvml is None:
            return math.nan
        try:
            return float(self.nvml.sm_clock_mhz(self.device.pci_bus_id, self.device.ordinal))
        except Exception:  # noqa: BLE001 - a clock reading is never worth a failed config
            return math.nan

    def close(self) -> None:
        for fn in (lambda: self.tracer and self.tracer.close(),
                   lambda: self.dnn_handle is not None and self.dnn.destroy_handle(self.dnn_handle),
                   lambda: self.lt_handle is not None and self.lt.destroy_handle(self.lt_handle),
                   lambda: self.flusher and self.flusher.close(), self.pool.close, self.backend.close):
            try:
                fn()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


SIMULATE = "CUDNN_BENCH_SIMULATE"  # =1: a simulated GPU (cudnn_bench.fakes), to rehearse scripts on a CPU


def simulated_env(trace: bool) -> Env:
    """The fakes' GPU under a name no real GPU has, so its rows never mix with real data."""
    from .fakes import fake_env

    env = fake_env(tracer=trace)
    env.device.name = "Simulated GPU"
    env.notes.append(f"{SIMULATE}=1: a simulated GPU, not a measurement")
    return env


def open_env(opts: Options, need_conv: bool, need_gemm: bool, trace: bool = True) -> Env:
    """The GPU environment: backend, stream, L2 flusher, cuDNN/cuBLASLt handles, CUPTI, NVML.

    Raises NoGPUError / LibraryNotFound / BackendError with one sentence when a part is missing.
    """
    from .runtime import Nvml, open_backend

    if os.environ.get(SIMULATE) == "1":
        return simulated_env(trace and opts.launch_meta == "cupti")
    backend = open_backend(opts.backend, opts.device)
    dev = backend.device_info()
    stream = backend.new_stream()
    env = Env(backend=backend, device=dev, stream=stream, pool=BufferPool(backend), flusher=None,
              events=EventPool(backend))
    env.nvml = Nvml.open()
    env.versions = {"driver_version": dev.driver_version, "cuda_version": "", "cudnn_version": "",
                    "cublas_version": ""}
    try:
        if need_conv:
            env.dnn = Cudnn.load()
            env.versions["cudnn_version"] = env.dnn.version_str()
            env.versions["cuda_version"] = env.dnn.cudart_version_str()
            try:
                env.dnn_handle = env.dnn.create_handle()
            except CudnnError as exc:
                raise NoGPUError(f"cuDNN cannot start on this GPU: {exc}") from None
            env.dnn.set_stream(env.dnn_handle, stream)
        if need_gemm:
            env.lt = CublasLt.load()
            env.versions["cublas_version"] = env.lt.version_str()
            try:
                env.lt_handle = env.lt.create_handle()
            except CublasError as exc:
                raise NoGPUError(f"cuBLASLt cannot start on this GPU: {exc}") from None
        built_for = env.versions["cuda_version"]  # the CUDA version cuDNN was built for
        env.versions["cuda_version"] = built_for or dev.cuda_driver_api
        env.notes += libs.version_notes({"cudnn": env.versions["cudnn_version"],
                                         "cublaslt": env.versions["cublas_version"],
                                         "nvrtc": libs.nvrtc_version() if need_conv else "",
                                         "cuda": built_for})
        env.flusher = Flusher(backend, dev.l2_bytes, stream)
        if trace and opts.launch_meta == "cupti":
            from .cupti import CuptiTracer

            try:
                env.tracer = CuptiTracer.open()
            except (BenchError, OSError, AttributeError) as exc:
                raise BenchError(f"CUPTI cannot trace kernels here ({exc}); without kernel names the "
                                 "rows are useless to seer.fit (--launch-meta none measures anyway)") from None
    except BaseException:
        env.close()
        raise
    return env


# ====================================================================== rows
def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def base_row(env: Env, item: S.PlanItem) -> dict:
    cfg = item.config
    row = {"suite": item.suite, "gpu": env.device.name, "cc": env.device.cc, **cfg.fields(),
           "dtype": S.MATH_DTYPE[item.math], "math": item.math, "config_key": cfg.key(),
           "layer": cfg.name, "backend": env.backend.name, "est_s": round(item.est_s, 4), **env.versions}
    if isinstance(cfg, S.GemmConfig):
        row["layout"] = ""
    return row


HOST_GAP = 0.10  # events longer than the kernels' GPU span by more than this: host-bound


def kernel_rows(kernels: list[KernelRecord], timed: int, calls: int, cc: str, sms: int) -> list[dict] | None:
    """Per-kernel fields of one call from a tracer's records of all its repetitions; every
    row also carries the call's GPU span (`gpu_span_ms`, see cupti.span_ms)."""
    from .counters import _roles

    per_call = split_calls(kernels, calls)
    if not per_call:
        return None
    span = span_ms(per_call, timed)
    summ = summarize(per_call, timed)
    names = [s.record.name for s in summ]
    roles = _roles(names, [s.median_ms for s in summ])
    out = []
    for s, role in zip(summ, roles):
        r = s.record
        row = {"kernel": r.name, "kernels": ";".join(names), "role": role, "kernel_index": s.index,
               "grid_x": r.grid[0], "grid_y": r.grid[1], "grid_z": r.grid[2], "block_x": r.block[0],
               "block_y": r.block[1], "block_z": r.block[2], "blocks": r.blocks,
               "regs_per_thread": r.regs, "smem_static": r.smem_static, "smem_dynamic": r.smem_dynamic,
               "kernel_time_ms": s.median_ms, "kernel_time_source": "cupti", "gpu_span_ms": span}
        if r.cluster is not None:
            row.update(cluster_x=r.cluster[0], cluster_y=r.cluster[1], cluster_z=r.cluster[2])
        try:
            bps = int(occupancy.blocks_per_sm(cc, max(1, r.threads), r.regs, r.smem_static + r.smem_dynamic))
            row.update(blocks_per_sm=bps, model_blocks_per_sm=bps, b_max=bps * sms,
                       waves=int(occupancy.waves(r.blocks, bps * sms)) if bps > 0 else None,
                       occupancy_source="model")
        except Exception:  # noqa: BLE001 - an unknown CC leaves occupancy empty
            pass
        out.append(row)
    return out


def call_rows(base: dict, call: dict, timing: Timing | None, kernels: list[KernelRecord] | None,
              env: Env, status: str = "ok", message: str = "") -> list[dict]:
    """The rows of one call: one per kernel it launched (or one row when unknown or failed)."""
    key = f"{base['config_key']}|{base['math']}|{call['call_suffix']}"
    common = {**base, **{k: v for k, v in call.items() if k != "call_suffix"}, "call_key": key,
              "call_id": S.stable_hash(key), "status": status,
              "message": message or base.get("message", ""),
              "measured_at": _now()}
    if timing is None or status != "ok":
        return [{**common, "role": "main", "kernel_index": 0}]
    common.update(time_ms=timing.median_ms, spread_ms=timing.spread_ms, reps=timing.reps,
                  sm_clock_mhz=env.sm_clock_mhz())
    ks = kernel_rows(kernels, timing.reps, timing.calls, env.device.cc, env.device.sms) if kernels else None
    if not ks:
        return [{**common, "role": "main", "kernel_index": 0}]
    span = ks[0]["gpu_span_ms"]
    common["host_gap"] = bool(span > 0 and timing.median_ms > (1 + HOST_GAP) * span)
    return [{**common, **k} for k in ks]


def _error_fields(exc: BaseException) -> tuple[str, str]:
    return status_of(exc), str(exc)


def _timed(env: Env, fn: Callable[[], None], opts: Options) -> tuple[Timing, list[KernelRecord]]:
    """Time a call; its kernel records, or [] where there is no tracer or CUPTI dropped some
    of them (a partial record list would split into wrong calls)."""
    if env.tracer is None:
        return time_call(env.backend, env.stream, fn, opts.timing, env.flusher, env.events), []
    env.tracer.take()  # drop whatever ran before this call
    dropped = getattr(env.tracer, "dropped", 0)
    timing = time_call(env.backend, env.stream, fn, opts.timing, env.flusher, env.events)
    kernels = env.tracer.take()
    return timing, ([] if getattr(env.tracer, "dropped", 0) > dropped else kernels)


def _after_error(env: Env) -> None:
    """After a failed call: a sticky CUDA error must stop the run (FatalGPUError propagates)."""
    env.backend.synchronize()
    if env.tracer is not None:
        try:
            env.tracer.take()
        except Exception:  # noqa: BLE001
            pass


# ====================================================================== convolution
class _Runner:
    """A measured problem's buffers and descriptors, closed on leaving a `with` block."""

    prob: object

    def close(self) -> None:
        self.prob.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ConvRunner(_Runner):
    """One convolution configuration on the GPU: descriptors, buffers, and a call per algorithm."""

    def __init__(self, env: Env, cfg: S.ConvConfig, math_mode: str):
        self.env, self.cfg, self.math = env, cfg, math_mode
        self.dtype = S.MATH_DTYPE[math_mode]
        self.prob = ConvProblem(env.dnn, batch=cfg.batch, c_in=cfg.c_in, h_in=cfg.h_in, w_in=cfg.w_in,
                                c_out=cfg.c_out, kh=cfg.kh, kw=cfg.kw, stride_h=cfg.stride_h,
                                stride_w=cfg.stride_w, pad_h=cfg.pad_h, pad_w=cfg.pad_w,
                                dil_h=cfg.dil_h, dil_w=cfg.dil_w, groups=cfg.groups, math=math_mode,
                                layout=cfg.layout)
        try:
            n, c, h, w = self.prob.out
            if (n, c, (h, w)) != (cfg.batch, cfg.c_out, cfg.out_hw):
                raise BenchError(f"cuDNN's output shape {self.prob.out} differs from the "
                                 f"configuration's ({cfg.batch}, {cfg.c_out}, {cfg.out_hw})")
            tb = cfg.tensor_bytes(self.dtype)
            self.x = env.pool.get("x", tb["x"], self.dtype)
            self.w = env.pool.get("w", tb["w"], self.dtype)
            self.y = env.pool.get("y", tb["y"])
        except BaseException:
            self.prob.close()
            raise

    def heuristic(self):
        p = self.prob
        return self.env.dnn.heuristic(self.env.dnn_handle, p.x, p.w, p.conv, p.y)

    def workspace(self, algo: int) -> int:
        p = self.prob
        return self.env.dnn.workspace_size(self.env.dnn_handle, p.x, p.w, p.conv, p.y, algo)

    def fn(self, algo: int, ws_ptr: int, ws_bytes: int) -> Callable[[], None]:
        p, dnn, h = self.prob, self.env.dnn, self.env.dnn_handle
        return lambda: dnn.forward(h, p.x, self.x, p.w, self.w, p.conv, algo, ws_ptr, ws_bytes, p.y, self.y)



def measure_conv(env: Env, item: S.PlanItem, opts: Options) -> list[dict]:
    """Every forward algorithm of one configuration, with cuDNN's heuristic ranking."""
    base = base_row(env, item)
    rows: list[dict] = []

    def algo_call(algo: int) -> dict:
        return {"algo": CONV_ALGOS[algo], "call_suffix": CONV_ALGOS[algo]}

    try:
        runner = ConvRunner(env, item.config, item.math)
    except FatalGPUError:
        raise
    except BenchError as exc:
        st, msg = _error_fields(exc)
        for a in opts.algos:
            rows += call_rows(base, algo_call(a), None, None, env, st, msg)
        return rows
    with runner:
        try:
            heur = runner.heuristic()
        except CudnnError as exc:
            heur = []
            base["message"] = f"heuristic: {exc}"
        rank = {p.algo: i for i, p in enumerate(heur)}
        hmath = {p.algo: p.math_type for p in heur}
        pick = next((p.name for p in heur if p.status == 0), "")
        base["heuristic_pick"] = pick
        for a in opts.algos:
            call = algo_call(a)
            call.update(heuristic_rank=rank.get(a), heuristic_math=hmath.get(a))
            try:
                ws = runner.workspace(a)
            except CudnnError as exc:
                rows += call_rows(base, call, None, None, env, *_error_fields(exc))
                continue
            call["workspace_bytes"] = ws
            if ws > opts.workspace_limit:
                rows += call_rows(base, call, None, None, env, "workspace_too_large",
                                  f"needs {ws} bytes, limit {opts.workspace_limit} (--workspace-limit)")
                continue
            try:
                ws_ptr = env.pool.get("ws", ws) if ws else 0
            except DeviceOutOfMemory as exc:
                rows += call_rows(base, call, None, None, env, "out_of_memory", str(exc))
                continue
            try:
                timing, kernels = _timed(env, runner.fn(a, ws_ptr, ws), opts)
            except FatalGPUError:
                raise
            except (LibraryStatusError, DeviceOutOfMemory) as exc:
                _after_error(env)
                rows += call_rows(base, call, None, None, env, *_error_fields(exc))
                continue
            rows += call_rows(base, call, timing, kernels, env)
    return rows


# ====================================================================== GEMM
class GemmRunner(_Runner):
    def __init__(self, env: Env, cfg: S.GemmConfig, math_mode: str, max_workspace: int,
                 compute: int | None = None):
        self.env, self.cfg = env, cfg
        self.dtype = S.MATH_DTYPE[math_mode]
        self.prob = GemmProblem(env.lt, batch=cfg.batch, m=cfg.m, n=cfg.n, k=cfg.k, trans=cfg.trans,
                                math=math_mode, max_workspace=max_workspace, compute=compute)
        try:
            tb = cfg.tensor_bytes(self.dtype)
            self.a = env.pool.get("a", tb["a"], self.dtype)
            self.b = env.pool.get("b", tb["b"], self.dtype)
            self.c = env.pool.get("c", tb["c"])
        except BaseException:
            self.prob.close()
            raise

    def heuristics(self, count: int) -> list[LtAlgo]:
        return self.prob.heuristics(self.env.lt_handle, count)

    def fn(self, algo: LtAlgo, ws_ptr: int) -> Callable[[], None]:
        p, lt, h, s = self.prob, self.env.lt, self.env.lt_handle, self.env.stream
        return lambda: lt.matmul(h, p.op, p.a, self.a, p.b, self.b, p.c, self.c, algo.algo, ws_ptr,
                                 algo.workspace, s)



def lt_fields(a: LtAlgo) -> dict:
    c = a.config
    return {"algo": a.name, "heuristic_rank": a.rank, "workspace_bytes": a.workspace,
            "lt_tile": c.get("tile"), "lt_splitk": c.get("splitk"), "lt_reduction": c.get("reduction"),
            "lt_swizzle": c.get("swizzle"), "lt_custom": c.get("custom"), "lt_stages": c.get("stages"),
            "lt_inner_shape": c.get("inner_shape"), "lt_cluster_shape": c.get("cluster_shape"),
            "lt_waves": a.waves,
            "call_suffix": f"lt{a.rank}:" + ",".join("" if v is None else str(v) for v in a.signature())}


def gemm_runner(env: Env, item: S.PlanItem, opts: Options) -> tuple[GemmRunner, list[LtAlgo]]:
    """A runner and cuBLASLt's algorithms, trying the math family's compute types in order
    (cublaslt.compute_types) until the heuristic offers one; raises the last error, or
    CublasNotSupported where none offers an algorithm."""
    last: BenchError | None = None
    for compute in compute_types(item.math):
        runner = GemmRunner(env, item.config, item.math, opts.workspace_limit, compute)
        try:
            algos = runner.heuristics(opts.gemm_algos)
        except CublasError as exc:
            runner.close()
            last = exc
            continue
        if algos:
            return runner, algos
        runner.close()
    raise last or CublasNotSupported(15, "CUBLAS_STATUS_NOT_SUPPORTED",
                                     "cuBLASLt's heuristic returned no usable algorithm", "cublasLtMatmulAlgoGetHeuristic")


def measure_gemm(env: Env, item: S.PlanItem, opts: Options) -> list[dict]:
    """Up to opts.gemm_algos cuBLASLt heuristic algorithms of one GEMM, each timed."""
    base = base_row(env, item)
    fail = {"algo": "lt:-1", "call_suffix": "heuristic"}
    try:
        runner, algos = gemm_runner(env, item, opts)
    except FatalGPUError:
        raise
    except BenchError as exc:
        return call_rows(base, fail, None, None, env, *_error_fields(exc))
    rows: list[dict] = []
    with runner:
        base["heuristic_pick"] = algos[0].name
        base["compute_type"] = COMPUTE_NAMES.get(runner.prob.compute, str(runner.prob.compute))
        for a in algos:
            call = lt_fields(a)
            try:
                ws_ptr = env.pool.get("ws", a.workspace) if a.workspace else 0
            except DeviceOutOfMemory as exc:
                rows += call_rows(base, call, None, None, env, "out_of_memory", str(exc))
                continue
            try:
                timing, kernels = _timed(env, runner.fn(a, ws_ptr), opts)
            except FatalGPUError:
                raise
            except (LibraryStatusError, DeviceOutOfMemory) as exc:
                _after_error(env)
                rows += call_rows(base, call, None, None, env, *_error_fields(exc))
                continue
            rows += call_rows(base, call, timing, kernels, env)
    return rows


def measure(env: Env, item: S.PlanItem, opts: Options) -> list[dict]:
    if isinstance(item.config, S.ConvConfig):
        return measure_conv(env, item, opts)
    return measure_gemm(env, item, opts)


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
        return (f"[{bar}] {self.done}/{self.n} {100 * frac:5.1f}%  elapsed "
                f"{self.fmt(time.monotonic() - self.t0)}  ETA {self.fmt(self.eta())}  {label}")[:160]

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
def plan_for(opts: Options, device_name: str | None = None, spec: gpus.GPUSpec | None = None) -> S.Plan:
    if spec is None:
        try:
            spec = gpus.lookup(device_name or opts.gpu_for_plan)
        except UnknownGPUError:
            spec = gpus.lookup(opts.gpu_for_plan)
    t = opts.timing
    cost = S.CostModel.for_gpu(spec, warmup=t.warmup, reps=t.reps, min_reps=t.min_reps,
                               target_ms=t.target_ms, slow_ms=t.slow_ms, gemm_algos=opts.gemm_algos)
    return S.make_plan(opts.suites, opts.maths, opts.budget, cost, max_call_ms=opts.max_call_ms,
                       max_bytes=opts.max_bytes, limit=opts.limit, shard=opts.shard)


def device_spec(dev: DeviceInfo) -> gpus.GPUSpec:
    """The GPU's datasheet entry, or one made from what the device reports (peaks guessed)."""
    try:
        return gpus.lookup(dev.name)
    except UnknownGPUError:
        flops = dev.sms * 128 * 2 * dev.max_clock_mhz * 1e6  # 128 FP32 lanes per SM since Ampere
        return gpus.GPUSpec(gpus.slug_for(dev.name), dev.name, dev.cc, dev.sms, flops / 1e12, 1000.0,
                            dev.l2_bytes / 2**20, dev.max_clock_mhz, "device query (peaks guessed)")


@dataclass
class RunResult:
    folder: Path
    measured: int
    skipped: int
    left: int
    plan: S.Plan
    interrupted: bool = False
    stopped_early: bool = False  # --stop-after ended this invocation before the plan did


def library_table(env: Env) -> dict[str, dict[str, str]]:
    """Each GPU library the run loaded: resolved path and version (device.json)."""
    paths = libs.loaded()
    if getattr(env.tracer, "path", ""):
        paths.setdefault("cupti", libs.resolved(env.tracer.path))
    versions = {"cudnn": env.versions.get("cudnn_version", ""), "cublaslt": env.versions.get("cublas_version", ""),
                "nvrtc": libs.nvrtc_version(), "cupti": str(getattr(env.tracer, "version", "") or "")}
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


def unnamed(rows: list[dict]) -> bool:
    """A configuration whose successful calls all came back without a kernel name."""
    ok = [r for r in rows if r.get("status") == "ok"]
    return bool(ok) and not any(str(r.get("kernel") or "").strip() for r in ok)


def run(opts: Options, env: Env, log: Callable[[str], None] | None = None) -> RunResult:
    """Measure the plan on an open environment, appending to data/<gpu-slug>/<suite>.csv."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    spec = device_spec(env.device)
    plan = plan_for(opts, spec=spec)
    folder = Path(opts.out) / gpus.slug_for(env.device.name)
    folder.mkdir(parents=True, exist_ok=True)
    stores = open_stores(folder, dict.fromkeys(i.suite for i in plan.items))  # locks first: a
    # second run into the folder is refused before it writes anything, device.json included
    write_json(folder / "device.json", {
        "device": env.device.to_dict(), "versions": env.versions, "backend": env.backend.name,
        "libraries": library_table(env),
        "sm_clock_mhz_at_start": env.sm_clock_mhz(), "plan": plan.summary().splitlines(),
        "options": {k: str(v) for k, v in vars(opts).items()}, "notes": env.notes, "written_at": _now()})
    for note in env.notes:
        log(f"note: {note}")
    todo = [i for i in plan.items if not stores[i.suite].is_done(i.key)]
    skipped = len(plan.items) - len(todo)
    log(f"{env.device.name} (cc {env.device.cc}, {env.device.sms} SMs), backend {env.backend.name}, "
        f"cuDNN {env.versions.get('cudnn_version') or '-'}, cuBLASLt {env.versions.get('cublas_version') or '-'}, "
        f"driver {env.versions.get('driver_version')}")
    log(plan.summary())
    if skipped:
        log(f"{skipped} configurations are already in {folder} and are skipped")
    limits = [s for s in (opts.budget.seconds, opts.stop_after) if s is not None]
    deadline = time.monotonic() + min(limits) if limits else None
    by_stop = opts.stop_after is not None and (opts.budget.seconds is None or opts.stop_after < opts.budget.seconds)
    prog = Progress(len(todo), sum(i.est_s for i in todo), deadline, enabled=opts.progress)
    measured, interrupted = 0, False
    try:
        for item in todo:
            if deadline is not None and time.monotonic() > deadline:
                break
            t0 = time.monotonic()
            rows = measure(env, item, opts)
            wall = time.monotonic() - t0
            for r in rows:
                r["wall_s"] = round(wall, 4)
            stores[item.suite].append(rows)
            measured += 1
            prog.update(item.est_s, wall, item.config.name or item.config.key())
            if env.tracer is not None and unnamed(rows):
                raise BenchError(f"CUPTI gave no kernel names for {item.config.key()}: rows without names are "
                                 f"useless to seer.fit, so the run stops ({measured} configurations are saved "
                                 f"in {folder}; --launch-meta none measures without names)")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        prog.close()
        for st in stores.values():
            st.close()
    left = len(todo) - measured
    if getattr(env.tracer, "dropped", 0):
        log(f"CUPTI dropped {env.tracer.dropped} activity records; the calls they belonged to are "
            "recorded without per-kernel rows")
    if interrupted:
        log(f"interrupted: {measured} configurations saved in {folder}; rerun the same command to resume")
    elif left:
        log(f"the time limit is reached: {measured} measured, {left} left; rerun the same command to go on")
    else:
        log(f"done: {measured} configurations measured into {folder}")
    return RunResult(folder, measured, skipped, left, plan, interrupted, stopped_early=bool(left) and by_stop)


def collect(opts: Options, log: Callable[[str], None] | None = None) -> RunResult:
    """`python -m cudnn_bench collect`: open the GPU, measure, then the counter pass."""
    need_conv = any(S.SUITES[s].op == "conv_fwd" for s in opts.suites)
    need_gemm = any(S.SUITES[s].op == "gemm" for s in opts.suites)
    env = open_env(opts, need_conv, need_gemm, trace=opts.launch_meta == "cupti")
    try:
        result = run(opts, env, log)
    finally:
        env.close()
    if result.interrupted:
        return result
    if result.stopped_early and opts.counters != "none":
        (log or print)("the counter pass waits until the timing pass is complete (run the same command again)")
        return result
    if opts.counters != "none":
        from .ncu_pass import counters_pass

        counters_pass(result.folder, opts, log=log)
    return result
