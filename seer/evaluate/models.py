"""python -m seer.evaluate --set models: whole-model and per-node time against measurements.

For every graph (NeuSight's `<GPU>/<model>.csv` + `.json` layout): the ops are timed by that
GPU's fits, the whole model is prologue + num_layer x block + epilogue through the host/GPU
timeline (seer.workload.estimate), and both are compared with what was measured. Where
NeuSight's own predictions of the same graphs lie beside the data (`neusight-predictions/`),
they are scored on the same nodes: the bar to beat.

The host time of an op (the framework's dispatch) is the GPU's fitted dispatch
(seer.models.kernel_floor: NeuSight's call times less the kernel-level time of the same kernels,
which never includes the graphs' whole-model times); for a GPU without one, the median measured
latency of the shape-only nodes of the OTHER graphs of the same GPU. Memory-bound nodes are timed
at kernel level on the timeline; per node, measured as whole calls, they are scored by the fits'
time of a call (dispatch + kernel where the fits have none).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import paths, records
from seer.errors import DataError, SeerError
from seer.evaluate.metrics import ACCURACY_KEYS, accuracy, accuracy_table, format_table
from seer.evaluate.report import write_out
from seer.hardware import gpus
from seer.predict.kernel_level import KernelFloors, bundled
from seer.predict.resolve import provenance
from seer.workload.estimate import dispatch_for, predict_ops, times_calls, whole_model
from seer.workload.graph import Graph, graph_files, read_graph
from seer.workload.ops import KERNEL_KINDS

TRACE_TOTALS = (
    "measured_ms", "replay_measured_ms", "predicted_ms", "measured_kernel_sum_ms", "kernel_sum_ms", "unmodelled_ms",
)  # fmt: skip
KERNEL_NODE_MS = 0.05  # a node "launches a kernel" in NeuSight's count when measured above this


def default_graphs() -> Path:
    """NeuSight's model graphs beside its kernel data (../shared/datasets/neusight-models)."""
    ns = records.neusight_dir()
    path = ns.parent / "neusight-models" if ns is not None else None
    if path is None or not path.is_dir():
        raise SeerError("no model graphs: ../shared/datasets/neusight-models was not found (pass --data DIR)")
    return path


def dispatch_by_graph(
    graphs: list[Graph], floors: KernelFloors | None = None, own_gpu: bool = True
) -> dict[Path, float]:
    """Host time per op for each graph: the GPU's dispatch fitted on NeuSight's calls (a call's
    time less the kernel-level time of its kernel, seer.models.kernel_floor; `floors`, default the
    bundled ones); for a GPU without one, the median measured latency of the shape-only nodes of
    the other graphs of its GPU where `own_gpu` allows it, else the fitted GPUs' median
    (workload.estimate.dispatch_for)."""
    fitted = (bundled() if floors is None else floors).dispatch_ms
    out = {}
    for g in graphs:
        spec = gpus.lookup(g.gpu)
        out[g.source] = dispatch_for(spec, floors)
        if own_gpu and spec.slug not in fitted:  # its other graphs measure it
            others = [
                h.ops.loc[(h.ops["kind"] == "dispatch") & (h.ops["measured_ms"] > 0), "measured_ms"]
                for h in graphs
                if h.gpu == g.gpu and h.source != g.source
            ]
            vals = pd.concat(others) if others else pd.Series(dtype=float)
            out[g.source] = float(vals.median()) if len(vals) else out[g.source]
    return out


NEUSIGHT_COLUMNS = {"forward": "fw_latency", "backward": "bw_latency", "accumulate": "acc_latency"}


def _neusight_file(source: Path) -> Path:
    """Where NeuSight's predictions of a graph lie: `predictions/<GPU>/` beside its GPU folder
    (neusight-train's layout), else `neusight-predictions/<GPU>/` beside its data set."""
    beside = source.parent.parent / "predictions" / source.parent.name / source.name
    return (
        beside
        if beside.exists()
        else source.parent.parent.parent / "neusight-predictions" / source.parent.name / source.name
    )


