"""Where Test-set-I's error lies: in the variant the fits name, or in that variant's model.

A configuration's time is predicted in two steps: the chooser names the kernel variant cuDNN or
cuBLAS would launch (seer.models.chooser), and that variant's model times it. On the H100's and
the H200's Test-set-I, the rows named a variant other than the one the library ran carried most
of the squared error of the algorithms above the 25% RMSPE target (docs/results.md, "Where
Test-set-I's error lies"), where their models, given the variant, were near their targets. A
figure of the whole does not say which step to mend; this table does, per algorithm.

A gradient timed as the forward of its configuration (seer.models.dual) names the forward's
variant, which no gradient call ran: its rows are counted apart (`as_forward`), neither right
nor wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.evaluate.metrics import ape, per_group

NAMING_KEYS = ("n", "as_forward", "named_right", "wrong_err_share", "rmspe", "rmspe_named_right", "rmspe_known")


def naming_table(test: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group of `by` (and overall), over the scored Test-set-I rows (`pred_config` not NaN;
    `named`: the key the time is of, `key`: the variant the library ran, `pred_variant`): rows;
    rows timed as the forward; the share of the others named right; the share of the squared
    relative error on the rows named wrong; RMSPE of every row, of the rows named right, and of
    every row with its variant known (its own model)."""
    t = test[test["pred_config"].notna()]
    named = t["named"].fillna("").astype(str)
    op_of_named = named.str.split(":", n=1).str[0]
    t = t.assign(
        _se=ape(t["pred_config"], t["time_ms"]) ** 2,
        _forward=(named != "") & (op_of_named != t["op"].astype(str)),
        _right=named == t["key"].astype(str),
        _se_known=ape(t["pred_variant"], t["time_ms"]) ** 2,
    )
    return per_group(t, by, _row, NAMING_KEYS)


def _row(g: pd.DataFrame) -> dict:
    judged = ~g["_forward"]
    right = judged & g["_right"]
    se = g["_se"].to_numpy()
    total = se.sum()
    known = g["_se_known"].dropna()
    return {
        "n": len(g),
        "as_forward": int(g["_forward"].sum()),
        "named_right": float(right.sum() / judged.sum()) if judged.any() else np.nan,
        "wrong_err_share": (
            float(se[(judged & ~g["_right"]).to_numpy()].sum() / total) if total > 0 and judged.any() else np.nan
        ),
        "rmspe": float(np.sqrt(se.mean())) if len(se) else np.nan,
        "rmspe_named_right": float(np.sqrt(g.loc[right, "_se"].mean())) if right.any() else np.nan,
        "rmspe_known": float(np.sqrt(known.mean())) if len(known) else np.nan,
    }
