"""Records -> what the models learn from: the rows, their variant, their split, the data's fingerprint.

Fitting, evaluation and selection read data through these functions, so that every stage sees
the same rows (successful main kernels of named calls, in a canonical order) and the same split.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import configs, paths, records, variants
from seer.data.configs import groups
from seer.data.keys import PER_BIN, family_column, key_column
from seer.data.records import VARIANT_OPS
from seer.errors import SeerError

SPLIT_RULE = (
    "SEER's: rows of each variant (gpu, op, kernel) stably sorted by configuration; "
    "row index mod 10 < 7 is training, the rest Test-set-I"
)


def default_data() -> Path:
    """The project's own measurements once they exist, else NeuSight's beside the repo."""
    if any(paths.OWN_DATA.glob("*/*.csv*")):
        return paths.OWN_DATA
    ns = records.neusight_dir()
    if ns is None:
        own = (
            f"{paths.OWN_DATA}/<gpu>/ holds no measurements (take them on a GPU: make collect)"
            if paths.in_checkout()
            else "this seer is installed, not a clone of its repository, so it has no measurements "
            "of its own (a clone keeps them in data/<gpu>/)"
        )
        raise SeerError(
            f"no data to fit or evaluate: {own}, and NeuSight's were not found ($SEER_NEUSIGHT, or "
            "../shared/datasets/neusight from the repository or the current folder); pass --data "
            "FILE_OR_FOLDER (harness CSVs, NeuSight's CSVs), set SEER_NEUSIGHT, or run from a clone"
        )
    return ns


# never trained on: Test-set-II scores the algorithm picks, conv_bwd the gradients' (its layers)
HELD_OUT_SUITES = ("test_set_ii", "conv_bwd")


# The harness's tensor-core measurements (collect --math tf32,bf16,fp16) wait for models of
# their own: a variant chooser places a configuration by its sizes, not its math mode, so
# learnt beside the FP32 rows they would hand an FP32 GEMM a BF16 kernel, and a TF32 row is
# float32 data that no prediction can tell from FMA. Traces keep theirs (PyTorch's default
# TF32 convolutions are what the launched-kernel tables describe).
TENSOR_MATH = ("tf32", "bf16", "fp16")
TRACE_SUITE = "trace"


def training_records(rec: pd.DataFrame) -> pd.DataFrame:
    """The records models may learn from: everything but the held-out suites (HELD_OUT_SUITES)
    and the harness's tensor-core math modes (TENSOR_MATH)."""
    if "suite" not in rec:
        return rec
    keep = ~rec["suite"].isin(HELD_OUT_SUITES)
    if "math" in rec:
        keep &= ~(rec["math"].isin(TENSOR_MATH) & rec["suite"].ne(TRACE_SUITE))
    return rec[keep]


def prepare(rec: pd.DataFrame) -> pd.DataFrame:
    """Rows the models learn from: successful calls, each by the kernel that stands for it
    (`call_rows`), with their variant and split."""
    rec = rec[rec["status"] == "ok"]
    keying = call_rows(rec)
    launched = main_launches(rec, keying)
    looped = group_loop(rec, launched)
    rec = rec.assign(group_loop=looped, bin_loop=bin_loop(rec, launched, looped))[keying]
    rec = rec[~unnamed_calls(rec)]
    # a canonical row order by configuration (not by file row or call id), so that the same
    # rows in any order give the same CV folds, staircase subsample and fits
    order = [
        c
        for c in (
            "gpu",
            "op",
            *records.CONV_FIELDS,
            "m",
            "n",
            "k",
            "dtype",
            "math",
            "algo",
            "kernel",
            "source",
            "time_ms",
            "call_id",
        )
        if c in rec
    ]
    rec = rec.sort_values(order, kind="mergesort").reset_index(drop=True)
    rec = variants.annotate(rec)
    rec["variant"] = per_bin_variants(one_d_variants(rec), rec)
    rec["key"] = key_column(rec)
    rec["split"] = split(rec)
    return rec


