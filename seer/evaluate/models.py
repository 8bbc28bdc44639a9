"""python -m seer.evaluate --set models: whole-model and per-node time against measurements.

For every graph (NeuSight's `<GPU>/<model>.csv` + `.json` layout): the ops are timed by that
GPU's fits, the whole model is prologue + num_layer x block + epilogue through the host/GPU
timeline (seer.workload.estimate), and both are compared with what was measured. Where
NeuSight's own predictions of the same graphs lie beside the data (`neusight-predictions/`),
they are scored on the same nodes: the bar to beat.

The host time of an op (the framework's dispatch, what a shape-only node like `view` costs) is
learned from the data: the median measured latency of the shape-only nodes of the OTHER graphs
of the same GPU (a graph never informs its own prediction).
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
from seer.workload.estimate import DEFAULT_DISPATCH_MS, predict_ops, whole_model
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


def dispatch_by_graph(graphs: list[Graph]) -> dict[Path, float]:
    """Host time per op for each graph: the median measured latency of the shape-only nodes of
    the other graphs of its GPU (DEFAULT_DISPATCH_MS where there are none)."""
    out = {}
    for g in graphs:
        others = [
            h.ops.loc[(h.ops["kind"] == "dispatch") & (h.ops["measured_ms"] > 0), "measured_ms"]
            for h in graphs
            if h.gpu == g.gpu and h.source != g.source
        ]
        vals = pd.concat(others) if others else pd.Series(dtype=float)
        out[g.source] = float(vals.median()) if len(vals) else DEFAULT_DISPATCH_MS
    return out


def _neusight(source: Path) -> tuple[pd.Series | None, float | None]:
    """NeuSight's per-node (by Name) and whole-model predictions of a graph, where they lie beside it
    (read through seer's one opener and checked: a bad file is a DataError, not a wrong comparison)."""
    base = source.parent.parent.parent / "neusight-predictions" / source.parent.name / source.name
    if not base.exists():
        return None, None
    file = str(base)
    try:
        raw = pd.read_csv(io.BytesIO(records.read_bytes(base, "NeuSight's per-node predictions (CSV)")))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(file, None, None, f"a readable CSV file ({exc})".replace("\n", " ")) from None
    for col in ("Name", "fw_latency"):
        if col not in raw:
            raise DataError(file, None, col, f"a column named '{col}' (NeuSight's predictions)")
    lines = np.arange(len(raw)) + 2
    times = raw["fw_latency"].astype(object)  # a bad value quoted as written, not as numpy spells it
    times = records.numeric(times, file, "fw_latency", lines, minimum=0, expected="a predicted time in ms")
    names = raw["Name"].astype(str)
    if (dup := np.flatnonzero(names.duplicated().to_numpy())).size:
        raise DataError(file, int(lines[dup[0]]), "Name", "each node once", names.iat[dup[0]], where="line")
    nodes = pd.Series(times.to_numpy(float), index=names.to_numpy(), name="fw_latency")
    meta = base.with_suffix(".json")
    whole = None
    if meta.exists():
        doc = records.read_json(meta, "NeuSight's whole-model prediction (JSON with e2e_latency)")
        whole = doc.get("e2e_latency") if isinstance(doc, dict) else None
        ok = isinstance(whole, (int, float)) and not isinstance(whole, bool) and np.isfinite(whole) and whole > 0
        if whole is not None and not ok:
            raise DataError(str(meta), None, "e2e_latency", "a predicted whole-model time in ms > 0", whole)
    return nodes, whole


def evaluate_graphs(files: list[Path], fits_for_gpu, log=print) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(models, nodes): one row per graph and one per node that launches a kernel."""
    graphs = [read_graph(f) for f in files]
    dispatch = dispatch_by_graph(graphs)
    models, nodes = [], []
    for g in graphs:
        fits = fits_for_gpu(g.gpu)
        ops = predict_ops(g.ops, fits, dispatch[g.source])
        w = whole_model(ops, dispatch[g.source])
        ns_nodes, ns_whole = _neusight(g.source)
        measured_kernel = (ops["measured_ms"].fillna(0) * ops["count"])[ops["kind"] != "dispatch"].sum()
        models.append(
            {
                "source": str(g.source),
                "gpu": g.gpu,
                "model": g.model,
                "num_layer": g.num_layer,
                "measured_ms": g.measured_ms,
                "predicted_ms": w.replay_ms,
                "kernel_sum_ms": w.kernel_sum_ms,
                "unmodelled_share": w.unmodelled_ms / measured_kernel if measured_kernel else 0.0,
                "dispatch_ms": w.dispatch_ms,
                "neusight_ms": ns_whole,
            }
        )
        k = ops[ops["kind"].isin([*KERNEL_KINDS, "unmodelled"])]
        rows = k[["source", "name", "kind", "part", "count", "measured_ms", "predicted_ms"]].assign(
            gpu=g.gpu, model=g.model
        )
        if ns_nodes is not None:
            rows = rows.assign(neusight_ms=rows["name"].map(ns_nodes))
        nodes.append(rows)
        log(
            f"  {g.gpu:24s} {g.model:26s} measured {g.measured_ms or float('nan'):9.1f} ms"
            f"  predicted {w.replay_ms:9.1f} ms"
        )
    m = pd.DataFrame(models)
    m["ape"] = (m["predicted_ms"] - m["measured_ms"]).abs() / m["measured_ms"]
    m["neusight_ape"] = (m["neusight_ms"] - m["measured_ms"]).abs() / m["measured_ms"]
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
    out = {"nodes_seer": accuracy_table(k, "predicted_ms", "measured_ms", ["gpu", "kind"])}
    if k["neusight_ms"].notna().any():
        out["nodes_neusight"] = accuracy_table(both, "neusight_ms", "measured_ms", ["gpu", "kind"])
    return out


def share_by_kind(nodes: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Whole-model time per (graph, kind): measured and predicted node time x repeats."""
    t = nodes.assign(
        measured=nodes["measured_ms"].fillna(0) * nodes["count"],
        predicted=nodes["predicted_ms"].fillna(nodes["measured_ms"]).fillna(0) * nodes["count"],
    )
    return t.groupby(["source", "kind"], sort=False)[["measured", "predicted"]].sum().reset_index()


def plot_models(models: pd.DataFrame, nodes: pd.DataFrame, folder: Path) -> list[Path]:
    """The whole-model plot (seer.evaluate.plots.models_figure) of these models and nodes."""
    from seer.evaluate.plots import models_figure, save

    shares = share_by_kind(nodes, models)
    kinds = [k for k in (*KERNEL_KINDS, "unmodelled") if k in set(shares["kind"])]
    return [save(models_figure(models, shares, kinds), folder / "models_by_kind.png")]


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
    overall = accuracy(models["predicted_ms"], models["measured_ms"])
    shown = models.assign(gpu=models["gpu"].str.replace("NVIDIA ", "").str.replace("Tesla ", ""))
    cols = ["gpu", "model", "measured_ms", "predicted_ms", "ape"] + (
        ["neusight_ape"] if shown["neusight_ms"].notna().any() else []
    )
    print("\nWhole model (prologue + num_layer x block + epilogue):\n")
    shown = shown.round({"measured_ms": 1, "predicted_ms": 1})
    print(format_table(shown[cols], percent=("ape", "neusight_ape")))
    print(
        f"\nover {len(models)} models: mean APE {100 * overall['mape']:.1f}%, median {100 * overall['median_ape']:.1f}%"
    )
    if models["neusight_ms"].notna().any():
        ns = accuracy(models["neusight_ms"].dropna(), models.loc[models["neusight_ms"].notna(), "measured_ms"])
        better = int((models["ape"] < models["neusight_ape"]).sum())
        print(f"NeuSight's own predictions: mean APE {100 * ns['mape']:.1f}%, median {100 * ns['median_ape']:.1f}%;"
              f" seer is closer on {better} of {int(models['neusight_ms'].notna().sum())} models")  # fmt: skip
    tables = node_tables(nodes)
    for name, t in tables.items():
        who = "seer" if name == "nodes_seer" else "NeuSight (same nodes)"
        print(f"\nPer node ({who}), nodes measured above {KERNEL_NODE_MS} ms:\n")
        print(format_table(t[["gpu", "kind", "n", "median_ape", "mape", "within_10pct"]]))
    unm = models["unmodelled_share"].max()
    print(f"\nunmodelled ops: at most {100 * unm:.1f}% of a model's measured kernel time (counted as measured)")
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
                    "measured_ms",
                    "predicted_ms",
                    "ape",
                    "kernel_sum_ms",
                    "unmodelled_share",
                    "neusight_ms",
                    "neusight_ape",
                ],
            ),
            "nodes": _records(nodes, ["source", "name", "kind", "measured_ms", "predicted_ms", "ape", "neusight_ms"]),
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
