"""Measuring one configuration: every call its runner offers, timed, as record rows.

One loop serves convolutions and GEMMs (runners.py says what differs): a call whose workspace
cannot be had, is too large, or fails is a row with a status instead of a time; a sticky CUDA
error (FatalGPUError) stops the run. A timed call gets one row per kernel it launched, from
the tracer's records of its repetitions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .configs import GemmConfig
from .counters import kernel_roles, launch_geometry, model_occupancy
from .cupti import KernelRecord, KernelSummary, busy, span_ms, split_calls, summarize
from .env import Env
from .errors import BenchError, DeviceOutOfMemory, FatalGPUError, LibraryStatusError, status_of
from .maths import MATH_DTYPE
from .options import Options
from .plan import PlanItem, stable_hash
from .runners import Call, open_runner, unopened_calls
from .store import utc_now
from .timing import Timing, time_call

HOST_GAP = 0.10  # events longer than the kernels' GPU span by more than this: host-bound
MAX_KERNEL_ROWS = 16  # a call launching more kernels gets one row per distinct launch (merge_repeats)


# ====================================================================== rows
@dataclass(frozen=True)
class Traced:
    """A traced call's kernels: one list per timed repetition, or none and why."""

    per_call: list[list[KernelRecord]] | None
    note: str = ""


def base_row(env: Env, item: PlanItem) -> dict:
    cfg = item.config
    row = {
        "suite": item.suite,
        "gpu": env.device.name,
        "cc": env.device.cc,
        **cfg.fields(),
        "dtype": MATH_DTYPE[item.math],
        "math": item.math,
        "config_key": cfg.key(),
        "layer": cfg.name,
        "backend": env.backend.name,
        "est_s": round(item.est_s, 4),
        **env.versions,
    }
    if isinstance(cfg, GemmConfig):
        row["layout"] = ""
    return row


def merge_repeats(summ: list[KernelSummary]) -> list[tuple[KernelSummary, int]]:
    """One entry per distinct launch (name, geometry, resources), first-seen order, with its
    launch count and its launches' median times summed: cuDNN runs some algorithms on grouped
    convolutions as one loop per group (thousands of launches), and a row per launch would
    make the data quadratic in the groups (each row names the call's kernels)."""
    merged: dict[tuple, tuple[KernelSummary, int]] = {}
    for s in summ:
        r = s.record
        sig = (r.name, r.grid, r.block, r.regs, r.smem_static, r.smem_dynamic)
        first, n = merged.get(sig, (s, 0))
        total = first.median_ms + s.median_ms if n else s.median_ms
        merged[sig] = (KernelSummary(first.index, first.record, total), n + 1)
    return list(merged.values())


def kernel_rows(per_call: list[list[KernelRecord]], cc: str, sms: int) -> list[dict]:
    """Per-kernel fields of one call from its timed repetitions' kernels (cupti.split_calls);
    every row also carries the call's GPU span (`gpu_span_ms`, see cupti.span_ms) and the time
    its kernels ran within it with the idle gaps between them (`gpu_busy_ms`, `gpu_gaps`,
    cupti.busy). A call of
    more than MAX_KERNEL_ROWS launches gets a row per distinct launch (`launches` > 1 where merged)."""
    timed = len(per_call)
    span = span_ms(per_call, timed)
    ran, gaps = busy(per_call, timed)
    summ = summarize(per_call, timed)
    runs = merge_repeats(summ) if len(summ) > MAX_KERNEL_ROWS else [(s, 1) for s in summ]
    names = [s.record.name for s, _ in runs]
    roles = kernel_roles(names, [s.median_ms for s, _ in runs])
    out = []
    for (s, launches), role in zip(runs, roles):
        r = s.record
        row = {
            "kernel": r.name,
            "kernels": ";".join(names),
            "launches": launches,
            "role": role,
            "kernel_index": s.index,
            **launch_geometry(r.grid, r.block),
            "regs_per_thread": r.regs,
            "smem_static": r.smem_static,
            "smem_dynamic": r.smem_dynamic,
            "kernel_time_ms": s.median_ms,
            "kernel_time_source": "cupti",
            "gpu_span_ms": span,
            "gpu_busy_ms": ran,
            "gpu_gaps": gaps,
        }
        if r.cluster is not None:
            row.update(cluster_x=r.cluster[0], cluster_y=r.cluster[1], cluster_z=r.cluster[2])
        row.update(model_occupancy(cc, max(1, r.threads), r.regs, r.smem_static + r.smem_dynamic, r.blocks, sms))
        out.append(row)
    return out


