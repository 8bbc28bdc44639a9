"""Which shapes a kernel variant runs on, learnt from where its algorithm ran it.

Some of cuDNN's kernels run only on shapes of their own: the filter gradient's depthwise kernel
(xmma_depthwise_wgrad) ran on one channel a group in and out, 3x3 and 5x5 filters, undilated,
and on nothing else of the H100's or the H200's 300-odd grouped training configurations. The
nearest rule knows nothing of that and proposes it for its neighbours: on the H100's
Test-set-I a dilated depthwise layer and layers of 2 channels a group took its time, 4-30x short
of the direct kernel cuDNN ran. The forward IMPLICIT_PRECOMP_GEMM ran its direct kernel on 44
of the H100's 3,190 ungrouped training calls, all 7x7 and 9x9 filters at stride 2, none of the
648 padded; a padded 7x7 stride-2 layer nearest them was given it and predicted at 5.7x its time.

A shape here is one attribute of a convolution: its filter (height and width together: a 1x7
filter is no 7x7 one), its stride, its dilation, whether a group has one input channel, whether
it has one output channel, whether it is padded. A variant that never ran a value of one
attribute, on so many of its algorithm's training configurations of that value (of its kind,
grouped or not) that chance would hardly have hidden it, is not proposed for that value: the
chance, if the variant ran as often there as on all of the kind's configurations, is below
CHANCE. A rare variant is never ruled out by few configurations, and a value no training
configuration had rules nothing out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seer.data.configs import CHANNEL_COLUMNS, PAD_COLUMNS, per_group
from seer.models.support import SHAPE_COLUMNS  # the filter, the stride, the dilation: (height, width) each

CHANCE = 1e-3  # a variant missing from a value's configurations with less chance than this does not run it
_BITS = 10  # bits per size in a pair's key (sizes up to 1023)


def attributes(points: np.ndarray) -> np.ndarray:
    """One integer per row and attribute: the filter, stride and dilation (each a height and
    width pair), whether a group has one input channel, whether it has one output channel,
    whether it is padded (on either side)."""
    sizes = np.rint(np.exp2(points[:, SHAPE_COLUMNS])).astype(np.int64)
    pairs = [(sizes[:, i] << _BITS) | sizes[:, i + 1] for i in range(0, len(SHAPE_COLUMNS), 2)]
    ones = (np.abs(per_group(points)[:, CHANNEL_COLUMNS]) < 1e-6).astype(np.int64)  # log2(C/G), log2(K/G) = 0
    padded = (points[:, PAD_COLUMNS] > 1e-6).any(axis=1).astype(np.int64)  # log2(pad + 1) > 0
    return np.column_stack([*pairs, ones, padded])


@dataclass(frozen=True)
class VariantSupport:
    """Per kind of convolution (grouped or not), the values of each attribute that each label
    (variant) is ruled out of."""

    never: dict[bool, list[dict[int, np.ndarray]]]  # kind -> per attribute, value -> label indices ruled out
    labels: int

    @classmethod
    def of(cls, points: np.ndarray, label_idx: np.ndarray, kinds: np.ndarray, labels: int) -> VariantSupport:
        """From a chooser's training points, their label indices and kinds."""
        attr = attributes(points)
        never: dict[bool, list[dict[int, np.ndarray]]] = {}
        for kind in (False, True):
            rows = kinds == kind
            if not rows.any():
                continue
            lab = label_idx[rows]
            share = np.bincount(lab, minlength=labels) / rows.sum()
            with np.errstate(divide="ignore"):
                log_miss = np.log1p(-share)  # the log chance of one configuration not running a label
            per_attr = []
            for a in attr[rows].T:
                ruled = {}
                for v in np.unique(a):
                    ran = np.bincount(lab[a == v], minlength=labels)
                    out = np.flatnonzero((ran == 0) & (share > 0) & (ran.sum() * log_miss < np.log(CHANCE)))
                    if len(out):
                        ruled[int(v)] = out
                per_attr.append(ruled)
            never[kind] = per_attr
        return cls(never, labels)

    @property
    def rules_out(self) -> bool:
        """Whether any variant is ruled out of any value."""
        return any(any(per) for per in self.never.values())

    def ruled_out(self, logcfg: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """(rows, labels): True where the row's value of some attribute rules the label out."""
        out = np.zeros((len(logcfg), self.labels), dtype=bool)
        attr = attributes(logcfg)
        for kind, per_attr in self.never.items():
            rows = np.flatnonzero(kinds == kind)
            for j, ruled in enumerate(per_attr):
                for v, labs in ruled.items():
                    at = rows[attr[rows, j] == v]
                    if len(at):
                        out[np.ix_(at, labs)] = True
        return out
