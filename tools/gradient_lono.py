"""Leave-one-network-out picks of the convolution gradients' algorithms, until their grid exists.

python tools/gradient_lono.py [GPU_FOLDER]   # default data/h200

The gradients' Test-set-II report (python -m seer.evaluate --set II) trains on conv_bwd_grid and
scores conv_bwd, Test-set-II's layers. Before that grid is measured, this is the only estimate of
what seer's per-variant models make of the gradients' kernels: for each network, fit on the
conv_bwd layers the other networks use, and score the picks on the layers it uses, beside cuDNN's
heuristic and the ALGO_1 default on the same layers. It is a weaker protocol than the grid's
(three networks' layers are far fewer configurations than a grid), printed as such.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import pandas as pd

import seer
from seer.data import records
from seer.errors import SeerWarning
from seer.evaluate import selection
from seer.fit.gpu import fit_one
from seer.fitsfile import write
from seer.models import DEFAULT

OPS = ("conv_bwd_data", "conv_bwd_filter")


def networks(rec: pd.DataFrame) -> list[str]:
    return sorted({u.split(":")[0] for us in rec["uses"].dropna() for u in str(us).split(";") if u})


def main(folder: Path) -> None:
    rec = records.load(folder)
    grads = rec[rec["suite"] == "conv_bwd"]
    if grads.empty:
        raise SystemExit(f"gradient_lono: no conv_bwd rows in {folder}")
    gpu = str(grads["gpu"].iat[0])
    scored: dict[str, list] = {op: [] for op in OPS}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", SeerWarning)
        for net in networks(grads):
            mine = grads["uses"].fillna("").str.contains(f"{net}:", regex=False)
            train = grads[~mine].assign(suite="conv_bwd_grid")  # trained on, as the grid would be
            _, doc, _ = fit_one((gpu, train, str(folder), None, DEFAULT))
            fits = seer.load(write(doc, Path(tmp) / net / "fits.json"))
            for op in OPS:
                table = selection.measured_table(grads[mine], op=op)
                pk, _ = selection.picks(table, {gpu: fits})
                scored[op].append((table, pk))
    print(f"{gpu}, {folder}: each network's conv_bwd layers scored with fits of the other networks' layers")
    for op, parts in scored.items():
        table = pd.concat([t for t, _ in parts], ignore_index=True)
        pk = pd.concat([p for _, p in parts], ignore_index=True)
        print("\n".join(selection.method_lines(table, pk, op, indent=f"  {op:16s} ")))
        print(f"  {op:16s} the model fell back to the heuristic on {int(pk['model_fallback'].sum())} layers")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data/h200"))
