"""A cuBLASLt algorithm's configuration, where a GEMM query gives it: its tile names the kernel,
its split-K count the slices the grid cuts the reduction into.

A cuBLASLt algorithm id (`lt:<id>`) is a family of configurations. Its heuristic offers the same
id at several tiles and split-K counts (cublasLtMatmulAlgo_t's CUBLASLT_ALGO_CONFIG_TILE_ID and
SPLITK_NUM, which the harness records as `lt_tile` and `lt_splitk`), and each tile runs a kernel
of its own: on the H100, lt:55's twelve tiles one xmma kernel each per operand layout. From the
sizes alone neither shows: the choosers named the kernel cuBLASLt ran on 7% of lt:55's
Test-set-I rows, and the geometry guessed a kernel's slices from the nearest training
configuration, though one shape was timed at up to eight counts; with its kernel known, lt:55's
models erred 33% (RMSPE; 15% fitted and asked with the counts). A caller that holds the
configuration (a tuner enumerating the heuristic's results, a framework that keeps the one it
ran) gives both columns, and then
- the kernel is the one the training calls of that tile and operand layout ran (TileVariants);
- the grid's slices of the reduction are lt_splitk (`splits`): grid_z = batch x lt_splitk on
  98% of the H100's timed calls (the rest are cutlass kernels that round a slice up to whole
  32-element steps), in the models' fits and in their predictions.
Rows without the columns are named as before, their slices guessed from the calls the library's
heuristic ranked first (seer.models.geometry.library_picked; docs/results.md, "A cuBLASLt
algorithm's configuration names its kernel").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seer.data.configs import LAYOUT, LAYOUTS, LT_SPLITK, LT_TILE
from seer.data.records import GEMM_OPS
from seer.models.keys import family_key


def splits(extra: Mapping[str, np.ndarray], guessed: np.ndarray) -> np.ndarray:
    """Each GEMM row's slices of its reduction: its split-K count where the row gives one (a
    GEMM batch's `extra`, seer.data.configs.gemm_algorithm_config), else `guessed` (the
    geometry's grid_z over the batch)."""
    given = extra.get(LT_SPLITK)
    if given is None:
        return guessed
    given = np.asarray(given, dtype=float)
    return np.where(np.isfinite(given) & (given >= 1), given, guessed)


@dataclass(frozen=True)
class TileVariants:
    """The variant key the training calls of one cuBLASLt algorithm ran at each (tile id,
    operand layout): the kernel a query of that configuration runs."""

    variants: Mapping[tuple[int, str], str]

    def named(self, extra: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Each of `n` rows' variant key from its tile and layout (a GEMM batch's `extra`), ""
        where the row gives neither or no training call ran that configuration."""
        tile, layout = extra.get(LT_TILE), extra.get(LAYOUT)
        if tile is None or layout is None:
            return np.full(n, "", dtype=object)
        ok = np.isfinite(tile) & np.isfinite(layout)
        pairs = zip(np.where(ok, tile, -1).astype(int).tolist(), np.where(ok, layout, 0).astype(int).tolist())
        return np.array(
            [self.variants.get((t, LAYOUTS[lay]), "") if good else "" for (t, lay), good in zip(pairs, ok)],
            dtype=object,
        )

    def to_dict(self) -> list[dict]:
        return [{"tile": t, "trans": lay, "variant": v} for (t, lay), v in sorted(self.variants.items())]

    @classmethod
    def from_dict(cls, d: list[dict]) -> TileVariants:
        return cls({(int(e["tile"]), str(e["trans"])): str(e["variant"]) for e in d})


def fit_tile_variants(train: pd.DataFrame) -> dict[str, TileVariants]:
    """Per GEMM algorithm (its chooser's family key), the variant its training calls ran most at
    each tile and layout (a call's `main` row; ties to the first key in order), whether or not
    that variant has a model: a query of a tile whose kernel has none is timed from the calls
    (seer.predict.variants.VariantPredictor._by_tile), not by another tile's model."""
    need = {"op", "algo", "key", LT_TILE, "trans"}
    if not need <= set(train.columns):
        return {}
    rows = train[train["op"].isin(GEMM_OPS)]
    if "role" in rows:
        rows = rows[rows["role"] == "main"]
    tile = pd.to_numeric(rows[LT_TILE], errors="coerce")
    layout = rows["trans"].astype(str).str.lower()
    rows = rows.assign(tile=tile, layout=layout)[tile.notna() & layout.isin(LAYOUTS) & (rows["algo"] != "")]
    out = {}
    for (op, algo), g in rows.groupby(["op", "algo"], sort=True):
        counts = g.groupby(["tile", "layout", "key"]).size().reset_index(name="n")
        best = counts.sort_values(["tile", "layout", "n", "key"], ascending=[True, True, False, True])
        first = best.drop_duplicates(["tile", "layout"])
        variants = {(int(t), str(lay)): str(k) for t, lay, k in zip(first["tile"], first["layout"], first["key"])}
        out[family_key(str(op), str(algo))] = TileVariants(variants)
    return out
