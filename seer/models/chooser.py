"""Which kernel variant the library launches for a configuration.

cuDNN and cuBLAS pick a kernel (tile size, split-K) by heuristics we cannot read; the choice
is learned from the training rows instead, by one of two rules (`seer.models.candidates`
picks one per convolution algorithm by cross-validation):
- the nearest configurations: the variants the library launched for the k nearest training
  configurations in log-configuration space compete and `seer.predict` takes the one its models
  predict fastest. cuBLAS's heuristics aim at the fastest kernel for each shape, so GEMMs take
  the fastest of the 5 nearest;
- SEER's classification tree (`seer.models.tree`), one per kind of convolution (grouped or
  not), where the library's choice turns on thresholds of single sizes; grown on the training
  rows and the census's captured configurations their kernels label (seer.fit.census_keys).
Beyond the trust distance a tree's leaf proposes its label beside the nearest's variants, a kind
whose tree lost the cross-validation a tree grown for that alone (`reach_trees`).
Either way the trust distance (is a configuration near the data?) is the nearest training
configuration's distance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data import configs
from seer.data.keys import PER_BIN
from seer.data.records import CONV_OPS
from seer.models.bin_gate import is_loop
from seer.models.candidates import LEAVES, Rule
from seer.models.forest import Forest, Gate, gate_from_dict
from seer.models.gate import DOUBT_NEAREST, gated, is_direct
from seer.models.knn import ORDER_MIN_POINTS, condense, decode, encode, query_workers
from seer.models.template import Template, templates
from seer.models.tree import Tree, fit_tree
from seer.models.variant_support import VariantSupport

CANDIDATES = dict.fromkeys(CONV_OPS, 1)  # nearest training configs whose variants compete (default 5)
SUPPORT_NEAREST = 5  # training configs whose variants replace one a row's shape rules out (by_support)
SCAN_POINTS = 8  # single-variant choosers this small are scanned, not searched (see `within`)


def sq_distances(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Squared distance of each row of q to the point p, summed as scipy's k-d tree sums them
    (four running sums over the columns, added, then the leftover columns one by one), so a
    distance found here equals the tree's to the last bit."""
    d = q.shape[1]
    acc = [(q[:, j] - p[j]) ** 2 for j in range(min(d, 4))]
    j = 4
    while j + 4 <= d:
        for a in range(4):
            acc[a] += (q[:, j + a] - p[j + a]) ** 2
        j += 4
    s = acc[0]
    for a in acc[1:]:
        s = s + a
    for i in range(j, d):
        s = s + (q[:, i] - p[i]) ** 2
    return s