def call_rows(
    base: dict,
    call: dict,
    timing: Timing | None,
    traced: Traced | None,
    env: Env,
    status: str = "ok",
    message: str = "",
) -> list[dict]:
    """The rows of one call: one per kernel it launched (or one row when unknown or failed);
    a timed call without kernel rows says why in `message` where the tracer knows."""
    key = f"{base['config_key']}|{base['math']}|{call['call_suffix']}"
    common = {
        **base,
        **{k: v for k, v in call.items() if k != "call_suffix"},
        "call_key": key,
        "call_id": stable_hash(key),
        "status": status,
        "message": message or base.get("message", ""),
        "measured_at": utc_now(),
    }
    if timing is None or status != "ok":
        return [{**common, "role": "main", "kernel_index": 0}]
    common.update(
        time_ms=timing.median_ms, spread_ms=timing.spread_ms, reps=timing.reps, sm_clock_mhz=env.sm_clock_mhz()
    )
    if traced is None or not traced.per_call:
        note = traced.note if traced is not None else ""
        return [{**common, "message": common["message"] or note, "role": "main", "kernel_index": 0}]
    ks = kernel_rows(traced.per_call, env.device.cc, env.device.sms)
    span = ks[0]["gpu_span_ms"]
    common["host_gap"] = bool(span > 0 and timing.median_ms > (1 + HOST_GAP) * span)
    return [{**common, **k} for k in ks]


def failed_rows(base: dict, call: dict, env: Env, exc: BaseException) -> list[dict]:
    """The row of a call that could not run, with the status and message the error stands for."""
    return call_rows(base, call, None, None, env, status_of(exc), str(exc))


# ====================================================================== timing a call
def timed(env: Env, fn: Callable[[], None], opts: Options) -> tuple[Timing, Traced | None]:
    """Time a call and split its timed repetitions' kernel records into calls (None: no tracer).

    The tracer takes each warm-up call's kernels apart (the device is idle after each), so the
    one-off set-up kernels of a first call never mix with the timed calls' and these split
    evenly. No kernels where CUPTI dropped some: a partial list splits wrongly."""
    tracer = env.tracer
    if tracer is None:
        return time_call(env.backend, env.stream, fn, opts.timing, env.flusher, env.events), None
    tracer.take()  # drop whatever ran before this call
    dropped = getattr(tracer, "dropped", 0)
    warm: list[list[KernelRecord]] = []
    timing = time_call(
        env.backend, env.stream, fn, opts.timing, env.flusher, env.events, warmed=lambda: warm.append(tracer.take())
    )
    kernels = tracer.take()
    if getattr(tracer, "dropped", 0) > dropped:
        return timing, Traced(None, "CUPTI dropped kernel records of this call")
    per_call = split_calls(kernels, timing.reps)
    if per_call is None and kernels:
        alone = f" (the last warm-up call alone: {len(warm[-1])})" if warm else ""
        note = f"CUPTI: {len(kernels)} kernel records of {timing.reps} timed calls{alone} split into no equal calls"
        return timing, Traced(None, note)
    return timing, Traced(per_call)


def after_error(env: Env) -> None:
    """After a failed call: a sticky CUDA error must stop the run (FatalGPUError propagates)."""
    env.backend.synchronize()
    if env.tracer is not None:
        try:
            env.tracer.take()
        except Exception:  # the tracer's state after a failure does not matter
            pass


def measure_call(env: Env, base: dict, call: Call, opts: Options) -> list[dict]:
    """One call's rows: timed, or one row whose status says why it was not."""
    try:
        ws = call.workspace()
    except LibraryStatusError as exc:
        return failed_rows(base, call.fields, env, exc)
    fields = {**call.fields, "workspace_bytes": ws}
    if ws > opts.workspace_limit:
        return call_rows(
            base,
            fields,
            None,
            None,
            env,
            "workspace_too_large",
            f"needs {ws} bytes, limit {opts.workspace_limit} (--workspace-limit)",
        )
    try:
        ws_ptr = env.pool.get("ws", ws) if ws else 0
    except DeviceOutOfMemory as exc:
        return call_rows(base, fields, None, None, env, "out_of_memory", str(exc))
    try:
        timing, traced = timed(env, call.make(ws_ptr, ws), opts)
    except FatalGPUError:
        raise
    except (LibraryStatusError, DeviceOutOfMemory) as exc:
        after_error(env)
        return failed_rows(base, fields, env, exc)
    return call_rows(base, fields, timing, traced, env)


# ====================================================================== one configuration
def measure(env: Env, item: PlanItem, opts: Options) -> list[dict]:
    """Every call of one configuration (each conv algorithm, or cuBLASLt's heuristic
    algorithms of a GEMM), each timed, with the library's own ranking; of a configuration
    measured again, only the calls asked for (`item.calls`)."""

    def asked(fields: dict) -> bool:
        return item.calls is None or fields["algo"] in item.calls

    base = base_row(env, item)
    try:
        runner = open_runner(env, item, opts)
    except FatalGPUError:
        raise
    except BenchError as exc:
        calls = [c for c in unopened_calls(item, opts) if asked(c)]
        return [row for call in calls for row in failed_rows(base, call, env, exc)]
    rows: list[dict] = []
    with runner:
        base.update(runner.shared())
        for call in runner.calls(opts):
            if asked(call.fields):
                rows += measure_call(env, base, call, opts)
    return rows
