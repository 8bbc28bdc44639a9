"""Where cuDNN runs its direct fallback kernel, and whether its workspace query tells: the case for the census.

    python tools/direct_fallback.py data/h100-sxm [data/h200]

Prints, from a GPU's timed records (every suite and math mode, one line per convolution
algorithm that ever ran a grouped-direct kernel): its calls, the share that ran the direct
kernel, and how often "asks for no workspace" and "runs the direct kernel" agree; whether a
repeat of the same calls (`repeat/`) ever ran the other kernel; with a second GPU folder, on
how many shared configuration x algorithm pairs the two GPUs ran the other kernel or asked for
another workspace; and, for the forward GEMM algorithm's ungrouped FP32 configurations, how
well a classification tree (leaves of >= 3 rows, on the sizes and their products, as the
variant choosers grow them) learns the choice from 1/8, 1/4, 1/2 and all of the other folds
(5-fold cross-validation): the learning curve the census extends; and over 5 folds of its FP32
configurations, how often the gate's answer is right where it binds and where it is in doubt
(seer.models.gate.gated: its nearest configurations disagree, or its leaf learnt from both
kinds), the split that says what the doubt rule trades. Where the GPU's census
(seer.data.census.folder_of) captured calls, on how many configuration x algorithm pairs a timed
call ran the same kernels (the same distinct names) and the same kind (direct or not) as the
captured one: the check that a capture tells what runs.

The same for the FFT's loops over its frequency bins (seer.models.bin_gate), per direction that
looped: how many ungrouped timed configurations looped, the errors (missed loops, false loops)
of a gate's tree grown on a quarter, a half and all of the other folds against the choosers' rule
without a gate (a loop where the 2 nearest looped: Chooser.by_bins), and where the census
captured FFT calls of timed configurations, how often "launched its bins" and "looped" agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import census, records
from seer.data.census import DIMS
from seer.data.configs import conv_products, log_config
from seer.models import bin_gate
from seer.models.chooser import BIN_NEAR, kind_of, points_of
from seer.models.gate import DOUBT_NEAREST, GATE_LEAF, leaf_answer, ran_direct
from seer.models.tree import fit_tree

DIRECT = "grouped_direct"


def calls(rec: pd.DataFrame) -> pd.DataFrame:
    """One row per timed convolution call: its configuration, algorithm, math, workspace and
    whether a kernel it launched is the direct one."""
    rec = rec[rec["op"].str.startswith("conv") & (rec["kernel"].fillna("").str.len() > 0)]
    direct = rec.groupby("call_id")["kernel"].apply(lambda k: k.str.contains(DIRECT).any()).rename("direct")
    return rec.drop_duplicates("call_id").join(direct, on="call_id")


def agreement(c: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (op, algo), g in c.groupby(["op", "algo"]):
        if g["direct"].any():
            none = g["workspace_bytes"] == 0
            out.append((op, algo, len(g), g["direct"].mean(), (none == g["direct"]).mean()))
    return pd.DataFrame(out, columns=["op", "algo", "calls", "direct", "no_workspace_iff_direct"])


def kernel_sets(rec: pd.DataFrame) -> pd.DataFrame:
    """Each timed FP32 call's distinct kernel names (a frozenset) by configuration and algorithm."""
    rec = rec[rec["op"].str.startswith("conv") & (rec["kernel"].fillna("").str.len() > 0) & (rec["math"] == "fma")]
    names = rec.groupby("call_id")["kernel"].agg(lambda k: frozenset(k.astype(str))).rename("timed")
    return rec.drop_duplicates("call_id").join(names, on="call_id").groupby(["op", "algo", *DIMS])["timed"].first()


def capture_agreement(rec: pd.DataFrame, rows: pd.DataFrame) -> str:
    """How often the census's captured calls name what the timed calls of the same pairs ran."""
    got = rows[(rows["capture"] == "ok") & (rows["math"] == "fma")]
    if got.empty:
        return "census: no captured calls"
    captured = got.set_index(["op", "algo", *DIMS])["kernels"].map(frozenset).rename("captured")
    both = kernel_sets(rec).to_frame().join(captured, how="inner")
    if both.empty:
        return f"census: {len(got)} captured calls, none of a timed configuration"
    same = (both["timed"] == both["captured"]).mean()
    kind = (both["timed"].map(ran_direct) == both["captured"].map(ran_direct)).mean()
    return (
        f"census: {len(both)} timed configuration x algorithm pairs captured too; the same kernels on "
        f"{100 * same:.1f}%, the same kind (direct or not) on {100 * kind:.1f}%"
    )


