"""Whether cuDNN runs its direct fallback kernel: a gate in front of a variant chooser.

cuDNN runs several legacy algorithms as a direct kernel (conv2d_grouped_direct,
wgrad2d_grouped_direct) on some configurations and as a GEMM-like kernel on their neighbours,
10-20x apart, on a rule its sizes do not show plainly. The choosers' trees and nearest
configurations learn it among every variant's label, and miss it: on the H100's Test-set-I the
GEMM algorithm's 12 rows predicted over twice their time were all given the direct kernel where
cuDNN ran the explicit GEMM; without them its RMSPE is 25.7%, with them 65.0% (docs/harness.md,
the census). A gate is a classification tree of that one question, grown on every labelled
configuration of the family, both kinds, and asked of every row, within the trust distance or
beyond it: the chooser's candidates are kept to the gate's answer (the direct variants, or the
others), and a row whose candidates hold none of that answer takes the variant of the nearest
training configuration that ran it (of the row's kind where it has one). Where most of the
training configurations nearest a row ran the other kind of kernel, the answer does not bind
and both kinds compete (`gated`).

Labels: the family's timed training calls (whether one of a call's kernels is the direct one)
and, where `python -m cudnn_bench census` asked cuDNN, the kernels of its captured calls, or,
uncaptured, its workspace queries. A family gets a gate where its timed calls ask for no
workspace exactly when they run the direct kernel (the forward GEMM algorithm and the
backward-filter ALGO_1 on the H100 and the H200: tools/direct_fallback.py), so that even an
uncaptured census labels it; with FitOptions.gates "captured" (the default since the gates are
forests, below), also every family the census captured. Before, grown on the calls alone of IMPLICIT_GEMM and
IMPLICIT_PRECOMP_GEMM (4,363 and 4,330 on the H100), whose workspace does not tell, gates raised
their Test-set-I RMSPE (19.5% -> 28.7% and 26.9% -> 45.4% on the H100); with the first census
captures (3,409 configurations on the H200, 7% of its design) they lowered the H200's forward
RMSPE and raised the H100's (33.9% from 38.3%, 27.3% from 24.9%: docs/results.md, "H200,
2026-11-30: the first census on a real GPU"). And only from GATE_MIN labelled configurations:
a tree's error on the forward GEMM was 10.7%, 8.4%, 6.7% and 4.7% from about 460, 920, 1,850 and
3,690 of them; in a trial the
backward-filter ALGO_1's gates, grown on 581 and 575 timed calls, took that algorithm's
Test-set-I RMSPE from 626.4% to 53.2% on the H100 and from 36.2% to 79.2% on the H200, where the
forward GEMM's, grown on 4,257 and 3,368, lowered it on both (65.0% -> 61.9%, 89.5% -> 40.1%;
2026-11-28, docs/results.md).

A gate is grown as a forest of bagged trees (seer.models.forest). On the H100's Test-set-I calls,
one tree answered 96.7% of the forward GEMM's and 95.2% of the filter gradient's ALGO_1 right,
the forest (15 trees) 97.8% and 96.9%. Its split vote also says where the answer is in doubt,
in place of the nearest configurations' vote: with the forest, Test-set-I RMSPE of the forward GEMM
went 28.5% -> 22.9% (H100) and 31.0% -> 21.0% (H200), of the filter gradient's ALGO_1
29.2% -> 25.5% and 32.9% -> 29.3%; asking the neighbours as well gave 25.4% and 29.6% on the H100
(docs/results.md, "A forest for the direct-kernel gate"). Forests grown also for every family the
census captured lowered RMSPE further on both GPUs (the H100's data-gradient ALGO_1 35.2% ->
30.1%, the H200's 29.0% -> 25.1%; its ALGO_0 29.6% -> 21.7%; IMPLICIT_GEMM 19.1% -> 16.3% and
18.6% -> 16.0%), but the H100's data-gradient ALGO_0 (21.1% -> 22.6%).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data import census
from seer.models.forest import Forest, Gate, fit_forest
from seer.models.tree import fit_tree

DIRECT = "grouped_direct"  # what a direct kernel's variant key holds
GATE_MIN = 2000  # labelled configurations a gate is grown from, at least
GATE_LEAF = 3  # the smallest leaf (as the choosers' smallest tree)
# training configurations nearest a row: where most of them ran the other kind of kernel
# (direct or not) than the gate answers, its answer does not bind and both kinds compete (gated)
DOUBT_NEAREST = 5


def is_direct(keys) -> np.ndarray:
    """Whether each variant key (an array of any shape) is a direct kernel's."""
    return np.char.find(np.asarray(keys, dtype=str), DIRECT) >= 0


