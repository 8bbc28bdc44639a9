"""The census's configurations labelled with the variant key cuDNN would launch: labels for the
choosers' trees beyond the timed calls.

A chooser learns cuDNN's choice of kernel from the configurations whose calls were timed, a few
hundred to a few thousand per algorithm. The census (seer.data.census) captures, without timing,
which kernels each algorithm launches on thousands more, and how often. A captured call is given
the key the training calls of its algorithm got that launched the same kernels and looped alike
(over the groups: at least one launch per group; over an ungrouped FFT's frequency bins: at least
one per bin; seer.data.prepare), where such training calls got one key at least MAJORITY_MIN of
the time. A key also turns on what no capture shows (which kernel ran longest: the explicit GEMM's
im2col or its GEMM), so a kernel set seen under two keys more evenly labels nothing. One seen
under a second key now and then labels with its first: dropping it leaves the tree the labels of
the other paths alone, and a leaf of few timed calls then names one of those. The H100's forward
FFT learnt from 1,340 of 4,186 captured configurations, none of the 269 that ran the 64 x 64
transforms (123 training calls keyed by their pointwise product, 6 by the region transform), and
its Test-set-I row of 8 images, 64 -> 64 channels 3x3 on 40 x 40 took the 128-point vector FFT of
a leaf of 3 (4.69 ms predicted, 0.117 measured; the algorithm's RMSPE 145.5%); with the majority,
2,220 labels and 26.2% (docs/results.md, "H200, 2026-11-30: the census grown"). An algorithm is
labelled only where the exact rule (one key alone) gives the key its training calls got on
AGREE_MIN of the configurations both timed and captured (at least CHECK_MIN): on the H200's
census it did on 97.0-100% per algorithm, the FFTs' gradients lowest.

The labels join the trees' training points only (Chooser.trees): the nearest-configuration rule
and the trust distance stay the timed calls', since a variant model's trust is in its timed data.
Configurations the algorithm's calls timed, training or held out, are labelled by their calls
alone, as the gates' census labels are (seer.fit.gpu._with_census).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from seer.data import census, configs
from seer.data.keys import PER_BIN, PER_GROUP
from seer.data.prepare import CALL_KEYS
from seer.models.bin_gate import LOOPING_ALGO, launched_bins
from seer.models.chooser import points_of

AGREE_MIN = 0.99  # share of the timed and captured configurations whose key the rule must name
MAJORITY_MIN = 0.95  # share of its training calls a signature's key needs to label the census's
CHECK_MIN = 50  # timed and captured configurations needed to check the rule on an algorithm
ONE_D_ALGO = "FFT_TILING"  # whose calls of 1-D filters get keys of their own (prepare.one_d_variants)

Signature = tuple[frozenset, bool, bool]  # a call's kernel names, whether it looped, whether 1-D


def census_keys(
    rows: pd.DataFrame | None, op: str, algo: str, train: pd.DataFrame, timed: pd.DataFrame, fam: pd.DataFrame
) -> pd.DataFrame:
    """The census's captured configurations of one algorithm that its calls did not time (`fam`:
    the algorithm's prepared rows, training and held out) with `key`, the variant key its
    training rows (`train`, as the chooser learns them) got for the same signature (MAJORITY_MIN of
    them); empty where the census captured none or the exact rule misnames more than
    1 - AGREE_MIN of the checked ones."""
    columns = [*census.DIMS, "key"]
    captured = census.captured(rows, op, algo) if rows is not None else pd.DataFrame()
    if "kernels" in captured:  # a captured call's kernel names (None where uncaptured)
        captured = captured[captured["kernels"].map(lambda k: isinstance(k, tuple))]
    if captured.empty or "kernels" not in captured or train.empty:
        return pd.DataFrame(columns=columns)
    sigs = signatures(captured, op, algo)
    counts = signature_counts(train, timed, op, algo)
    exact = keyed(counts, 1.0)
    named = np.array([exact.get(s) for s in sigs], dtype=object)
    pts = points_of(captured.assign(op=op), op)
    new = untimed(pts, fam, op)
    got = dict(zip(map(tuple, points_of(train, op)), train["key"]))
    truth = np.array([got.get(tuple(p)) for p in pts], dtype=object)
    checked = ~new & (named != None) & (truth != None)  # noqa: E711 (elementwise)
    if checked.sum() < CHECK_MIN or (named[checked] == truth[checked]).mean() < AGREE_MIN:
        return pd.DataFrame(columns=columns)
    most = keyed(counts, MAJORITY_MIN)
    named = np.array([most.get(s) for s in sigs], dtype=object)
    keep = new & (named != None) & np.isin(named.astype(str), train["key"].unique())  # noqa: E711
    return captured[keep][list(census.DIMS)].assign(key=named[keep]).reset_index(drop=True)


def untimed(points: np.ndarray, fam: pd.DataFrame, op: str) -> np.ndarray:
    """Whether each log-configuration is none the family's calls (`fam`, training or held out)
    timed: a configuration they timed is labelled by its calls alone."""
    timed = {tuple(p) for p in points_of(fam.drop_duplicates([c for c in CALL_KEYS if c in fam]), op)}
    return np.array([tuple(p) not in timed for p in points], dtype=bool)


def signature_keys(
    train: pd.DataFrame, timed: pd.DataFrame, op: str, algo: str, majority: float = 1.0
) -> dict[Signature, str]:
    """Each signature of the training calls (their kernel names in `timed`, every kernel a row)
    whose most common key the training calls of it got at least `majority` of the time (1: it
    got one key alone), with that key."""
    return keyed(signature_counts(train, timed, op, algo), majority)


def signature_counts(train: pd.DataFrame, timed: pd.DataFrame, op: str, algo: str) -> dict[Signature, Counter[str]]:
    """Each signature of the training calls with how many of them got each key."""
    ids = [c for c in CALL_KEYS if c in train]
    mine = timed[(timed["op"] == op) & (timed["algo"] == algo) & timed["kernel"].fillna("").astype(str).ne("")]
    names = mine.groupby(ids)["kernel"].agg(lambda k: frozenset(k.astype(str)))
    sets = names.reindex(pd.MultiIndex.from_frame(train[ids].astype(mine[ids].dtypes.to_dict()))).to_numpy()
    key = train["key"].astype(str)
    looped = (key.str.endswith(PER_GROUP) | key.str.contains(PER_BIN, regex=False)).to_numpy()
    seen: dict[Signature, Counter[str]] = {}
    for s, loop, one_d, k in zip(sets, looped, _one_d(train, op, algo), key):
        if isinstance(s, frozenset):
            seen.setdefault((s, bool(loop), bool(one_d)), Counter())[k] += 1
    return seen


def keyed(counts: dict[Signature, Counter[str]], majority: float) -> dict[Signature, str]:
    """Each signature whose most common key has at least `majority` of its calls, with that key."""
    top = {s: c.most_common(1)[0] for s, c in counts.items()}
    return {s: k for s, (k, n) in top.items() if n >= majority * counts[s].total()}


def signatures(captured: pd.DataFrame, op: str, algo: str) -> list[Signature]:
    """Each captured call's signature: its kernel names, whether its launches looped over the
    groups (at least one a group) or, ungrouped, an FFT's bins (at least one a bin), whether 1-D."""
    groups = pd.to_numeric(captured["groups"], errors="coerce").to_numpy(dtype=float)
    launches = pd.to_numeric(captured["launches"], errors="coerce").to_numpy(dtype=float)
    bins = launched_bins(captured, op) if algo == LOOPING_ALGO else np.zeros(len(captured), dtype=bool)
    loop = np.where(groups > 1, launches >= groups, bins)
    one_d = _one_d(captured, op, algo)
    return [(frozenset(k), bool(lo), bool(o)) for k, lo, o in zip(captured["kernels"], loop, one_d)]


def _one_d(rows: pd.DataFrame, op: str, algo: str) -> np.ndarray:
    """Whether each row is a call of a 1-D filter whose key says so (prepare.one_d_variants)."""
    if algo != ONE_D_ALGO or op not in configs.FFT_TILED_OPS:
        return np.zeros(len(rows), dtype=bool)
    return np.asarray(configs.one_d_filters(rows), dtype=bool)