def labels(c: pd.DataFrame) -> pd.DataFrame:
    return c.groupby(["op", "algo", "math", *DIMS]).agg(direct=("direct", "any"), ws=("workspace_bytes", "first"))


def learning_curve(c: pd.DataFrame, folds: int = 5) -> dict[float, float]:
    from sklearn.tree import DecisionTreeClassifier

    g = c[(c["op"] == "conv_fwd") & (c["algo"] == "GEMM") & (c["math"] == "fma") & (c["groups"] == 1)]
    x, y = conv_products(log_config(g, "conv_fwd")), g["direct"].to_numpy()
    fold = np.random.default_rng(0).permutation(len(g)) % folds
    keep = np.random.default_rng(1).random(len(g))
    out = {}
    for frac in (0.125, 0.25, 0.5, 1.0):
        right = 0
        for f in range(folds):
            train = (fold != f) & (keep < frac)
            tree = DecisionTreeClassifier(min_samples_leaf=3, random_state=0).fit(x[train], y[train])
            right += int((tree.predict(x[fold == f]) == y[fold == f]).sum())
        out[frac] = right / len(g)
    return out


def doubt_split(c: pd.DataFrame, folds: int = 5) -> dict[str, tuple[int, float]]:
    """(configurations, the gate's accuracy) over `folds` folds of the forward GEMM's FP32
    configurations, both kinds, split as seer.models.gate.gated splits them: a gate grown as the
    fit grows it (leaves of GATE_LEAF, the sizes' products) on the other folds, against the
    majority of the DOUBT_NEAREST nearest other-fold configurations of the row's kind (grouped
    or not). Where they disagree, or the leaf learnt from both kinds, the gate's answer does not
    bind and the faster-predicted kernel (mostly not the direct one) is taken: the split says how
    often that overrides a right answer."""
    from scipy.spatial import cKDTree

    g = c[(c["op"] == "conv_fwd") & (c["algo"] == "GEMM") & (c["math"] == "fma")]
    g = g.drop_duplicates(DIMS)
    x, y = points_of(g, "conv_fwd"), g["direct"].to_numpy(dtype=bool)
    kinds = kind_of(x, "conv_fwd")
    fold = np.random.default_rng(0).permutation(len(g)) % folds
    answer, mixed, vote = (np.zeros(len(g), dtype=bool) for _ in range(3))
    for f in range(folds):
        test, train = fold == f, fold != f
        gate = fit_tree(x[train], y[train].astype(np.int64), GATE_LEAF, products=True)
        answer[test], mixed[test] = leaf_answer(gate, x[test])
        for kind in (False, True):
            rows, pool = np.flatnonzero(test & (kinds == kind)), np.flatnonzero(train & (kinds == kind))
            if len(rows) and len(pool):
                k = min(DOUBT_NEAREST, len(pool))
                _, i = cKDTree(x[pool]).query(x[rows], k=k)
                vote[rows] = 2 * y[pool][np.asarray(i).reshape(len(rows), k)].sum(axis=1) > k
    right = answer == y
    parts = {
        "binding (its neighbours agree, a leaf of one kind)": ~mixed & (vote == answer),
        "in doubt, the gate says direct, its neighbours not": ~mixed & (vote != answer) & answer,
        "in doubt, the gate says not direct, its neighbours direct": ~mixed & (vote != answer) & ~answer,
        "in doubt, a leaf of both kinds": mixed,
    }
    return {k: (int(m.sum()), float(right[m].mean()) if m.any() else np.nan) for k, m in parts.items()}


def fft_loops(rec: pd.DataFrame) -> pd.DataFrame:
    """One row per ungrouped FP32 FFT configuration a call timed, `loop` whether it looped over
    the bins (seer.data.prepare's per-bin variants)."""
    from seer.data.prepare import VARIANT_OPS, prepare

    fft = rec[rec["op"].isin(VARIANT_OPS) & (rec["algo"] == bin_gate.LOOPING_ALGO) & (rec["math"] == "fma")]
    calls = bin_gate.call_loops(prepare(fft))
    return calls.drop_duplicates(["op", *DIMS])[["op", *DIMS, "loop"]]