def ran_direct(kernels) -> bool:
    """Whether a call's kernel names (or variant keys) hold a direct kernel's."""
    return bool(is_direct(list(kernels)).any())


def call_labels(train: pd.DataFrame, column: str = "direct", kind: Callable = is_direct) -> pd.DataFrame:
    """One row per timed call of a family's training rows, `column` whether a variant key of it
    is of `kind` (default: whether a kernel of it is the direct one; a call's rows are its
    kernels: the explicit GEMM's im2col and GEMM)."""
    label = train.groupby("call_id", sort=False)["key"].agg(lambda k: bool(kind(list(k)).any())).rename(column)
    return train.drop_duplicates("call_id").join(label, on="call_id")


def workspace_coded(calls: pd.DataFrame) -> bool:
    """Whether the calls ask for no workspace exactly when they run the direct kernel (then a
    census's workspace queries label configurations no call timed), and ran both."""
    ws = pd.to_numeric(calls["workspace_bytes"], errors="coerce")
    direct = calls["direct"].to_numpy(dtype=bool)
    return bool(ws.notna().all() and direct.any() and not direct.all() and ((ws == 0).to_numpy() == direct).all())


def census_labels(rows: pd.DataFrame, op: str, algo: str, math: str = "fma", workspace: bool = True) -> pd.DataFrame:
    """The census's labelled configurations of one algorithm and `direct`: whether the call,
    captured without running (cudnn_bench.capture), launched a direct kernel; where it was not
    captured and `workspace` (the family's timed calls ask for no workspace exactly when they
    run it: workspace_coded), whether it asked for no workspace."""
    if rows.empty:
        return rows.assign(direct=pd.Series(dtype=bool))
    mine = rows[(rows["op"] == op) & (rows["algo"] == algo) & (rows["status"] == "ok") & (rows["math"] == math)]
    captured = (mine["capture"] == "ok").to_numpy() if "capture" in mine else np.zeros(len(mine), dtype=bool)
    ran = [isinstance(k, tuple) and ran_direct(k) for k in mine.get("kernels", [None] * len(mine))]
    asked = (pd.to_numeric(mine["workspace_bytes"]) == 0).to_numpy(dtype=bool)
    keep = captured | workspace
    direct = np.where(captured, np.asarray(ran, dtype=bool), asked)
    return mine[keep].assign(direct=direct[keep])[[*census.DIMS, "op", "direct"]]


def captured_any(rows: pd.DataFrame | None, op: str, algo: str) -> bool:
    """Whether the census captured any call of the algorithm (its labels need no workspace rule)."""
    if rows is None or rows.empty or "capture" not in rows:
        return False
    return bool(((rows["op"] == op) & (rows["algo"] == algo) & (rows["capture"] == "ok")).any())


def fit_gate(points: np.ndarray, direct: np.ndarray, forest: bool = False) -> Gate | None:
    """The gate grown on labelled log-configurations (None below GATE_MIN of them or where all
    share a label): one tree, or with `forest` bagged trees (seer.models.forest)."""
    direct = np.asarray(direct, dtype=bool)
    if len(points) < GATE_MIN or direct.all() or not direct.any():
        return None
    grow = fit_forest if forest else fit_tree
    return grow(points, direct.astype(np.int64), GATE_LEAF, products=True)