ONE_D = "_1d"  # the ending of an FFT_TILING variant's label where its calls transform in 1-D pieces


def one_d_variants(rec: pd.DataFrame) -> pd.Series:
    """Each row's variant label, FFT_TILING's calls of 1-D filters (1x1, 1xk, kx1) marked ONE_D
    (forward and data gradient: configs.FFT_TILED_OPS).
    They run their complex GEMM per bin over the lines of 1-D pieces (grid ceil(K / tile) x
    ceil(N x lines / tile) x 17 or 129 bins) where 2-D calls run it over images (ceil(N / tile)
    x ceil(K / tile) x 544), under the same kernel names: as one variant, its grid followed no
    rule (the nearest configuration's matched 43-92% of the H200's rows on an axis)."""
    label = rec["variant"]
    if rec.empty or not {"algo", "kh", "kw"} <= set(rec.columns):
        return label
    one_d = rec["op"].isin(configs.FFT_TILED_OPS) & rec["algo"].eq("FFT_TILING") & configs.one_d_filters(rec)
    one_d &= ~label.astype(str).str.startswith("fft1d")  # already named for its 1-D transform
    return label.where(~one_d, label.astype(str) + ONE_D)


def per_bin_variants(label: pd.Series, rec: pd.DataFrame) -> pd.Series:
    """The variant labels, FFT calls that launched their complex GEMM once per frequency bin
    (`bin_loop`) marked PER_BIN. cuDNN's FFT mostly runs one batched GEMM over all bins, but
    for some shapes cuBLAS's 32x32 (and at batch 128 64x32) kernel is launched 144-8,320 times,
    once a bin, about 10 us a launch: on the H100 24 of 494 ungrouped FFT calls took 1.5-105 ms
    so, 10-100x what the same kernel's batched calls take. Under one label the model of the
    batched calls had learnt them too (Test-set-I with the variant known: 131% RMSPE)."""
    if "bin_loop" not in rec:
        return label
    loop = rec["bin_loop"].fillna(False).astype(bool)
    return label.where(~loop, label.astype(str) + PER_BIN)


def call_rows(rec: pd.DataFrame) -> pd.Series:
    """The row of each call whose kernel keys the call's time: the first kernel that names the
    call's engine where it launched one (variants.ENGINE_KINDS: a Winograd non-fused call's data
    transform; a call looping over groups launches it once a group, and each launch kept gave 28
    of the H200's calls 88 rows, Test-set-I rows among them beside their own training rows),
    else its main kernel (the longest, as the harness marks it). Every row of a call carries the
    call's time."""
    main = rec["role"] == "main"
    if "call_id" not in rec or "kernel" not in rec or rec.empty:
        return main
    names = rec["kernel"].astype("string").fillna("")
    kinds = names.map({n: variants.classify(n).kind for n in pd.unique(names)})
    engine = variants.is_engine(kinds)
    if not engine.any():
        return main
    call = _call_keys(rec)
    has = engine.groupby(call).transform("any")
    first = engine & (engine.astype(int).groupby(call).cumsum() == 1)
    return (main & ~has) | first


CALL_KEYS = ("gpu", "source", "call_id")


def _call_keys(rec: pd.DataFrame) -> list[pd.Series]:
    """The columns that name a call (its GPU, file and call id), as text to group by. The
    harness's call id hashes the configuration, math and algorithm, and every GPU's folder has
    a conv_grid.csv: without the GPU, one configuration measured on two GPUs is one call of
    twice the launches (an H100 and an H200 FFT call, each launching its GEMM once, read as a
    per-bin loop)."""
    return [rec[c].astype(str) for c in CALL_KEYS if c in rec]


def group_loop(rec: pd.DataFrame, launched: np.ndarray) -> np.ndarray:
    """Whether each call of a grouped convolution ran its kernel once per group: it launched
    the kernel (`launched` times, main_launches) at least G times. cuDNN 9 runs its FFT,
    Winograd, implicit and explicit GEMM kernels so on the H200, one group's convolution a
    launch, and its grouped direct kernels once a call; each variant one way or the other."""
    g = groups(rec)
    return rec["op"].isin(records.CONV_OPS).to_numpy() & (g > 1) & (np.nan_to_num(launched) >= g)


