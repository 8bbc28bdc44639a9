"""python -m seer.evaluate --set transfer: predict a GPU from the fits of the OTHER GPUs only.

Every row of the data is predicted for its GPU by fits transferred (seer.predict.transfer) from the
fits of the other chips in --fits (never that GPU's own, even when bundled; nor another board
of the same chip, such as the A100 80GB for the A100 40GB). On NeuSight's five GPUs this is
leave-one-GPU-out.

Then whole models (NeuSight's graphs, ../shared/datasets/neusight-models): each GPU's graphs
predicted through seer.evaluate.models with fits transferred from the other chips only, beside
NeuSight's own published predictions of the same graphs (from its artifact).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import records
from seer.data.records import MEMORY_OPS
from seer.errors import SeerError
from seer.evaluate.metrics import ACCURACY_KEYS, accuracy_table, format_table
from seer.evaluate.report import write_out
from seer.hardware import gpus
from seer.predict import Fits, load
from seer.predict.transfer import chip, transfer

# how the table groups ops: the memory-bound kernels together
GROUP = {op: "memory-bound" for op in MEMORY_OPS}


def sources_for(slug: str, fits_dir: Path) -> list:
    """The fits of every other chip in a folder of fits files."""
    return [load(p) for p in sorted(fits_dir.glob("*.json")) if chip(p.stem) != chip(slug)]


def predict_rows(tf: Fits, rec: pd.DataFrame) -> np.ndarray:
    """Transferred time of each record (NaN where no source covers its op and algorithm)."""
    out = np.full(len(rec), np.nan)
    keys = rec[["op", "algo"]].astype(str).agg(":".join, axis=1)
    for _, idx in keys.groupby(keys, sort=False).indices.items():
        try:
            out[idx] = tf.predict(rec.iloc[idx].reset_index(drop=True))
        except SeerError:
            continue
    return out


def leave_one_out(rec: pd.DataFrame, fits_dir: Path, log=print) -> pd.DataFrame:
    """The records with `pred` (transferred from the other chips) and `group` (op, with the
    memory-bound ops together)."""
    rec = rec[(rec["time_ms"] > 0) & rec["op"].isin([*records.VARIANT_OPS, *MEMORY_OPS])].reset_index(drop=True)
    out = []
    for gpu, sub in rec.groupby("gpu", sort=True):
        spec = gpus.lookup(str(gpu))
        src = sources_for(spec.slug, fits_dir)
        if not src:
            log(f"  {spec.name}: no fits of another GPU in {fits_dir}")
            continue
        tf = transfer(spec, src)
        pred = predict_rows(tf, sub.reset_index(drop=True))
        log(f"  {spec.name}: {len(sub)} rows from {', '.join(tf.transferred_from)}")
        out.append(sub.assign(pred=pred, target=spec.slug))
    if not out:
        raise SeerError("no GPU of the data could be predicted from the others")
    res = pd.concat(out, ignore_index=True)
    res["group"] = res["op"].map(GROUP).fillna(res["op"])
    return res


def _graphs_beside(data) -> Path | None:
    """NeuSight's model graphs where the data are NeuSight's kernel records (the default)."""
    ns = records.neusight_dir()
    if ns is None or Path(data).resolve() != ns.resolve():
        return None
    folder = ns.parent / "neusight-models"
    return folder if folder.is_dir() else None


def transferred_fits(fits_dir: Path):
    """GPU name -> fits transferred to it from the other chips' fits in `fits_dir` (never its
    own nor its chip's: what a GPU nobody measured gets), each built once."""
    cache: dict[str, Fits] = {}

    def of(name: str) -> Fits:
        spec = gpus.lookup(name)
        if spec.slug not in cache:
            src = sources_for(spec.slug, fits_dir)
            if not src:
                raise SeerError(f"no fits of another GPU than {spec.name} in {fits_dir}")
            cache[spec.slug] = transfer(spec, src)
        return cache[spec.slug]

    return of