def loop_curve(c: pd.DataFrame, op: str, folds: int = 5) -> dict[str, tuple[int, int]]:
    """(missed loops, false loops) over `folds` folds of a direction's ungrouped FFT
    configurations: a gate's tree from a share of the other folds, the 2-nearest rule, and the
    tree from all of them where the nearest looped too (the chooser's rule with a bin gate)."""
    from scipy.spatial import cKDTree

    g = c[c["op"] == op]
    x, y = points_of(g, op), g["loop"].to_numpy(dtype=bool)
    fold = np.random.default_rng(0).permutation(len(g)) % folds
    keep = np.random.default_rng(1).random(len(g))
    said: dict[str, np.ndarray] = {}
    for f in range(folds):
        test = fold == f
        for frac in (0.25, 0.5, 1.0):
            train = (fold != f) & (keep < frac)
            tree = fit_tree(x[train], y[train].astype(np.int64), GATE_LEAF, products=True)
            said.setdefault(f"tree from {frac:g}", np.zeros(len(g), dtype=bool))[test] = tree.predict(x[test]) > 0
        _, i = cKDTree(x[fold != f]).query(x[test], k=BIN_NEAR)
        near = y[fold != f][i]
        said.setdefault(f"{BIN_NEAR} nearest looped", np.zeros(len(g), dtype=bool))[test] = near.all(axis=1)
        both = said["tree from 1"][test] & near[:, 0]
        said.setdefault("tree and the nearest", np.zeros(len(g), dtype=bool))[test] = both
    return {k: (int((~s & y).sum()), int((s & ~y).sum())) for k, s in said.items()}


def loop_agreement(c: pd.DataFrame, rows: pd.DataFrame) -> str:
    """How often the census's captured FFT calls, counted by their launches, loop where the timed
    calls of the same configurations did."""
    asked = pd.concat([bin_gate.census_loops(rows, str(op)) for op in pd.unique(c["op"])], ignore_index=True)
    if asked.empty:
        return "census: no captured ungrouped FFT calls"
    both = c.merge(asked, on=["op", *DIMS], suffixes=("", "_census"))
    if both.empty:
        return f"census: {len(asked)} captured ungrouped FFT calls, none of a timed configuration"
    same = (both["loop"] == both["loop_census"]).mean()
    return (
        f"census: {len(both)} timed ungrouped FFT configurations captured too ({int(both['loop'].sum())} loops); "
        f"launched its bins iff looped on {100 * same:.1f}%"
    )


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        sys.stderr.write("usage: python tools/direct_fallback.py DATA/<gpu> [DATA/<other gpu>]\n")
        return 2
    rec = records.load(Path(argv[0]))
    first = calls(rec)
    pd.set_option("display.width", 200)
    print(f"{argv[0]}: {first['call_id'].nunique()} timed convolution calls")
    print(agreement(first).round(4).to_string(index=False))
    repeat = Path(argv[0]) / "repeat"
    if repeat.is_dir():
        both = labels(first).join(labels(calls(records.load(repeat))), suffixes=("", "_2"), how="inner")
        print(
            f"repeat: {len(both)} configuration x algorithm x math pairs run twice, the other kernel on "
            f"{int((both['direct'] != both['direct_2']).sum())}"
        )
    if len(argv) == 2:
        both = labels(first).join(labels(calls(records.load(Path(argv[1])))), suffixes=("", "_2"), how="inner")
        print(
            f"{argv[1]}: {len(both)} configuration x algorithm x math pairs shared, the other kernel on "
            f"{int((both['direct'] != both['direct_2']).sum())}, another workspace on "
            f"{int((both['ws'] != both['ws_2']).sum())}"
        )
    curve = learning_curve(first)
    n = int(
        (
            (first["op"] == "conv_fwd") & (first["algo"] == "GEMM") & (first["math"] == "fma") & (first["groups"] == 1)
        ).sum()
    )
    print(
        f"forward GEMM, {n} ungrouped FP32 configurations, a tree's cross-validated accuracy from a share "
        "of the training folds: " + ", ".join(f"{k:g}: {100 * v:.1f}%" for k, v in curve.items())
    )
    split = "; ".join(f"{k}: {n}, {100 * a:.1f}% right" for k, (n, a) in doubt_split(first).items())
    print(f"forward GEMM, the gate's answer over 5 folds of its FP32 configurations by whether it binds: {split}")
    loops = fft_loops(rec)
    for op, g in loops.groupby("op", sort=True):
        if g["loop"].any():
            curve = ", ".join(f"{k}: {m} / {f}" for k, (m, f) in loop_curve(loops, str(op)).items())
            print(
                f"{op} FFT, {len(g)} ungrouped FP32 configurations, {int(g['loop'].sum())} of them loops over "
                f"the bins; missed / false loops over 5 folds: {curve}"
            )
    where = census.folder_of(Path(argv[0]), Path(argv[0]).name)
    if where is not None:
        rows = census.read(where)
        print(capture_agreement(rec, rows))
        print(loop_agreement(loops, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