def _neusight(source: Path) -> tuple[pd.DataFrame | None, dict[str, float]]:
    """NeuSight's per-node predictions of a graph (index Name; a column per direction it gives:
    forward, backward, accumulate) and its whole-model ones (e2e, and forward and backward of a
    training step), where they lie beside it (read through seer's one opener and checked: a bad
    file is a DataError, not a wrong comparison)."""
    base = _neusight_file(source)
    if not base.exists():
        return None, {}
    file = str(base)
    try:
        raw = pd.read_csv(io.BytesIO(records.read_bytes(base, "NeuSight's per-node predictions (CSV)")))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(file, None, None, f"a readable CSV file ({exc})".replace("\n", " ")) from None
    for col in ("Name", "fw_latency"):
        if col not in raw:
            raise DataError(file, None, col, f"a column named '{col}' (NeuSight's predictions)")
    lines = np.arange(len(raw)) + 2
    names = raw["Name"].astype(str)
    if (dup := np.flatnonzero(names.duplicated().to_numpy())).size:
        raise DataError(file, int(lines[dup[0]]), "Name", "each node once", names.iat[dup[0]], where="line")
    nodes = pd.DataFrame(index=names.to_numpy())
    for direction, col in NEUSIGHT_COLUMNS.items():
        if col in raw:  # a bad value quoted as written, not as numpy spells it
            times = records.numeric(
                raw[col].astype(object), file, col, lines, minimum=0, expected="a predicted time in ms"
            )
            nodes[direction] = times.to_numpy(float)
    meta = base.with_suffix(".json")
    whole: dict[str, float] = {}
    if meta.exists():
        doc = records.read_json(meta, "NeuSight's whole-model prediction (JSON with e2e_latency)")
        for key, name in (("e2e_latency", "e2e"), ("fw_latency", "forward"), ("bwall_latency", "backward")):
            v = doc.get(key) if isinstance(doc, dict) else None
            if v is None:
                continue
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v >= 0
            if not ok or (key == "e2e_latency" and v <= 0):
                raise DataError(str(meta), None, key, "a predicted time in ms (> 0 for the whole model)", v)
            whole[name] = float(v)
    return nodes, whole


def _read_all(files: list[Path], log) -> tuple[list[Graph], list[tuple[Path, str]]]:
    """The graphs that read, and (file, reason) for each that did not: one bad file never stops
    an evaluation over a folder."""
    graphs, skipped = [], []
    for f in files:
        try:
            graphs.append(read_graph(f))
        except SeerError as exc:
            skipped.append((f, str(exc)))
            log(f"  skipped {f}: {exc}")
    return graphs, skipped


