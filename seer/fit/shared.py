"""A kernel that is the whole call under several algorithms learns from each of them.

cuDNN runs its direct kernel (seer.models.gate.DIRECT) as the whole call of several
algorithms of one direction (the forward's GEMM, IMPLICIT_GEMM and IMPLICIT_PRECOMP_GEMM; the
data gradient's ALGO_0 and ALGO_1; the filter gradient's ALGO_0, ALGO_1 and ALGO_3), and a
configuration that runs it under two of them times alike under both (ratio 1.000, p10-p90
0.97-1.02 on the H200; docs/results.md, "The direct kernel's template is the
configuration's"). Each algorithm's model of it learns from the other algorithms' training
calls of it too, at the configurations where the algorithm ran another kernel, so a template a
few of one algorithm's calls ran has a model of its own rather than a neighbour's. Never a
configuration where the algorithm ran this kernel: its own rows speak for it, or it is held out
(Test-set-I stays unseen); one call per configuration.
"""

from __future__ import annotations

import pandas as pd

from seer.data.keys import PER_GROUP
from seer.data.records import CONV_OPS
from seer.models.gate import DIRECT


def shared_variant(key: pd.Series) -> pd.Series:
    """The "op:variant" of each row whose key is a direct kernel's whole call (a convolution's,
    not looped over its groups), '' elsewhere."""
    parts = key.astype(str).str.split(":", n=2, expand=True).reindex(columns=range(3)).fillna("")
    shared = parts[0].isin(CONV_OPS) & parts[2].str.contains(DIRECT, regex=False) & ~parts[2].str.endswith(PER_GROUP)
    return (parts[0] + ":" + parts[2]).where(shared, "")


def with_shared(rec: pd.DataFrame, key: str, own: pd.DataFrame, shared: pd.Series) -> pd.DataFrame:
    """`own` (the training rows of `key`, rows of `rec`) and the training rows of the same kernel
    under the direction's other algorithms (`shared`: shared_variant of `rec`), keyed as `key`."""
    mine = shared.at[own.index[0]] if len(own) else ""
    if not mine:
        return own
    algo = key.split(":", 2)[1]
    train = rec["split"] == "train"
    seen = set(rec.loc[rec["key"] == key, "config_key"])  # trained on or held out
    donors = rec[train & (rec["algo"] != algo) & (shared == mine) & ~rec["config_key"].isin(seen)]
    donors = donors.drop_duplicates(["config_key", "math"])
    return pd.concat([own, donors.assign(algo=algo, key=key)]) if len(donors) else own