def gated(
    gate: Gate,
    logcfg: np.ndarray,
    cand: np.ndarray,
    labels: list[str],
    points: np.ndarray,
    label_idx: np.ndarray,
    kinds: np.ndarray,
    row_kinds: np.ndarray,
) -> np.ndarray:
    """Candidate label rows kept to the gate's answer: each row's candidates of that kind of
    kernel (the others replaced by its first such candidate), or, where it has none, the label
    of the nearest training point of that kind of kernel (and of the row's kind, grouped or
    not, where there is one).

    Where most of the DOUBT_NEAREST training configurations nearest a row ran the other kind of
    kernel, or the gate's leaf learnt from both kinds (leaf_answer), the answer is in doubt and
    does not bind: the row's own candidates and the nearest training point of each kind of kernel
    join it (the gate's answer stays first, what Chooser.choose names), and the fastest predicted
    is taken, as among any candidates. A wrong direct answer costs 10-20x (the direct kernel's
    model on a layer cuDNN ran as an explicit GEMM), a wrong GEMM answer at most the 90% by which
    it is fast. On Test-set-I the neighbours' doubt took the forward GEMM's RMSPE 61.6% -> 35.4%
    (H100) and 39.7% -> 38.4% (H200), its median 9.1% -> 9.2% and 8.8% -> 9.1% (docs/results.md,
    "Where its nearest configurations disagree, the gate's answer does not bind"); the mixed
    leaf's 33.2% -> 30.6% and 52.2% -> 50.3%, the H200's filter-gradient ALGO_1 38.4% -> 33.7%
    (docs/results.md, "A gate leaf of both kinds does not bind"). A forest's answer is in doubt
    where at least its `doubt` share of trees voted the other way, its nearest configurations not
    asked (seer.models.forest)."""
    want, mixed = leaf_answer(gate, logcfg)
    direct = is_direct(labels)
    point_direct = direct[label_idx]
    ok = direct[cand] == want[:, None]
    cand = cand.copy()
    lost = np.flatnonzero(~ok.any(axis=1))
    for d in (False, True):
        rows = lost[want[lost] == d]
        found = _nearest_of_kernel(d, logcfg[rows], row_kinds[rows], points, label_idx, point_direct, kinds)
        if found is not None:
            cand[rows, 0] = found
            ok[rows, 0] = True
    first = cand[np.arange(len(cand)), np.argmax(ok, axis=1)]
    out = np.where(ok, cand, first[:, None])
    doubt = np.flatnonzero(mixed if isinstance(gate, Forest) else mixed | _outvoted(want, logcfg, points, point_direct))
    if not len(doubt):
        return out
    both = [out[doubt, :1], cand[doubt]]  # the gate's answer first, then every candidate the row had
    for d in (False, True):
        found = _nearest_of_kernel(d, logcfg[doubt], row_kinds[doubt], points, label_idx, point_direct, kinds)
        both.append((found if found is not None else out[doubt, 0])[:, None])
    wide = np.column_stack(both)
    wider = np.repeat(out[:, :1], wide.shape[1], axis=1)  # a repeated candidate changes no pick
    wider[:, : out.shape[1]] = out
    wider[doubt] = wide
    return wider


def _outvoted(want: np.ndarray, logcfg: np.ndarray, points: np.ndarray, point_direct: np.ndarray) -> np.ndarray:
    """Whether most of the DOUBT_NEAREST training configurations nearest each row ran the other
    kind of kernel than the gate's answer."""
    k = min(DOUBT_NEAREST, len(points))
    _, near = cKDTree(points).query(logcfg, k=k)
    near = np.asarray(near).reshape(len(logcfg), k)
    return 2 * (point_direct[near] != want[:, None]).sum(axis=1) > k


def leaf_answer(gate: Gate, logcfg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the gate's answer for each row: its leaf's label, whether its leaf learnt from
    configurations of both kinds of kernel; False for a gate stored before leaves kept their
    members), from one walk of the tree (Tree.candidates: the leaf's label first)."""
    cand = gate.candidates(logcfg)
    return cand[:, 0].astype(bool), (cand != cand[:, :1]).any(axis=1)


def _nearest_of_kernel(
    direct: bool,
    logcfg: np.ndarray,
    row_kinds: np.ndarray,
    points: np.ndarray,
    label_idx: np.ndarray,
    point_direct: np.ndarray,
    kinds: np.ndarray,
) -> np.ndarray | None:
    """The label of the training point nearest each row among those that ran the `direct` kind
    of kernel, of the row's kind (grouped or not) where there is one (None: no point ran it)."""
    pool_any = np.flatnonzero(point_direct == direct)
    if not len(pool_any):
        return None
    out = np.empty(len(logcfg), dtype=label_idx.dtype)
    for kind in (False, True):
        rows = np.flatnonzero(row_kinds == kind)
        if len(rows):
            pool = np.flatnonzero((point_direct == direct) & (kinds == kind))
            pool = pool if len(pool) else pool_any
            _, i = cKDTree(points[pool]).query(logcfg[rows])
            out[rows] = label_idx[pool[np.atleast_1d(i)]]
    return out
