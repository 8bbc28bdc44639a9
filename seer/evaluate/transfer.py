"""python -m seer.evaluate --set transfer: predict a GPU from the fits of the OTHER GPUs only.

Every row of the data is predicted for its GPU by fits transferred (seer.predict.transfer) from the
fits of the other chips in --fits (never that GPU's own, even when bundled; nor another board
of the same chip, such as the A100 80GB for the A100 40GB). On NeuSight's five GPUs this is
leave-one-GPU-out.
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
    if args.out:
        overall = table[table["target"] == "overall"].iloc[0]
        payload = {
            "set": "transfer",
            "data": str(data),
            "groups": table[table["target"] != "overall"].to_dict(orient="records"),
            "overall": {k: (int(overall[k]) if k == "n" else float(overall[k])) for k in ACCURACY_KEYS},
        }
        write_out(Path(args.out), payload, {"transfer": table})
        print(f"\nwrote {args.out}")
    return 0