def bin_loop(rec: pd.DataFrame, launched: np.ndarray, looped: np.ndarray) -> np.ndarray:
    """Whether each FFT call launched its keying kernel, a BLAS GEMM or GEMV, more than once
    without looping over groups (`looped`): once per frequency bin (per_bin_variants)."""
    if "kernel" not in rec or "algo" not in rec or rec.empty:
        return np.zeros(len(rec), dtype=bool)
    names = rec["kernel"].astype("string").fillna("")
    blas = names.map({n: variants.classify(n).family == "BLAS" for n in pd.unique(names)})
    fft = rec["op"].isin(records.CONV_OPS) & rec["algo"].astype(str).eq("FFT")
    return (fft & blas.astype(bool)).to_numpy() & ~looped & (np.nan_to_num(launched) > 1)


def main_launches(rec: pd.DataFrame, keying: pd.Series) -> np.ndarray:
    """How many times each call launched the kernel of its keying row (`call_rows`): its rows of
    that kernel, each standing for `launches` of them (NaN without call ids)."""
    if "call_id" not in rec or "kernel" not in rec or rec.empty:
        return np.full(len(rec), np.nan)
    n = pd.to_numeric(rec["launches"], errors="coerce").fillna(1.0) if "launches" in rec else 1.0
    per_kernel = pd.Series(n, index=rec.index).groupby([*_call_keys(rec), rec["kernel"].astype(str)]).transform("sum")
    return np.where(keying, per_kernel, np.nan)


UNNAMED = (
    "{:.0%} of its calls have no usable kernel names (CUPTI did not split them into calls): "
    "no models, a fit of the rest would be biased"
)


def unnamed_calls(rec: pd.DataFrame) -> pd.Series:
    """Harness rows without a usable kernel name: calls CUPTI could not split into repetitions
    (some FFT calls vary their launches) or split at a chunk of the call. No variant to learn."""
    if "backend" not in rec or "kernel" not in rec:
        return pd.Series(False, index=rec.index)
    unnamed = rec["backend"].fillna("").astype(str).ne("") & rec["kernel"].fillna("").astype(str).eq("")
    if "span_partial" in rec:  # split at a chunk of the call, not at the call (records.span_partial)
        unnamed |= rec["span_partial"].fillna(False).astype(bool)
    return unnamed


def unnamed_shares(rec: pd.DataFrame) -> dict[str, float]:
    """Per (op, algorithm) family of the successful calls, the share whose kernels are unnamed."""
    calls = rec[(rec["status"] == "ok") & rec["op"].isin(VARIANT_OPS)]
    if calls.empty:
        return {}
    calls = calls.assign(_unnamed=unnamed_calls(calls))
    calls = calls.drop_duplicates([c for c in CALL_KEYS if c in calls]) if "call_id" in calls else calls
    share = calls.groupby(family_column(calls), sort=True)["_unnamed"].mean()
    return {str(k): float(v) for k, v in share.items() if v > 0}


def split(rec: pd.DataFrame) -> np.ndarray:
    """Training or Test-set-I for each row, by SEER's rule within each variant."""
    return records.split_rows(rec, ["gpu", "op", "kernel"])


def content_hash(rec: pd.DataFrame) -> str:
    """The data's fingerprint: record columns that hold anything (so a schema that grows by a
    column these data lack keeps their hash), rows in a canonical order."""
    cols = [c for c in records.COLUMNS if c in rec and c not in ("source",) and rec[c].notna().any()]
    keyed = rec[cols].sort_values(["gpu", "op", "call_id", "kernel"], kind="mergesort")
    h = pd.util.hash_pandas_object(keyed.astype(str), index=False).to_numpy().tobytes()
    return hashlib.sha256(h).hexdigest()
