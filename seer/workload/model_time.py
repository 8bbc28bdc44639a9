"""A whole model's time on a GPU: from a torch.fx graph or a PyTorch profiler trace.

`model_time(path, gpu)` reads either input, times every op with the GPU's fits and returns a
per-op table and the totals. A graph (NeuSight's layout) is prologue + num_layer x block +
epilogue on one host/GPU timeline (seer.workload.estimate.timeline). A trace keeps its own timeline: its
runtime calls and host gaps are replayed (seer.workload.replay) once with the measured kernel
times and once with seer's, each op's predicted time shared among its kernels as measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from seer.data.records import data_path
from seer.errors import DataError, SeerError
from seer.hardware import gpus
from seer.hardware.device import Device, resolve
from seer.predict import Fits
from seer.predict import load_or_transfer as load
from seer.predict.kernel_level import KernelFloors
from seer.predict.resolve import provenance
from seer.workload.directions import DIRECTIONS
from seer.workload.estimate import dispatch_for, predict_ops, times_calls, whole_model
from seer.workload.graph import read_graph
from seer.workload.ops import KERNEL_KINDS
from seer.workload.trace_ops import map_calls

if TYPE_CHECKING:
    from seer.workload.kineto import Trace

TRACE_SUFFIXES = (".json", ".json.gz")


@dataclass
class ModelTime:
    """Per-op predictions and whole-model totals (ms) of one graph or trace on one GPU."""

    source: Path
    gpu: str  # the GPU the prediction is for (its fits' name)
    measured_on: str  # the GPU the input was measured on ('' where unknown)
    ops: pd.DataFrame  # name, (traces: site, shapes), kind, count, measured_ms, predicted_ms, extrapolated, why
    totals: dict[str, float] = field(default_factory=dict)
    gpu_note: str = ""  # how a trace's GPU was resolved where seer assumed something (seer.hardware.device)
    notes: list[str] = field(default_factory=list)  # other assumptions the prediction made, one sentence each
    fits: str = ""  # which fits timed it: the GPU's own or transferred ones (seer.predict.resolve.provenance)

    @property
    def directions(self) -> list[str]:
        """The directions the ops run in, in step order (['forward'] for inference)."""
        have = set(self.ops["direction"]) if "direction" in self.ops else {"forward"}
        return [d for d in DIRECTIONS if d in have] + sorted(have - set(DIRECTIONS))

    def by_kind(self) -> pd.DataFrame:
        """Time per op kind (and direction, for a training step) in the whole model (op time x
        count), measured and predicted, and shares."""
        t = self.ops.assign(
            measured=self.ops["measured_ms"].fillna(0) * self.ops["count"],
            predicted=self.ops["predicted_ms"].fillna(0) * self.ops["count"],
            ops=self.ops["count"],
        )
        keys = ["direction", "kind"] if len(self.directions) > 1 else ["kind"]
        t = t[t["kind"] != "dispatch"].groupby(keys)[["ops", "measured", "predicted"]].sum()
        t["measured_share"] = t["measured"] / max(t["measured"].sum(), 1e-12)
        t["predicted_share"] = t["predicted"] / max(t["predicted"].sum(), 1e-12)
        t = t.reset_index()
        if self.ops["measured_ms"].isna().all():  # a captured model: nothing was measured
            t = t.drop(columns=["measured", "measured_share"])
        if len(keys) > 1:
            order = {d: i for i, d in enumerate(self.directions)}
            t = t.assign(_d=t["direction"].map(order)).sort_values(["_d", "predicted"], ascending=[True, False])
            return t.drop(columns="_d").reset_index(drop=True)
        return t.sort_values("predicted", ascending=False).reset_index(drop=True)


def _same_gpu(fits: Fits, name: str) -> bool:
    """Whether the fits are of the GPU `name` (where a measurement is comparable)."""
    try:
        return gpus.lookup(name).slug == fits.gpu.slug
    except SeerError:
        return False


def shapes_text(shapes: list) -> str:
    """An op's tensor arguments as '4096x768 768x2304' (scalars left out): with the site, what
    tells one `addmm` of a trace from another."""
    return " ".join("x".join(map(str, s)) for s in shapes if s)


def is_trace(path: Path) -> bool:
    return any(path.name.endswith(s) for s in TRACE_SUFFIXES)


def model_time(
    path: str | Path,
    gpu: str | None = None,
    *,
    fits: Fits | None = None,
    execution_trace: str | Path | None = None,
    dispatch_ms: float | None = None,
    autotune: bool = False,
    floors: KernelFloors | None = None,
) -> ModelTime:
    """Predict a graph (.csv) or a profiler trace (.json, .json.gz) on `gpu` (default: the GPU it
    was measured on, where seer has fits for it). GEMMs and convolutions run the kernel profiler
    traces saw the framework launch for the nearest shape, or, with `autotune` (and where no trace
    says), the fastest fitted algorithm (column `assumed`, seer.predict.Fits.predict_frame).
    Memory-bound kernels by `floors` (default: the bundled seer.models.kernel_floor fit)."""
    path = data_path(path, "an existing graph (.csv) or profiler trace (.json, .json.gz)")
    if execution_trace is not None:  # checked before the long read of the trace
        data_path(execution_trace, "an existing execution trace file (.json, .json.gz)")
    if is_trace(path):
        return _trace_time(path, gpu, fits, execution_trace, autotune, floors)
    if path.suffix != ".csv":
        raise SeerError(f"{path}: expected a torch.fx graph (.csv) or a profiler trace (.json, .json.gz)")
    if execution_trace is not None:
        raise SeerError(f"{path}: an execution trace gives the shapes of a profiler trace's ops, not a graph's")
    g = read_graph(path)
    fits = fits or load(gpu or g.gpu)
    dispatch_ms = dispatch_for(fits.gpu) if dispatch_ms is None else dispatch_ms
    ops = predict_ops(g.ops, fits, dispatch_ms, floors, autotune=autotune)
    w = whole_model(ops, dispatch_ms, times_calls(fits))
    totals = {"predicted_ms": w.replay_ms, "kernel_sum_ms": w.kernel_sum_ms, "unmodelled_ms": w.unmodelled_ms}
    totals.update({f"predicted_ms_{d}": v for d, v in w.by_direction.items()})
    if g.measured_ms is not None and _same_gpu(fits, g.gpu):
        totals["measured_ms"] = g.measured_ms
        if g.training:
            totals.update({f"measured_ms_{d}": v for d, v in g.measured_by_direction.items()})
    cols = [
        "name",
        "kind",
        "direction",
        "part",
        "count",
        "measured_ms",
        "predicted_ms",
        "predictor",
        "assumed",
        "kernel",
        "extrapolated",
        "why",
    ]
    return ModelTime(path, fits.gpu.name, g.gpu, ops[cols], totals, fits=provenance(fits))


def _trace_time(
    path: Path,
    gpu: str | None,
    fits: Fits | None,
    et: str | Path | None,
    autotune: bool = False,
    floors: KernelFloors | None = None,
) -> ModelTime:
    from seer.workload.kineto import read_trace
    from seer.workload.replay import replay

    trace = read_trace(path, et)
    device = trace.device
    fits, measured_on, note = trace_fits(trace, gpu, fits)
    ops = predict_trace_ops(trace, fits, autotune=autotune, floors=floors)
    timed = ops["kind"].isin(KERNEL_KINDS).to_numpy()
    pred_op = ops["predicted_ms"].to_numpy(float)
    # each kernel gets its op's predicted time in proportion to its measured share of the op
    k = trace.kernels
    ratio = pd.Series(pred_op / np.maximum(ops["measured_ms"].to_numpy(float), 1e-9), index=ops["op"].to_numpy())
    scale = k["op"].map(ratio).fillna(1.0).to_numpy()
    measured = replay(trace)
    predicted = replay(trace, k["dur"].to_numpy(float) * scale / 1e3)
    in_step = ops[ops["step"] >= 0] if (ops["step"] >= 0).any() else ops
    totals = {
        "measured_ms": measured.measured_ms,
        "predicted_ms": predicted.step_ms,
        "replay_measured_ms": measured.step_ms,
        **_step_sums(in_step, timed[in_step.index]),
        "measured_kernel_sum_ms": measured.kernel_ms,
    }
    same = measured_on is not None and measured_on.slug == fits.gpu.slug
    if not same:  # measured on another GPU: not a measurement of this prediction
        for key in [k for k in totals if k.startswith(("measured_", "replay_measured_"))]:
            totals.pop(key)
    # one row per op of one step, not per repetition: of the steps with the usual number of ops (a first
    # iteration that also moves the model or creates the optimizer's state is not typical), the first whose
    # measured time is the median's (a warm-up step's kernels can run 10% slower)
    counts = in_step.groupby("step").size()
    usual = in_step[in_step["step"].isin(counts.index[counts == counts.mode().iloc[0]])]
    sums = usual.groupby("step")["measured_ms"].sum()
    first = in_step[in_step["step"] == (sums - sums.median()).abs().idxmin()]
    cols = ["name", "site", "shapes", "direction", "kind", "count", "measured_ms", "predicted_ms", "predictor",
            "assumed", "kernel", "extrapolated", "why"]  # fmt: skip
    note = note if same else ""  # says how the predicted GPU was found, not one --gpu replaced
    return ModelTime(
        path, fits.gpu.name, device, first[cols].reset_index(drop=True), totals, note, fits=provenance(fits)
    )


def trace_fits(trace: Trace, gpu: str | None, fits: Fits | None) -> tuple[Fits, gpus.GPUSpec | None, str]:
    """The fits a trace is predicted with (`fits`, else `gpu`'s, else those of the GPU it was taken
    on), the spec of that GPU (None where the trace does not say or seer cannot describe it) and
    what was assumed to get it."""
    measured_on, note = _measured_on(Path(trace.path), trace.device_props, must=fits is None and gpu is None)
    if fits is None:
        target = gpu if gpu is not None else measured_on
        assert target is not None  # _measured_on raised where the prediction needs it
        fits = load(target)
    return fits, measured_on, note


def _measured_on(path: Path, props: Device | None, must: bool) -> tuple[gpus.GPUSpec | None, str]:
    """The spec of the GPU a trace was taken on and what was assumed to get it (resolve); where
    it has none, or is not one seer can describe, an error if the prediction needs it (`must`)."""
    if props is None:
        if must:
            raise SeerError(f"{path}: the trace records no deviceProperties, so not its GPU; give one (--gpu)")
        return None, ""
    try:
        spec, note = resolve(props)
    except SeerError as exc:
        if must:
            raise SeerError(f"{path}: {exc}") from None
        return None, ""
    return spec, (f"GPU: {note}" if note else "")


def _step_sums(ops: pd.DataFrame, timed: np.ndarray) -> dict[str, float]:
    """Per step, then the median over steps (ms): seer's kernel time (`kernel_sum_ms`), the measured
    time of the ops it could not time (`unmodelled_ms`) and of host copies kept as measured
    (`host_copy_ms`), and per direction (forward, backward, optimizer, where the trace has it) the
    predicted and measured kernel time (`kernel_sum_ms_backward`, `measured_kernel_sum_ms_backward`)
    and the unmodelled time."""
    host = (ops["kind"] == "host_copy").to_numpy()
    meas = ops["measured_ms"].to_numpy(float)
    t = pd.DataFrame(
        {
            "step": ops["step"].to_numpy(),
            "direction": ops["direction"].to_numpy(object) if "direction" in ops else "forward",
            "predicted": ops["predicted_ms"].to_numpy(float),
            "measured": meas,
            "unmodelled": np.where(timed | host, 0.0, meas),
            "host_copy": np.where(host, meas, 0.0),
        }
    )
    steps = t.groupby("step")[["predicted", "unmodelled", "host_copy"]].sum().median()
    out = {
        "kernel_sum_ms": float(steps["predicted"]),
        "unmodelled_ms": float(steps["unmodelled"]),
        "host_copy_ms": float(steps["host_copy"]),
    }
    per = t.groupby(["step", "direction"])[["predicted", "measured", "unmodelled"]].sum()
    per = per.unstack("direction", fill_value=0.0).median()
    for d in DIRECTIONS:
        if ("predicted", d) in per.index and d in set(t["direction"]):
            out[f"kernel_sum_ms_{d}"] = float(per[("predicted", d)])
            out[f"measured_kernel_sum_ms_{d}"] = float(per[("measured", d)])
            out[f"unmodelled_ms_{d}"] = float(per[("unmodelled", d)])
    return out


def predict_trace_ops(
    trace: Trace, fits: Fits, autotune: bool = False, floors: KernelFloors | None = None
) -> pd.DataFrame:
    """Every op of `trace` that launched GPU work (kineto.kernel_ops: one row per call, every step)
    mapped (classify) and timed (predict_ops): name, site, direction, shapes, kind, config, parts,
    why, count, step, op (its row of trace.ops), measured_ms, predicted_ms, predictor,
    extrapolated, assumed, kernel. An op that launched kernels but maps to no kernel kind (a dispatch
    name that did launch, an unmodelled op) keeps its measured time as predicted_ms. `autotune`: GEMMs
    and convolutions as the fastest fitted algorithm, not the kernel traces saw launched."""
    from seer.workload.kineto import kernel_ops

    kops = kernel_ops(trace)
    if not len(kops):
        raise DataError(
            trace.path, None, None,
            f"GPU kernels launched by cpu ops: none of its {len(trace.kernels)} GPU events is linked to an op "
            "(through its launch's correlation id and an enclosing cpu_op), so there is nothing to predict",
        )  # fmt: skip
    mapped = map_calls(kops)
    shapes = [shapes_text(s) for s in kops["input_shapes"]]
    table = pd.DataFrame(
        {
            "name": kops["name"],
            "site": kops["site"],
            "direction": kops["direction"],
            "shapes": shapes,
            "kind": [m.kind for m in mapped],
            "config": [m.config for m in mapped],
            "parts": [m.parts for m in mapped],
            "why": [m.why for m in mapped],
            "count": 1,
            "step": kops["step"],
            "op": kops["op"],
            "measured_ms": kops["kernel_ms"],
        }
    )
    ops = predict_ops(table, fits, floors=floors, autotune=autotune)
    timed = ops["kind"].isin(KERNEL_KINDS).to_numpy()
    pred_op = np.where(timed, ops["predicted_ms"].to_numpy(float), ops["measured_ms"].to_numpy(float))
    return ops.assign(predicted_ms=pred_op)