def whole_models(folder: Path, fits_dir: Path, gpu: str | None = None) -> pd.DataFrame:
    """One row per graph under `folder`: measured, predicted from the other GPUs' fits, its
    error, and NeuSight's (its published prediction of the same graph) where it lies beside."""
    from seer.evaluate.models import evaluate_graphs
    from seer.workload.graph import graph_files

    files = graph_files(folder)
    if gpu:
        want = gpus.slug_for(gpu)
        files = [f for f in files if gpus.slug_for(f.parent.name.replace("_", " ")) == want]
    if not files:
        raise SeerError(f"no graphs under {folder}" + (f" of GPU {gpu!r}" if gpu else ""))
    from seer.predict.kernel_level import bundled

    fits_of = transferred_fits(fits_dir)
    by_gpu: dict[str, list[Path]] = {}
    for f in files:
        by_gpu.setdefault(gpus.slug_for(f.parent.name.replace("_", " ")), []).append(f)
    # each GPU as one nobody measured: its kernel line and dispatch from the others' too
    parts = [
        evaluate_graphs(fs, fits_of, log=lambda _line: None, floors=bundled().without(slug), own_gpu=False)[0]
        for slug, fs in by_gpu.items()
    ]
    return pd.concat(parts, ignore_index=True)


def models_table(models: pd.DataFrame) -> pd.DataFrame:
    """The whole-model table: per graph, and each GPU's mean error (model 'mean'), seer's and NeuSight's."""
    shown = models.assign(gpu=models["gpu"].map(lambda g: gpus.lookup(str(g)).slug))
    cols = ["gpu", "model", "measured_ms", "predicted_ms", "ape", "neusight_ape"]
    rows = shown[cols].copy()
    means = shown.groupby("gpu", sort=False)[["ape", "neusight_ape"]].mean().reset_index().assign(model="mean")
    out = pd.concat([rows, means], ignore_index=True)
    order = {g: i for i, g in enumerate(dict.fromkeys(shown["gpu"]))}
    out = out.sort_values(["gpu", "model"], key=lambda c: c.map(order) if c.name == "gpu" else c == "mean")
    return out.reset_index(drop=True).round({"measured_ms": 1, "predicted_ms": 1})


def run_set_transfer(args) -> int:
    data = args.data if args.data is not None else records.neusight_dir()
    if data is None:
        raise SeerError("no data: NeuSight's were not found beside the repo (pass --data FILE)")
    fits_dir = Path(args.fits)
    if fits_dir.suffix == ".json":
        raise SeerError("--set transfer needs a folder of fits (--fits DIR): the sources are the other GPUs")
    rec = records.load(data, gpu=args.gpu)
    print(f"Transfer on {data}: each GPU predicted from the fits of the other chips in {fits_dir}.\n")
    res = leave_one_out(rec, fits_dir)
    scored = res[res["pred"].notna()]
    table = accuracy_table(scored, "pred", "time_ms", ["target", "group"])
    print()
    print(format_table(table))
    missed = int(res["pred"].isna().sum())
    if missed:
        print(f"\n{missed} rows not predicted: no other GPU's fits cover their op or algorithm.")
    graphs = _graphs_beside(data)
    mt = None
    if graphs is not None:
        print(f"\nWhole models under {graphs}, each GPU's predicted from the fits of the other chips only"
              " (NeuSight's error: its own published prediction of the same graph):\n")  # fmt: skip
        mt = models_table(whole_models(graphs, fits_dir, args.gpu))
        print(format_table(mt, percent=("ape", "neusight_ape")))
        m = mt[mt["model"] != "mean"]
        both = m[m["neusight_ape"].notna()]
        better = int((both["ape"] < both["neusight_ape"]).sum())
        print(f"\nover {len(m)} models: mean APE {100 * m['ape'].mean():.1f}% (NeuSight's "
              f"{100 * both['neusight_ape'].mean():.1f}%); seer is closer on {better} of {len(both)}")  # fmt: skip
    if args.out:
        overall = table[table["target"] == "overall"].iloc[0]
        payload = {
            "set": "transfer",
            "data": str(data),
            "groups": table[table["target"] != "overall"].to_dict(orient="records"),
            "overall": {k: (int(overall[k]) if k == "n" else float(overall[k])) for k in ACCURACY_KEYS},
        }
        tables = {"transfer": table}
        if mt is not None:
            payload["models"] = mt.astype(object).where(mt.notna(), None).to_dict(orient="records")
            tables["models"] = mt
        write_out(Path(args.out), payload, tables)
        print(f"\nwrote {args.out}")
    return 0
