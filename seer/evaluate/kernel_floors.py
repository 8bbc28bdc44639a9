"""python -m seer.evaluate --set kernel-floors: memory-bound kernels of real traces, leave one trace out.

For every profiler trace with memory-bound kernels (default: data/*/traces and
../shared/datasets/traces), the kernel-level model (seer.models.kernel_floor) is fitted on the
memory-bound kernels of the OTHER traces only: the trace's GPU takes its own line where another
trace of it remains, else a line moved to it from the other GPUs through its spec (DRAM
bandwidth). Scored per step on the sum of the element-wise kernels (and of every memory-bound
kernel), median over steps, beside the noise: how far the same kernels' sum varies step to step.

`--write` (with --out unset) fits on every trace and NeuSight's calls (the dispatch) and writes
the bundled parameters, seer/models/kernel_floors.json.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from seer.errors import SeerError
from seer.evaluate.metrics import format_table
from seer.evaluate.report import write_out
from seer.models.kernel_floor import BUNDLED, KernelFloors, fit_dispatch, fit_kernel_floors, op_times

ELEMENTWISE_KINDS = ("elementwise",)


def read_kernels(files: list[tuple[Path, Path | None]], log=print) -> pd.DataFrame:
    """The memory-bound kernels of every trace that reads and has some (seer.workload.trace_kernels)."""
    from seer.workload.trace_kernels import memory_kernels

    frames = []
    for path, et in files:
        try:
            k = memory_kernels(path, et)
        except SeerError as exc:
            log(f"  {path.name}: skipped ({exc})")
            continue
        if len(k) and (k["gpu"] != "").all():
            frames.append(k)
    if not frames:
        raise SeerError("no trace with memory-bound kernels on a known GPU")
    return pd.concat(frames, ignore_index=True)


def _steps(t: pd.DataFrame) -> pd.DataFrame:
    """Per step (profiler steps; one pseudo-step where a trace has none): measured and predicted sums."""
    real = t[t["step"] >= 0] if (t["step"] >= 0).any() else t
    return real.groupby("step")[["kernel_ms", "predicted_ms"]].sum()


def leave_one_out(kernels: pd.DataFrame, kinds: tuple[str, ...] = ELEMENTWISE_KINDS) -> pd.DataFrame:
    """One row per trace: fitted on the others only (`fitted_from` says how its GPU's line was
    got), the median over steps of the measured and predicted kernel sums of `kinds` and of every
    memory-bound kernel, their errors, and the step-to-step noise (std / mean of the measured sums)."""
    rows = []
    for trace, test in kernels.groupby("trace", sort=False):
        train = kernels[kernels["trace"] != trace]
        floors = fit_kernel_floors(train, tuple(sorted(set(train["trace"]))))
        gpu = str(test["gpu"].iat[0])
        line = floors.line(gpu)
        test = test.assign(predicted_ms=op_times(test, floors))
        ew = _steps(test[test["kind"].isin(kinds)])
        every = _steps(test)
        m, p = ew["kernel_ms"].median(), ew["predicted_ms"].median()
        rows.append(
            {
                "trace": trace,
                "gpu": gpu,
                "fitted_from": "own GPU, other traces" if line.source == "traces" else "spec (other GPUs)",
                "bw_gbs": line.bw_gbs,
                "floor_us": 1e3 * line.floor_ms,
                "steps": len(ew),
                "measured_ms": m,
                "predicted_ms": p,
                "error": p / m - 1 if m > 0 else np.nan,
                "noise": float(ew["kernel_ms"].std(ddof=0) / ew["kernel_ms"].mean()) if len(ew) > 1 else np.nan,
                "all_measured_ms": every["kernel_ms"].median(),
                "all_error": every["predicted_ms"].median() / every["kernel_ms"].median() - 1,
            }
        )
    return pd.DataFrame(rows)


def write_bundled(kernels: pd.DataFrame, path: Path = BUNDLED) -> KernelFloors:
    """Fit on every trace, the dispatch on NeuSight's memory-bound calls, and write the parameters."""
    from seer.data.records import MEMORY_OPS
    from seer.data.records.neusight import neusight_dir, read_neusight

    floors = fit_kernel_floors(kernels, tuple(sorted(set(kernels["trace"]))))
    ns = neusight_dir()
    if ns is None:
        raise SeerError("no NeuSight data (../shared/datasets/neusight) to fit the dispatch on")
    calls = read_neusight(ns)
    calls = calls[calls["op"].isin(MEMORY_OPS) & (calls["status"] == "ok" if "status" in calls else True)]
    floors = replace(floors, dispatch_ms=fit_dispatch(calls, floors))
    path.write_text(json.dumps(floors.to_dict(), indent=1) + "\n")
    return floors


def run_set_kernel_floors(args) -> int:
    """The CLI of --set kernel-floors."""
    from seer.evaluate.models import default_traces, trace_files

    folders = [args.data] if args.data is not None else default_traces()
    files = [f for d in folders for f in trace_files(Path(d))]
    if not files:
        raise SeerError(f"no profiler traces under {', '.join(map(str, folders)) or 'the default folders'}")
    kernels = read_kernels(files)
    if getattr(args, "write", False):
        floors = write_bundled(kernels)
        print(f"wrote {BUNDLED}: {len(floors.lines)} GPUs' kernel lines, dispatch of {len(floors.dispatch_ms)} GPUs")
    t = leave_one_out(kernels)
    print(
        "Memory-bound kernels of profiler traces, leave one trace out (fitted on the other traces only).\n"
        "Per step, median over steps: element-wise kernels' sum (measured, predicted, error) beside the\n"
        "step-to-step noise of that sum, and every memory-bound kernel's sum (all_*).\n"
    )
    shown = t.round({"bw_gbs": 0, "floor_us": 2, "measured_ms": 3, "predicted_ms": 3, "all_measured_ms": 3})
    print(format_table(shown, percent=("error", "noise", "all_error")))
    within = (t["error"].abs() <= 0.15).sum()
    print(f"\nelement-wise sum within 15% on {within} of {len(t)} traces")
    if args.out:
        write_out(Path(args.out), {"kernel_floors": t.to_dict(orient="records")}, {"kernel_floors": t})
    return 0