@dataclass(frozen=True)
class Space:
    """The coordinates a chooser's k-d tree searches, for the full log-configuration space.

    `groups`: the sizes that vary over the training points, sizes always equal to each other
    in one group (one coordinate: their sum / sqrt(m), which is sqrt(m) x the size on the
    points); `fixed`: the sizes constant over them, at `const`. The squared distance of a config
    to a point is the tree's squared distance plus `offset` (the fixed sizes' distance, and
    the config's spread around its mean within each group: zero on the points). With
    `per_group`, a convolution's channels are counted per group (configs.per_group) before all that."""

    groups: tuple[np.ndarray, ...]
    fixed: np.ndarray
    const: np.ndarray
    per_group: bool = False

    @classmethod
    def of(cls, points: np.ndarray, per_group: bool = False) -> Space:
        points = configs.per_group(points) if per_group else points
        d = points.shape[1]
        const = [j for j in range(d) if np.all(points[:, j] == points[0, j])]
        if len(const) == d:
            const = const[1:]  # a tree needs a dimension
        groups: list[list[int]] = []
        for j in (j for j in range(d) if j not in const):
            home = next((g for g in groups if np.array_equal(points[:, g[0]], points[:, j])), None)
            if home is None:
                groups.append([j])
            else:
                home.append(j)
        return cls(tuple(np.asarray(g) for g in groups), np.asarray(const, dtype=int), points[0, const], per_group)

    @property
    def offsets(self) -> bool:
        """Whether distances have a share outside the tree."""
        return bool(len(self.fixed)) or any(len(g) > 1 for g in self.groups)

    def project(self, x: np.ndarray) -> np.ndarray:
        x = configs.per_group(x) if self.per_group else x
        out = np.empty((len(x), len(self.groups)))
        for i, g in enumerate(self.groups):
            out[:, i] = x[:, g[0]] if len(g) == 1 else x[:, g].sum(axis=1) / np.sqrt(len(g))
        return out

    def offset(self, x: np.ndarray) -> np.ndarray:
        x = configs.per_group(x) if self.per_group else x
        off = ((x[:, self.fixed] - self.const) ** 2).sum(axis=1)
        for g in self.groups:
            if len(g) > 1:
                v = x[:, g]
                off += ((v - v.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        return off


@dataclass
class Chooser:
    op: str
    algo: str
    labels: list[str]  # variant keys
    points: np.ndarray  # log-configurations of training rows
    label_idx: np.ndarray  # index into labels per point
    candidates: int | None = None  # nearest training configs whose variants compete (None: CANDIDATES)
    trees: dict[bool, Tree] = field(default_factory=dict)  # the tree rule: a tree per kind (grouped or not)
    # how many of the points, the leading ones, propose their variants to the nearest rule
    # (knn.condense: label boundaries and every INTERIOR_KEEP-th other point); None: all. Every
    # point measures the trust distance: measured on the condensed points alone, a config amid
    # one variant's training rows lay beyond trust and took the variants of a far boundary (the
    # H100's FFT Test-set-I row 128 x 64 -> 1024 on 10 x 10, 9 x 9: 1.12 from a training config,
    # 2.87 from a kept one, given a variant predicted 16x its time; FFT's RMSPE 145.7% -> 38.3%)
    voters: int | None = None
    # the nearest rule finds a grouped convolution's nearest by channels per group (Space.per_group)
    # where that proposed the variants better (seer.models.candidates.per_group_wins); the
    # trust distance stays the sizes' own (_trust)
    per_group: bool = False
    # whether cuDNN runs its direct fallback kernel (seer.models.gate): where fitted, every row's
    # candidates are kept to its answer
    gate: Gate | None = None
    # whether cuDNN's FFT loops its GEMM over the frequency bins (seer.models.bin_gate): where
    # fitted, it and the nearest configuration name the loops of ungrouped rows (by_bins)
    bin_gate: Gate | None = None
    # per kind of row (grouped or not) whose tree the cross-validation did not keep, the simplest
    # tree (leaves of REACH_LEAF rows, on the sizes) grown anyway: it proposes beyond the trust
    # distance only (_with_leaf), never within it
    reach: dict[bool, Tree] = field(default_factory=dict)
    _tree: cKDTree | None = field(default=None, repr=False, compare=False)
    _voter_tree: cKDTree | None = field(default=None, repr=False, compare=False)
    _space: Space | None = field(default=None, repr=False, compare=False)  # the tree's coordinates
    # of_kind's choosers and filter_variants: not carried by dataclasses.replace, so a copy with
    # other candidates builds its own
    _kinds: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _filters: dict | None = field(default=None, init=False, repr=False, compare=False)
    _templates: dict | None = field(default=None, init=False, repr=False, compare=False)  # direct_templates'
    _bins: tuple | None = field(default=None, init=False, repr=False, compare=False)  # bin_loops'
    _plain: Chooser | None = field(default=None, init=False, repr=False, compare=False)  # _trust's
    _support: VariantSupport | None = field(default=None, init=False, repr=False, compare=False)  # by_support's

    def _index(self) -> cKDTree:
        """The k-d tree in the full configuration space, kept small (Space): sizes constant over
        the training points leave the tree and add their share to every distance afterwards;
        sizes that always equal each other (height and width of square layers) enter as one
        coordinate, their mean scaled, and a config's spread across them adds to its distance.
        The distances are the full space's: no size is ignored."""
        if self._tree is None:
            self._space = Space.of(self.points, self.per_group)
            self._tree = cKDTree(
                self._space.project(self.points), leafsize=32, balanced_tree=False, compact_nodes=False
            )
        return self._tree

    @property
    def sorts_queries(self) -> bool:
        """Whether queries in knn.locality_order make this chooser's searches faster (they do
        in trees of many points; in small ones sorting costs more than it saves)."""
        return len(self.points) >= ORDER_MIN_POINTS

    def nearest(self, logcfg: np.ndarray, k: int = 1, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(log2 distance to the nearest training config, label indices of the k nearest).

        `order` (knn.locality_order of the rows) only makes the search faster: the rows are
        looked up in that order, each on its own, and answered in theirs."""
        tree = self._index()
        assert self._space is not None
        q = self._space.project(logcfg if order is None else logcfg[order])
        workers = query_workers(len(q))
        dist = None
        if self.voters is None:
            k = min(k, len(self.points))
            dist, idx = tree.query(q, k=k, workers=workers)
            labels = self.label_idx
        else:  # the variants of the voters', the distance to every point (below)
            k = min(k, self.voters)
            _, idx = self._voter_index().query(q, k=k, workers=workers)
            labels = self.label_idx[: self.voters]
        if order is not None:
            idx = _unsort(idx, order)
        if dist is None or self.per_group:  # the trust distance stays the sizes' own (_trust)
            nearest = (self._trust() if self.per_group else self).distance(logcfg, order)
        else:
            nearest = _unsort(dist, order) if order is not None else dist
            nearest = nearest if nearest.ndim == 1 else nearest[:, 0]
            if self._space.offsets:  # the share of the sizes outside the tree
                nearest = self._with_offset(nearest, logcfg)
        return nearest, (labels[idx][:, None] if k == 1 else labels[idx])

    def distance(self, logcfg: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
        """The log2 distance of each row to the nearest training config (every point, in this
        chooser's space; `order` as in `nearest`)."""
        tree = self._index()
        assert self._space is not None
        q = self._space.project(logcfg if order is None else logcfg[order])
        dist, _ = tree.query(q, k=1, workers=query_workers(len(q)))
        if order is not None:
            dist = _unsort(dist, order)
        return self._with_offset(dist, logcfg) if self._space.offsets else dist

    def _trust(self) -> Chooser:
        """This chooser in the sizes as they are (per_group off), which measures the trust
        distance: counting channels per group only picks whose variants are proposed. Measured
        per group, a 4-group layer of 56 channels a group lay within the H200's grouped tree's
        data, whose leaf gave IMPLICIT_PRECOMP_GEMM a variant 6x faster than the one cuDNN ran."""
        if self._plain is None:
            self._plain = dataclasses.replace(self, per_group=False, _tree=None, _voter_tree=None, _space=None)
        return self._plain

    def _voter_index(self) -> cKDTree:
        """The k-d tree of the voters, in the coordinates of `_index` (a config's offset is the
        same to every point, so the voters rank as in the full space)."""
        if self._voter_tree is None:
            assert self._space is not None and self.voters is not None
            self._voter_tree = cKDTree(
                self._space.project(self.points[: self.voters]), leafsize=32, balanced_tree=False, compact_nodes=False
            )
        return self._voter_tree

    def _with_offset(self, dist: np.ndarray, logcfg: np.ndarray) -> np.ndarray:
        """sqrt(dist**2 + the squared distance in the sizes left out of the tree (Space.offset)),
        computed in place where `dist` is the tree's own array."""
        assert self._space is not None
        off = self._space.offset(logcfg)
        out = dist if dist.base is None else np.empty_like(dist)
        np.square(dist, out=out)
        out += off
        return np.sqrt(out, out=out)

    def nearest_within(
        self, logcfg: np.ndarray, radius: float, k: int = 1, order: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(label indices of the k nearest, whether the nearest lies within `radius`): what
        `nearest` answers, compared with the radius. Where every point has one label only the
        comparison is left to find (`within`)."""
        if len(self.labels) > 1:
            dist, lab = self.nearest(logcfg, k, order)
            return lab, dist <= radius
        k = min(k, len(self.points))
        return np.zeros((len(logcfg), k), dtype=self.label_idx.dtype), self.within(logcfg, radius, order)

    def propose(
        self, logcfg: np.ndarray, radius: float, order: np.ndarray | None = None, inside_too: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """(label indices of each row's candidate variants, whether its nearest training config
        lies within `radius`; all False where not `inside_too` and the chooser has no tree,
        kept or for reach).
        A chooser with trees answers its tree leaf's variants within the radius, where it learnt
        the library's choice, for the kinds of row (grouped or not) it has a tree of; the k
        nearest's variants beyond it (there the tree's thresholds say little: a grid of batch
        128 has none on the batch, and the fastest of the nearest's variants follows the
        library's heuristic to small kernels for small problems), and for those kinds the leaf's
        label with them (_with_leaf); for the other kinds the k nearest's alone within the
        radius, and beyond it with their reach tree's leaf label where they have one."""
        if not self.trees and not self.reach:
            if not inside_too:
                cand, inside = self.nearest(logcfg, self.k, order)[1], np.zeros(len(logcfg), dtype=bool)
            else:
                cand, inside = self.nearest_within(logcfg, radius, self.k, order)
            return self._settled(logcfg, cand), inside
        cand, inside = self.nearest_within(logcfg, radius, self.k, order)
        cand = self._with_leaf(logcfg, cand, ~inside)
        treed = inside & np.isin(kind_of(logcfg, self.op), list(self.trees))  # a kind without a tree keeps the nearest
        if treed.any():
            members = self._direct_doubted(self.tree_candidates(logcfg[treed]), cand[treed])
            cand = _widened(cand, members.shape[1])
            cand[treed] = _widened(members, cand.shape[1])
        return self._settled(logcfg, cand), inside

    def _direct_doubted(self, members: np.ndarray, near: np.ndarray) -> np.ndarray:
        """Tree leaf members (label rows), each row whose leaf answers a direct kernel
        (seer.models.gate) joined by its `near` candidates (the variants of its nearest training
        configurations), the fastest predicted taken. cuDNN runs its direct kernel on some
        configurations and a GEMM-like kernel 10-20x faster on their neighbours, on a rule the
        sizes do not show, and the costs are lopsided: a direct kernel named where the other ran
        errs +900-1,900%, the other named where the direct ran about -90%. The H200's Test-set-I
        IMPLICIT_GEMM row of 1 image, 1,024 -> 2,048 channels 1x1 on 18 x 18 took the direct kernel
        of its leaf (2.89 ms predicted, 0.17 measured; that algorithm's RMSPE 44.9%; 20.6% so;
        docs/results.md, "The census's kernels label the choosers' trees")."""
        labels = np.asarray(self.labels)
        direct = is_direct(labels[members[:, 0]])
        if not direct.any():
            return members
        return np.column_stack([members, np.where(direct[:, None], near, members[:, :1])])

    def _with_leaf(self, logcfg: np.ndarray, cand: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Candidate label rows, the `rows` (beyond the trust distance) of a kind with a tree,
        kept or grown for reach alone (`reach`), given their leaf's label as one more candidate
        (the others one more copy of their first). The nearest
        training configurations can lie far off in sizes the tree's thresholds do not turn on:
        the H100's Test-set-I backward-filter ALGO_1 row of 48 images, 448 channels in 64
        groups, 1x1 filter on 7 x 7 took the per-group loop of its 5 nearest (3x3 layers), 0.80
        ms predicted against 0.008 measured, where the grouped tree's leaf names the direct
        kernel cuDNN ran. With the leaf's label, that algorithm's RMSPE 626.4% -> 35.2%, the
        H200's forward IMPLICIT_PRECOMP_GEMM 57.4% -> 30.6%, no algorithm's up by more than 0.7
        points (docs/results.md, "Beyond the trust distance the tree's leaf proposes too").
        The reach trees carry that to the kinds whose tree lost the cross-validation within the
        data: the H100's backward-filter ALGO_3 keeps no grouped tree, and that same layer took
        its nearest's per-group loop, 0.46 ms against 0.008 (the algorithm's RMSPE 373.4%), where
        the reach tree's leaf names the direct kernel cuDNN ran (19.4%; docs/results.md, "Beyond
        the trust distance every kind's tree proposes")."""
        kinds = kind_of(logcfg, self.op)
        out = np.column_stack([cand, cand[:, 0]])
        hit = False
        for kind in (False, True):
            tree = self.trees.get(kind, self.reach.get(kind))
            mine = np.flatnonzero(rows & (kinds == kind))
            if tree is not None and len(mine):
                out[mine, -1] = tree.candidates(logcfg[mine])[:, 0]
                hit = True
        return out if hit else cand

    def _settled(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """The candidates kept to the shape rules (_kept), to the gate's answer (_gated), and to
        the shape rules again. Where a row's candidates hold no kernel of the gate's kind, the
        gate brings the nearest training configuration's, which may be one the row cannot run:
        the depthwise 3x3 template for a 5x5 depthwise layer, 15 of the H200's Test-set-I forward
        IMPLICIT_GEMM rows at -20 to -32% each, -4 to +10% once kept again. With that, and
        by_support's replacements kept to the templates a row runs, the H100's backward-filter
        ALGO_1 went 25.5% -> 24.9% and the H200's backward-data ALGO_1 25.2% -> 23.1%, no
        algorithm up by more than 0.1 point (docs/results.md, "The gate's kernel kept to the
        shapes it runs")."""
        return self._kept(logcfg, self._gated(logcfg, self._kept(logcfg, cand)))

    def _kept(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """The candidates kept to what the configuration's filter shape decides (by_filter), to
        the direct kernel's templates it runs (by_template) and to a bin loop only where its
        nearest training configurations looped too (by_bins)."""
        return self.by_support(logcfg, self.by_bins(logcfg, self.by_template(logcfg, self.by_filter(logcfg, cand))))

    def by_support(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Candidate label rows, a candidate the row's shape rules out (seer.models.variant_support:
        a variant never run on the row's filter, stride, dilation, channels a group or padding,
        where its algorithm ran that value often) replaced: the SUPPORT_NEAREST training
        configurations nearest the row, of its kind, whose variants its shape does not rule out
        propose theirs (the fastest predicted taken, as among any candidates). The nearest rule
        gave the H100's filter-gradient depthwise kernel to layers of 2 channels a group and to
        dilated ones, 4-30x short (docs/results.md, "A kernel proposed only for shapes it runs"),
        and the forward direct kernel to a padded layer, 5.7x over (docs/results.md, "Padding
        among the shapes a kernel runs"). No replacement is a direct kernel's template the row
        cannot run (`unrunnable`): the H100's Test-set-I layer of 4 groups of 7 channels, 7x7,
        was given the 3x3 template of 2 channels a group, 62% short."""
        support = self.support()
        if support is None:
            return cand
        kinds = kind_of(logcfg, self.op)
        ruled = support.ruled_out(logcfg, kinds)
        bad = np.take_along_axis(ruled, cand, axis=1)
        rows = np.flatnonzero(bad.any(axis=1))
        if not len(rows):
            return cand
        width = cand.shape[1]
        out = _widened(cand, width + SUPPORT_NEAREST - 1)
        point_kinds = kind_of(self.points, self.op)
        barred = ruled[rows] | self.unrunnable(logcfg[rows])
        patterns, which = np.unique(np.column_stack([kinds[rows], barred]), axis=0, return_inverse=True)
        for p, pattern in enumerate(patterns):  # a few: rows alike in kind and in what is ruled out
            at = rows[which.ravel() == p]
            allowed = np.flatnonzero((point_kinds == pattern[0]) & ~pattern[1:][self.label_idx])
            if not len(allowed):
                continue
            k = min(SUPPORT_NEAREST, len(allowed))
            idx = cKDTree(self.points[allowed]).query(logcfg[at], k=k)[1].reshape(len(at), k)
            near = self.label_idx[allowed[idx]]  # (rows, k), the nearest first
            sub = out[at]
            sub[:, :width] = np.where(bad[at], near[:, :1], sub[:, :width])
            sub[:, width : width + k - 1] = near[:, 1:]
            sub[:, width + k - 1 :] = near[:, :1]
            out[at] = sub
        return out

    def unrunnable(self, logcfg: np.ndarray) -> np.ndarray:
        """(rows, labels): True for a direct-kernel template (seer.models.template) the row cannot run."""
        out = np.zeros((len(logcfg), len(self.labels)), dtype=bool)
        for lab, (t, _) in self.direct_templates().items():
            out[:, lab] = ~t.admits(logcfg, self.op)
        return out

    def support(self) -> VariantSupport | None:
        """The shapes each variant is ruled out of (by_support), worked out once per chooser; None
        where none is (a GEMM's, or a single variant's)."""
        if self._support is None and len(self.labels) > 1 and self.op in CONV_OPS:
            self._support = VariantSupport.of(
                self.points, self.label_idx, kind_of(self.points, self.op), len(self.labels)
            )
        return self._support if self._support is not None and self._support.rules_out else None

    def by_bins(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Candidate label rows with a per-bin loop (VariantKey.per_bin) kept only where the
        row's BIN_NEAR nearest training configurations all ran one; elsewhere it gives way to the
        same kernel's batched variant (else to the nearest's variant). cuDNN's FFT loops its GEMM
        over the frequency bins on a rule its sizes do not show, and a loop costs 10-100x the
        batched call: timed per bin (VariantFit.binned), a tree leaf of loops answered 77 ms for
        the H200's 6 x 256 -> 160 1x1 layer on 128 x 128 (7.1 ms measured, batched), whose nearest
        training call was batched. Choosers refitted on 4/5 of the FFT's training calls named
        loops for the other fifth at cross-validated RMSPE 147.3% on the H100 without this rule,
        37.7% with one nearest, 37.7% with two (the H200: 38.3%, 38.2%, 32.6%; docs/results.md,
        "The FFT's bin loops timed per bin, named where the nearest looped"). Where the census
        labelled loops (`bin_gate`), the gate and the nearest answer for the ungrouped rows
        instead (_bin_gated), both ways."""
        loops, batched, _ = self.bin_loops()
        if not len(loops):
            return cand
        ruled = np.ones(len(cand), dtype=bool)
        out = cand
        if self.bin_gate is not None:
            plain = ~kind_of(logcfg, self.op)
            if plain.any():
                out = cand.copy()
                out[plain] = self._bin_gated(logcfg[plain], cand[plain])
            ruled = ~plain
        rows = np.flatnonzero(ruled & np.isin(out, loops).any(axis=1))
        if not len(rows):
            return out
        nk = self.nearest(logcfg[rows], BIN_NEAR)[1]
        doubt = ~np.isin(nk, loops).all(axis=1)
        if not doubt.any():
            return out
        rows, near = rows[doubt], nk[doubt, 0]
        out = out.copy()
        sub = out[rows]
        swap = np.isin(sub, loops)
        other = batched[sub]
        sub[swap] = np.where(other >= 0, other, near[:, None])[swap]
        out[rows] = sub
        return out

    def _bin_gated(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Candidate label rows kept to the bin gate's answer, confirmed by the nearest training
        configuration: a loop where the gate says the call loops and the nearest one looped (a
        batched candidate gives way to the same kernel's loop, where one was timed), else the same
        kernel batched (where none was timed, the nearest's variant). A false loop costs 10-100x
        where a missed one costs 90%: over 5 folds of the timed ungrouped forward calls, a tree of
        them missed 31 loops and named 34 false ones on the H100, 36 and 31 on the H200, the tree
        where the nearest looped too 46 and 8, 51 and 4, the two nearest alone 56 and 5, 52 and 10
        (tools/direct_fallback.py; seer.models.bin_gate)."""
        assert self.bin_gate is not None
        loops, batched, looped = self.bin_loops()
        near = self.nearest(logcfg, 1)[1][:, 0]
        want = self.bin_gate.predict(logcfg).astype(bool) & np.isin(near, loops)
        is_loop = np.isin(cand, loops)
        out = cand.copy()
        up = want[:, None] & ~is_loop & (looped[cand] >= 0)
        out[up] = looped[cand][up]
        down = ~want[:, None] & is_loop
        out[down] = np.where(batched[cand] >= 0, batched[cand], near[:, None])[down]
        return out

    def bin_loops(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the label indices of per-bin loops, each label's batched counterpart: the index of
        the same key without PER_BIN, -1 where none, and each label's loop: the index of the
        key with PER_BIN, -1 where none); worked out once per chooser (by_bins asks each query)."""
        if self._bins is None:
            index = {lab: i for i, lab in enumerate(self.labels)}
            loops = np.flatnonzero(is_loop(self.labels))
            batched = np.array([index.get(lab.removesuffix(PER_BIN), -1) for lab in self.labels], dtype=int)
            looped = np.array([index.get(lab + PER_BIN, -1) for lab in self.labels], dtype=int)
            self._bins = (loops, batched, looped)
        return self._bins

    def _gated(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """The candidates kept to the gate's answer (seer.models.gate), where there is a gate."""
        if self.gate is None:
            return cand
        return gated(
            self.gate,
            logcfg,
            cand,
            self.labels,
            self.points,
            self.label_idx,
            kind_of(self.points, self.op),
            kind_of(logcfg, self.op),
        )

    def filter_variants(self) -> dict[tuple, int]:
        """The variant of each filter shape, where the training rows show that the filter shape
        alone decides it: every shape the library ran with one variant (of each kind, grouped or
        not), two variants at least. cuDNN's Winograd non-fused runs F(4x4, 3x3) on 3x3 filters
        and F(9x9, 5x5) on 5x5; its nearest configurations beyond the trust distance proposed the
        other and a 3x3 layer took the 5x5 transform's time (the H100's Test-set-I: 2 images of
        256 -> 819 channels on 100 x 136, 1.02 ms predicted, 5.38 measured). Empty elsewhere."""
        if self.op not in CONV_OPS:
            return {}
        if self._filters is None:
            out: dict[tuple, int] = {}  # (grouped, log2 R, log2 S): label index
            kinds = kind_of(self.points, self.op)
            for kind in (False, True):
                filters = self.points[kinds == kind][:, configs.FILTER_COLUMNS].tolist()
                shapes: dict[tuple[float, ...], set[int]] = {}
                for rs, label in zip(map(tuple, filters), self.label_idx[kinds == kind].tolist()):
                    shapes.setdefault(rs, set()).add(label)
                if all(len(v) == 1 for v in shapes.values()) and len(set().union(*shapes.values())) > 1:
                    out.update({(kind, *rs): v.pop() for rs, v in shapes.items()})
            self._filters = out
        return self._filters

    def by_filter(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Candidate label rows, each row of a filter shape that decides the variant
        (filter_variants) given that variant alone."""
        known = self.filter_variants()
        if not known:
            return cand
        r, s = logcfg[:, configs.FILTER_COLUMNS].astype(np.float32).astype(np.float64).T  # as points_of stores them
        kinds = kind_of(logcfg, self.op)
        label = np.full(len(logcfg), -1)
        for (kind, kr, ks), variant in known.items():  # a few filter shapes
            label[(kinds == kind) & (r == kr) & (s == ks)] = variant
        decided = label >= 0
        if decided.any():
            cand = cand.copy()
            cand[decided] = label[decided, None]
        return cand

    def by_template(self, logcfg: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Candidate label rows with each direct kernel's template (seer.models.template) one
        the row runs: a template the row cannot run, or one less specialised than the most
        specialised it can, gives way to that one, among the templates whose training rows ran
        the row's filter shape (a model that never saw the shape stays out: on the H100 the
        generic data-gradient template, trained on 5x5 and 7x7 filters, answered 4.7-13x the
        time of 1x1 layers). Where none of them can run the row, the candidate stays."""
        temps = self.direct_templates()
        if len(temps) < 2:
            return cand
        labs = np.fromiter(temps, dtype=cand.dtype)
        runs = ~self.unrunnable(logcfg)[:, labs].T  # per template, the rows that can run it
        shape = logcfg[:, configs.FILTER_COLUMNS]
        score = np.full((len(logcfg), len(labs)), -1)
        for j, (t, seen) in enumerate(temps.values()):
            known = (np.abs(shape[:, None, :] - seen[None]) < 1e-3).all(axis=2).any(axis=1)
            score[runs[j] & known, j] = t.rank
        best, top = labs[score.argmax(axis=1)], score.max(axis=1)
        out = cand.copy()
        for j, (lab, (t, _)) in enumerate(temps.items()):
            give = (cand == lab) & ((top >= 0) & (~runs[j] | (top > t.rank)))[:, None]
            out[give] = np.broadcast_to(best[:, None], cand.shape)[give]
        return out

    def direct_templates(self) -> dict[int, tuple[Template, np.ndarray]]:
        """Each direct-kernel template's label index: its Template and the filter shapes (log2
        R, S) its training points ran; worked out once per chooser (by_template asks each query)."""
        if self._templates is None:
            temps = templates(self.labels, self.op)  # none for a GEMM, whose points hold no filter
            shapes = self.points[:, configs.FILTER_COLUMNS] if temps else self.points
            self._templates = {lab: (t, np.unique(shapes[self.label_idx == lab], axis=0)) for lab, t in temps.items()}
        return self._templates

    def tree_candidates(self, logcfg: np.ndarray) -> np.ndarray:
        """The label indices of each row's tree leaf members (Tree.candidates: the leaf's
        label first), by its kind's tree (the nearest config's label where the chooser has no
        tree of that kind)."""
        grouped = kind_of(logcfg, self.op)
        parts = {}
        for kind in (False, True):
            rows = np.flatnonzero(grouped == kind)
            if len(rows):
                tree = self.trees.get(kind)
                parts[kind] = (
                    rows,
                    tree.candidates(logcfg[rows]) if tree is not None else self.nearest(logcfg[rows])[1],
                )
        width = max(c.shape[1] for _, c in parts.values())
        out = np.empty((len(logcfg), width), dtype=self.label_idx.dtype)
        for rows, c in parts.values():
            out[rows] = _widened(c, width)
        return out

    @property
    def rule(self) -> str:
        """How the variant is chosen, in words (what `seer.fit` reports)."""
        near = f"the fastest of the {self.k} nearest's variants" if self.k > 1 else "the nearest's variant"
        if self.per_group:
            near += " (a grouped convolution's nearest by channels per group)"
        rule = self._rule(near)
        if self.filter_variants():
            rule += "; a filter shape that ran one variant, that variant"
        if self.support() is not None:
            rule += (
                "; no variant for a filter, stride, dilation, channels a group or padding its algorithm ran often"
                " without it"
            )
        if isinstance(self.gate, Forest):
            rule += (
                f"; kept to the answer of {len(self.gate.trees)} bagged trees to whether cuDNN runs its direct"
                f" kernel where fewer than {self.gate.doubt:.0%} of them voted the other way (seer.models.gate)"
            )
        elif self.gate is not None:
            rule += (
                "; kept to a tree's answer to whether cuDNN runs its direct kernel where most of the"
                f" {DOUBT_NEAREST} nearest training configurations agree and its leaf learnt from one kind"
                " (seer.models.gate)"
            )
        if self.bin_gate is not None:
            rule += "; a loop over the FFT's bins where a tree grown on the census says so (seer.models.bin_gate)"
        return rule

    def _rule(self, near: str) -> str:
        if self.reach:
            kinds = " and ".join(f"{KINDS[g]} convolutions" for g in sorted(self.reach))
            near += f" (beyond the trust distance, with a tree's leaf of >= {REACH_LEAF} rows for {kinds})"
        if not self.trees:
            return near
        if len(self.trees) < sum(self.kinds):  # one kind has a tree, the other the nearest rule
            kind, tree = next(iter(self.trees.items()))
            return (
                f"a classification tree for {KINDS[kind]} convolutions (leaves of >= {tree.min_leaf} rows) within "
                f"the trust distance, beyond it and for {KINDS[not kind]} ones {near}"
            )
        trees = ", ".join(f"{KINDS[g]} >= {t.min_leaf}" for g, t in sorted(self.trees.items()))
        return f"a classification tree (leaves of {trees} rows) within the trust distance, beyond it {near}"

    def within(self, logcfg: np.ndarray, radius: float, order: np.ndarray | None = None) -> np.ndarray:
        """Whether the nearest training config lies within `radius`: `nearest(logcfg)[0] <=
        radius`, without finding the nearest where none is that close. A few points are
        scanned (a tree of at most its leaf size holds one leaf, which the tree scans the same
        way: same sums, same minimum); else the tree is asked only about points inside the
        radius (a hair more: the bound is a strict one)."""
        if self.per_group:
            return self._trust().within(logcfg, radius, order)
        tree = self._index()
        assert self._space is not None
        n = len(logcfg)
        if len(self.points) <= min(SCAN_POINTS, tree.leafsize):
            q = self._space.project(logcfg)
            pts = tree.data
            s = sq_distances(q, pts[0])
            for p in pts[1:]:
                np.minimum(s, sq_distances(q, p), out=s)
            dist = np.sqrt(s)
        else:
            q = self._space.project(logcfg if order is None else logcfg[order])
            bound = radius * (1 + 1e-9) + 1e-12
            dist, _ = tree.query(q, k=1, distance_upper_bound=bound, workers=query_workers(n))
            if order is not None:
                dist = _unsort(dist, order)
        if self._space.offsets:
            dist = self._with_offset(dist, logcfg)
        return dist <= radius

    @property
    def kinds(self) -> tuple[bool, bool]:
        """Whether it learnt from (ungrouped, grouped) convolutions: a grouped kernel is no model
        of an ungrouped call, nor the reverse, so each kind of row is served by its own kind."""
        if self.op not in CONV_OPS:
            return (True, True)
        learnt = kind_of(self.points, self.op)
        return (bool((~learnt).any()), bool(learnt.any()))

    def of_kind(self, grouped: bool) -> Chooser:
        """The chooser over the training points of one kind (grouped or not), for the rows of that kind."""
        key = KINDS[grouped]
        if key not in self._kinds:
            keep = kind_of(self.points, self.op) == grouped
            trees = {grouped: self.trees[grouped]} if grouped in self.trees else {}
            reach = {grouped: self.reach[grouped]} if grouped in self.reach else {}
            voters = None if self.voters is None else int(keep[: self.voters].sum())  # still the leading ones
            if voters == 0:  # no voter of this kind: its points vote
                voters = None
            self._kinds[key] = Chooser(
                self.op,
                self.algo,
                self.labels,
                self.points[keep],
                self.label_idx[keep],
                self.candidates,
                trees,
                voters,
                self.per_group and grouped,
                self.gate,
                self.bin_gate,
                reach,
            )
        return self._kinds[key]

    def choose(self, batch: configs.ConfigBatch | pd.DataFrame) -> np.ndarray:
        """The variant key for each config row."""
        if len(self.labels) == 1:
            return np.full(len(batch), self.labels[0], dtype=object)
        if isinstance(batch, pd.DataFrame):
            batch = configs.ConfigBatch.of(batch, self.op)
        x = batch.logcfg
        cand = self.tree_candidates(x) if self.trees else self.nearest(x)[1]
        return np.asarray(self.labels, dtype=object)[self._settled(x, cand)[:, 0]]

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "algo": self.algo,
            "labels": self.labels,
            "points": encode(self.points),
            "label_idx": self.label_idx.tolist(),
            **({"voters": self.voters} if self.voters is not None else {}),
            **({"per_group": True} if self.per_group else {}),
            **({"candidates": self.candidates} if self.candidates is not None else {}),
            **({"trees": _named_by_kind(self.trees)} if self.trees else {}),
            **({"gate": self.gate.to_dict()} if self.gate is not None else {}),
            **({"bin_gate": self.bin_gate.to_dict()} if self.bin_gate is not None else {}),
            **({"reach_trees": _named_by_kind(self.reach)} if self.reach else {}),
        }

    @property
    def k(self) -> int:
        """How many nearest training configs' variants compete: fitted per family
        (seer.models.candidates), else the op's default (files fitted before that)."""
        return self.candidates if self.candidates is not None else CANDIDATES.get(self.op, 5)

    @classmethod
    def from_dict(cls, d: dict) -> Chooser:
        points, idx = decode(d["points"]), np.asarray(d["label_idx"], dtype=int)
        trees = _keyed_by_kind(d.get("trees", {}))
        voters = int(d["voters"]) if "voters" in d else None
        per_group = bool(d.get("per_group", False))
        gate = gate_from_dict(d["gate"]) if "gate" in d else None
        bin_gate = gate_from_dict(d["bin_gate"]) if "bin_gate" in d else None
        reach = _keyed_by_kind(d.get("reach_trees", {}))
        return cls(
            d["op"],
            d["algo"],
            list(d["labels"]),
            points,
            idx,
            d.get("candidates"),
            trees,
            voters,
            per_group,
            gate,
            bin_gate,
            reach,
        )


def _named_by_kind(trees: Mapping[bool, Tree]) -> dict:
    """Trees per kind of convolution as a fits file keeps them: keyed by the kind's name (KINDS)."""
    return {KINDS[g]: t.to_dict() for g, t in sorted(trees.items())}


def _keyed_by_kind(named: Mapping[str, dict]) -> dict[bool, Tree]:
    """_named_by_kind read back: each tree under its kind (grouped or not)."""
    return {g: Tree.from_dict(named[name]) for g, name in KINDS.items() if name in named}


def _widened(cand: np.ndarray, width: int) -> np.ndarray:
    """Candidate label rows at least `width` wide, each padded with its first (a repeated
    candidate changes no pick: the fastest of a row's candidates is taken)."""
    if cand.shape[1] >= width:
        return cand
    return np.column_stack([cand, np.repeat(cand[:, :1], width - cand.shape[1], axis=1)])


def _unsort(a: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rows answered in `order` put back in the order of the queries."""
    out = np.empty_like(a)
    out[order] = a
    return out


def fit_chooser(
    train: pd.DataFrame,
    op: str,
    algo: str,
    keys: pd.Series,
    candidates: int | None = None,
    trees: Mapping[bool, Rule] | None = None,
    per_group: bool = False,
    gate: Gate | None = None,
    bin_gate: Gate | None = None,
    labelled: pd.DataFrame | None = None,
) -> Chooser:
    """Learn the variant choice from training rows (`keys`: each row's variant key): the
    nearest configurations (`candidates` of them compete; with `per_group`, a grouped
    convolution's nearest by channels per group) and, for each kind of row (grouped or not)
    that `trees` gives a tree rule, that kind's tree (Rule: its smallest leaf, whether it splits
    the convolution's products too), which answers within the trust distance, grown on the
    `labelled` configurations too (untimed, with the `key` of one of the training rows' variants:
    seer.fit.census_keys); `gate`, where given, keeps every answer to its kind of kernel
    (seer.models.gate); `bin_gate` names the FFT's loops over its bins (seer.models.bin_gate)."""
    labels = sorted(pd.unique(keys))
    lookup = {k: i for i, k in enumerate(labels)}
    idx = keys.map(lookup).to_numpy(dtype=int)
    pts = points_of(train, op)
    kinds = kind_of(pts, op)
    grow_pts, grow_idx = pts, idx
    if labelled is not None and len(labelled):
        grow_pts = np.vstack([pts, points_of(labelled.assign(op=op), op)])
        grow_idx = np.concatenate([idx, labelled["key"].map(lookup).to_numpy(dtype=int)])
    grow_kinds = kind_of(grow_pts, op)
    fitted = {
        kind: fit_tree(grow_pts[grow_kinds == kind], grow_idx[grow_kinds == kind], rule.size, rule.products)
        for kind, rule in (trees or {}).items()
        if (kinds == kind).any()
    }
    reach = reach_trees(pts, idx, kinds, set(fitted)) if op in CONV_OPS else {}
    voters = condense(configs.per_group(pts) if per_group else pts, idx)
    if len(voters) == len(pts):
        return Chooser(op, algo, labels, pts, idx, candidates, fitted, None, per_group, gate, bin_gate, reach)
    order = np.concatenate([voters, np.setdiff1d(np.arange(len(pts)), voters)])  # the voters first
    return Chooser(
        op, algo, labels, pts[order], idx[order], candidates, fitted, len(voters), per_group, gate, bin_gate, reach
    )


def reach_trees(points: np.ndarray, idx: np.ndarray, kinds: np.ndarray, kept: set[bool]) -> dict[bool, Tree]:
    """Per kind of convolution (grouped or not) without a `kept` tree, of at least 2 x REACH_LEAF
    training points and two variants, the simplest tree the cross-validation tried (leaves of
    REACH_LEAF rows, on the sizes alone: seer.models.candidates.LEAVES), to propose beyond the
    trust distance (Chooser._with_leaf). Not the tree that scored best of the trees: beyond the
    data nothing scored them, and a coarser tree turns on the sizes that split most rows."""
    out = {}
    for kind in (False, True):
        mine = kinds == kind
        if kind not in kept and mine.sum() >= 2 * REACH_LEAF and len(np.unique(idx[mine])) > 1:
            out[kind] = fit_tree(points[mine], idx[mine], REACH_LEAF)
    return out


REACH_LEAF = max(LEAVES)  # the smallest leaf of a reach tree (Chooser.reach): the largest the trees try
BIN_NEAR = 2  # nearest training configurations that must all have looped for a loop to be named (by_bins)
KINDS = {False: "ungrouped", True: "grouped"}  # a tree's kind of convolution, as a fits file names it


def points_of(rows: pd.DataFrame, op: str) -> np.ndarray:
    """The log-configurations of rows as a chooser stores them (float32 values)."""
    return configs.log_config(rows, op).astype(np.float32).astype(np.float64)


def kind_of(points: np.ndarray, op: str) -> np.ndarray:
    """Whether each point is a grouped convolution (False for every GEMM)."""
    if op not in CONV_OPS:
        return np.zeros(len(points), dtype=bool)
    return points[:, configs.GROUPS_COLUMN] > 0