def evaluate_graphs(
    files: list[Path], fits_for_gpu, log=print, floors: KernelFloors | None = None, own_gpu: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(models, nodes): one row per graph and one per node (and direction, for a training step)
    that launches a kernel. Files that do not read are left out with their reason (log), and
    listed in `models.attrs["skipped"]`. `floors` (default the bundled kernel floors) and
    `own_gpu` (whether a graph's GPU's other graphs may give its dispatch): dispatch_by_graph."""
    graphs, skipped = _read_all(files, log)
    if not graphs:
        raise SeerError(f"none of the {len(files)} graphs could be read; the first: {skipped[0][1]}")
    dispatch = dispatch_by_graph(graphs, floors, own_gpu)
    models, nodes = [], []
    for g in graphs:
        fits = fits_for_gpu(g.gpu)
        ops = predict_ops(g.ops, fits, dispatch[g.source], floors)
        w = whole_model(ops, dispatch[g.source], times_calls(fits))
        ns_nodes, ns_whole = _neusight(g.source)
        measured_kernel = (ops["measured_ms"].fillna(0) * ops["count"])[ops["kind"] != "dispatch"].sum()
        row = {
            "source": str(g.source),
            "gpu": g.gpu,
            "model": g.model,
            "step": "training" if g.training else "inference",
            "num_layer": g.num_layer,
            "measured_ms": g.measured_ms,
            "predicted_ms": w.replay_ms,
            "kernel_sum_ms": w.kernel_sum_ms,
            "unmodelled_share": w.unmodelled_ms / measured_kernel if measured_kernel else 0.0,
            "dispatch_ms": w.dispatch_ms,
            "neusight_ms": ns_whole.get("e2e"),
            "fits": provenance(fits),
        }
        if g.training:
            for d in ("forward", "backward"):
                row[f"measured_{d}_ms"] = g.measured_by_direction.get(d)
                row[f"predicted_{d}_ms"] = w.by_direction.get(d)
                row[f"neusight_{d}_ms"] = ns_whole.get(d)
        models.append(row)
        k = ops[ops["kind"].isin([*KERNEL_KINDS, "unmodelled"])]
        rows = k[["source", "name", "kind", "direction", "part", "count", "measured_ms", "predicted_ms"]].assign(
            gpu=g.gpu, model=g.model
        )
        if times_calls(fits) and "call_ms" in k:  # a node measured as a whole call: the fits' call time
            call = k["call_ms"].to_numpy(dtype=float)
            whole = np.where(np.isfinite(call), call, k["predicted_ms"].to_numpy(dtype=float) + dispatch[g.source])
            rows = rows.assign(
                predicted_ms=np.where(k["kernel_level"].to_numpy(dtype=bool), whole, rows["predicted_ms"])
            )
        if ns_nodes is not None:
            ns = ns_nodes.stack()  # (Name, direction) -> NeuSight's time
            rows = rows.assign(neusight_ms=[ns.get((n, d), np.nan) for n, d in zip(rows["name"], rows["direction"])])
        nodes.append(rows)
        log(
            f"  {g.gpu:24s} {g.model:26s} measured {g.measured_ms or float('nan'):9.1f} ms"
            f"  predicted {w.replay_ms:9.1f} ms"
        )
    m = pd.DataFrame(models)
    m["ape"] = (m["predicted_ms"] - m["measured_ms"]).abs() / m["measured_ms"]
    m["neusight_ape"] = (m["neusight_ms"] - m["measured_ms"]).abs() / m["measured_ms"]
    m.attrs["skipped"] = [(str(f), why) for f, why in skipped]
    n = pd.concat(nodes, ignore_index=True)
    if "neusight_ms" not in n:
        n["neusight_ms"] = np.nan
    n["ape"] = (n["predicted_ms"] - n["measured_ms"]).abs() / n["measured_ms"]
    return m, n


def node_tables(nodes: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per-node accuracy of seer and (same nodes) NeuSight, by GPU and kind and overall, over the
    nodes measured above KERNEL_NODE_MS that both predicted."""
    k = nodes[(nodes["measured_ms"] > KERNEL_NODE_MS) & nodes["predicted_ms"].notna()]
    both = k[k["neusight_ms"].notna()] if k["neusight_ms"].notna().any() else k
    keys = ["gpu", "direction", "kind"] if k["direction"].nunique() > 1 else ["gpu", "kind"]
    out = {"nodes_seer": accuracy_table(k, "predicted_ms", "measured_ms", keys)}
    if k["neusight_ms"].notna().any():
        out["nodes_neusight"] = accuracy_table(both, "neusight_ms", "measured_ms", keys)
        if k["direction"].nunique() > 1:  # a training step: each direction, seer and NeuSight on the same nodes
            seer = accuracy_table(both, "predicted_ms", "measured_ms", ["gpu", "direction"])
            ns = accuracy_table(both, "neusight_ms", "measured_ms", ["gpu", "direction"])
            out["nodes_by_direction"] = seer[["gpu", "direction", "n", "median_ape", "mape"]].assign(
                neusight_median_ape=ns["median_ape"].to_numpy(), neusight_mape=ns["mape"].to_numpy()
            )
    return out


def share_by_kind(nodes: pd.DataFrame, models: pd.DataFrame, by: str = "kind") -> pd.DataFrame:
    """Whole-model time per (graph, kind) (or per `by`: direction): measured and predicted node
    time x repeats, in a column named `kind`."""
    t = nodes.assign(
        measured=nodes["measured_ms"].fillna(0) * nodes["count"],
        predicted=nodes["predicted_ms"].fillna(nodes["measured_ms"]).fillna(0) * nodes["count"],
    )
    out = t.groupby(["source", by], sort=False)[["measured", "predicted"]].sum().reset_index()
    return out.rename(columns={by: "kind"})


def plot_models(models: pd.DataFrame, nodes: pd.DataFrame, folder: Path) -> list[Path]:
    """The whole-model plot (seer.evaluate.plots.models_figure) of these models and nodes: stacked
    by op kind, and training steps (if any) by direction in a second figure."""
    from seer.evaluate.plots import models_figure, save

    shares = share_by_kind(nodes, models)
    kinds = [k for k in (*KERNEL_KINDS, "unmodelled") if k in set(shares["kind"])]
    out = [save(models_figure(models, shares, kinds), folder / "models_by_kind.png")]
    steps = models[models["step"] == "training"]
    if len(steps):
        train = nodes[nodes["source"].isin(steps["source"])]
        by_dir = share_by_kind(train, steps, by="direction")
        directions = [d for d in ("forward", "backward", "accumulate", "optimizer") if d in set(by_dir["kind"])]
        out.append(save(models_figure(steps, by_dir, directions, "direction"), folder / "training_by_direction.png"))
    return out


def _records(df: pd.DataFrame, cols: list[str]) -> list[dict]:
    """JSON rows: NaN as null."""
    sub = df[[c for c in cols if c in df]].astype(object)
    return sub.where(sub.notna(), None).to_dict(orient="records")


def by_gpu(models: pd.DataFrame) -> dict[str, list[dict]]:
    """Whole-model accuracy per GPU and overall (gpu "overall"), seer's and (on the graphs it
    predicted) NeuSight's, for the JSON (python -m seer's headline reads it)."""
    cols = ["gpu", *ACCURACY_KEYS]
    out = {"by_gpu": _records(accuracy_table(models, "predicted_ms", "measured_ms", "gpu"), cols)}
    ns = models[models["neusight_ms"].notna()]
    if len(ns):
        out["neusight_by_gpu"] = _records(accuracy_table(ns, "neusight_ms", "measured_ms", "gpu"), cols)
    return out


def run_set_models(args, fits_for_gpu) -> int:
    """The CLI of --set models (args: data, out, plots, gpu)."""
    folder = args.data if args.data is not None else default_graphs()
    files = graph_files(folder)
    if args.gpu:  # the folder names the GPU (NeuSight's layout): by slug as records are, or a part of the name
        want = gpus.slug_for(args.gpu)
        names = {f.parent.name.replace("_", " ") for f in files}
        keep = {n for n in names if gpus.slug_for(n) == want or args.gpu.lower() in n.lower()}
        files = [f for f in files if f.parent.name.replace("_", " ") in keep]
        if not files:
            raise SeerError(f"no graphs of GPU {args.gpu!r} under {folder}")
    print(f"Whole models under {folder}: {len(files)} graphs, each timed by the fits --fits gives for its GPU.\n")
    models, nodes = evaluate_graphs(files, fits_for_gpu, log=lambda _line: None)  # the table below shows them
    print("Fits per GPU (own, else transferred from the other GPUs' fits):")
    for gpu, said in models.groupby("gpu", sort=True)["fits"].first().items():
        print(f"  {gpu}: {said}")
    overall = accuracy(models["predicted_ms"], models["measured_ms"])
    shown = models.assign(gpu=models["gpu"].str.replace("NVIDIA ", "").str.replace("Tesla ", ""))
    training = (models["step"] == "training").any()
    cols = ["gpu", "model", *(["step"] if training else []), "measured_ms", "predicted_ms", "ape"] + (
        ["neusight_ape"] if shown["neusight_ms"].notna().any() else []
    )
    what = "a training step: forward, then backward and gradient accumulation" if training else ""
    print(f"\nWhole model (prologue + num_layer x block + epilogue{'; ' + what if what else ''}):\n")
    print(format_table(shown.round({"measured_ms": 1, "predicted_ms": 1})[cols], percent=("ape", "neusight_ape")))
    print(
        f"\nover {len(models)} models: mean APE {100 * overall['mape']:.1f}%, median {100 * overall['median_ape']:.1f}%"
    )
    if models["neusight_ms"].notna().any():
        ns = accuracy(models["neusight_ms"].dropna(), models.loc[models["neusight_ms"].notna(), "measured_ms"])
        better = int((models["ape"] < models["neusight_ape"]).sum())
        print(f"NeuSight's own predictions: mean APE {100 * ns['mape']:.1f}%, median {100 * ns['median_ape']:.1f}%;"
              f" seer is closer on {better} of {int(models['neusight_ms'].notna().sum())} models")  # fmt: skip
    if training:
        print("\nTraining steps by direction (backward includes the gradient accumulation, as NeuSight's bwall):\n")
        print(format_table(direction_table(shown), percent=("ape", "neusight_ape")))
    tables = node_tables(nodes)
    for name, t in tables.items():
        if name == "nodes_by_direction":
            print(
                f"\nPer node and direction, seer and NeuSight on the same nodes (measured above {KERNEL_NODE_MS} ms):\n"
            )
            print(format_table(t, percent=("median_ape", "mape", "neusight_median_ape", "neusight_mape")))
            continue
        who = "seer" if name == "nodes_seer" else "NeuSight (same nodes)"
        print(f"\nPer node ({who}), nodes measured above {KERNEL_NODE_MS} ms:\n")
        print(
            format_table(
                t[[c for c in ("gpu", "direction", "kind", "n", "median_ape", "mape", "within_10pct") if c in t]]
            )
        )
    unm = models["unmodelled_share"].max()
    print(f"\nunmodelled ops: at most {100 * unm:.1f}% of a model's measured kernel time (counted as measured)")
    skipped = models.attrs.get("skipped", [])
    if skipped:
        print(f"\n{len(skipped)} of {len(files)} graphs skipped (they did not read):")
        for f, why in skipped:
            print(f"  {f}: {why}")
    if args.out:
        payload = {
            "set": "models",
            "data": str(folder),
            "models": _records(
                models,
                [
                    "source",
                    "gpu",
                    "model",
                    "fits",
                    "measured_ms",
                    "predicted_ms",
                    "ape",
                    "kernel_sum_ms",
                    "unmodelled_share",
                    "neusight_ms",
                    "neusight_ape",
                    "step",
                    *[
                        f"{who}_{d}_ms"
                        for d in ("forward", "backward")
                        for who in ("measured", "predicted", "neusight")
                    ],
                ],
            ),
            "skipped": [{"file": f, "reason": why} for f, why in skipped],
            "nodes": _records(
                nodes, ["source", "name", "kind", "direction", "measured_ms", "predicted_ms", "ape", "neusight_ms"]
            ),
            "overall": {k: overall[k] for k in ACCURACY_KEYS},
            **{name: _records(t, list(t.columns)) for name, t in tables.items()},
            **by_gpu(models),
        }
        write_out(Path(args.out), payload, {"models": models, **tables})
        print(f"\nwrote {args.out}")
    if args.plots:
        for p in plot_models(models, nodes, Path(args.plots)):
            print(f"wrote {p}")
    return 0


def direction_table(models: pd.DataFrame) -> pd.DataFrame:
    """Forward and backward time of each training step: measured, seer's and NeuSight's, with errors."""
    rows = []
    for _, m in models[models["step"] == "training"].iterrows():
        for d in ("forward", "backward"):
            meas, pred, ns = (m.get(f"{who}_{d}_ms") for who in ("measured", "predicted", "neusight"))
            has_ns = meas and ns is not None and pd.notna(ns)
            rows.append(
                {
                    "gpu": m["gpu"], "model": m["model"], "direction": d, "measured_ms": meas, "predicted_ms": pred,
                    "ape": abs(pred / meas - 1) if meas else np.nan, "neusight_ms": ns,
                    "neusight_ape": abs(ns / meas - 1) if has_ns else np.nan,
                }
            )  # fmt: skip
    return pd.DataFrame(rows).round({"measured_ms": 1, "predicted_ms": 1, "neusight_ms": 1})


def trace_files(folder: Path) -> list[tuple[Path, Path | None]]:
    """(Kineto trace, its execution trace or None) under a folder: `*.pt.trace.json.gz` with
    `*.et.json.gz` beside it (the harness's naming), or `*_kineto.json.gz` with `*_et.json.gz`
    (PARAM's), or any other `*.json(.gz)` that holds traceEvents."""
    out = []
    for p in sorted(folder.rglob("*.json*")):
        name = p.name
        if not name.endswith((".json", ".json.gz")) or ".et." in name or name.endswith(("_et.json.gz", "traces.json")):
            continue
        et = None
        for a, b in ((".pt.trace.json.gz", ".et.json.gz"), ("_kineto.json.gz", "_et.json.gz")):
            if name.endswith(a) and (p.parent / name.replace(a, b)).exists():
                et = p.parent / name.replace(a, b)
        out.append((p, et))
    return out


def default_traces() -> list[Path]:
    """The project's own traces (data/*/traces) and the shared ones (../shared/datasets/traces)."""
    own = paths.OWN_DATA
    ns = records.neusight_dir()
    shared = ns.parent / "traces" if ns is not None else None
    return [p for p in [*sorted(own.glob("*/traces")), shared] if p is not None and p.is_dir()]


def run_set_traces(args) -> int:
    """The CLI of --set traces: attribution, replay and prediction of every trace."""
    from seer.workload.kineto import attribution, read_trace
    from seer.workload.model_time import model_time

    folders = [args.data] if args.data is not None else default_traces()
    files = [f for d in folders for f in trace_files(Path(d))]
    if not files:
        raise SeerError(f"no profiler traces under {', '.join(map(str, folders)) or 'the default folders'}")
    print("Profiler traces: kernel time linked to ops, and the step time replayed (median over steps).\n")
    rows = []
    for path, et in files:
        try:
            trace = read_trace(path, et)
        except SeerError as exc:
            print(f"  {path.name}: skipped ({exc})")
            continue
        row = {"trace": path.name, "gpu": trace.device, "steps": len(trace.steps), "attributed": attribution(trace)}
        try:
            mt = model_time(path, execution_trace=et)
            row.update({k: mt.totals.get(k) for k in TRACE_TOTALS})
            row["fits"] = mt.fits
            if mt.gpu_note:  # the trace's GPU resolved from its deviceProperties
                row["gpu_note"] = mt.gpu_note
        except SeerError as exc:  # a GPU without fits: the replay with measured times only
            from seer.workload.replay import replay

            r, why = replay(trace), str(exc).removeprefix(f"{path}: ")[:160]
            row.update({"measured_ms": r.measured_ms, "replay_measured_ms": r.step_ms,
                        "measured_kernel_sum_ms": r.kernel_ms, "note": why})  # fmt: skip
        rows.append(row)
    t = pd.DataFrame(rows)
    t["replay_error"] = t["replay_measured_ms"] / t["measured_ms"] - 1
    if "kernel_sum_ms" in t:
        t["kernel_error"] = t["kernel_sum_ms"] / t["measured_kernel_sum_ms"] - 1
    shown = t.round({c: 2 for c in t.columns if c.endswith("_ms")})
    print(
        format_table(
            shown.drop(columns=["note", "gpu_note"], errors="ignore"),
            percent=("attributed", "replay_error", "kernel_error"),
        )
    )
    if "gpu_note" in t:
        for _, r in t[t["gpu_note"].notna()].iterrows():
            print(f"  {r['trace']}: {r['gpu_note']}")
    if "note" in t:
        for _, r in t[t["note"].notna()].iterrows():
            print(f"  {r['trace']}: no prediction ({r['note']})")
    if args.out:
        write_out(Path(args.out), {"set": "traces", "traces": _records(t, list(t.columns))}, {"traces": t})
        print(f"\nwrote {args.out}")
    return 0
