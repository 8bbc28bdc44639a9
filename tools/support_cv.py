"""Does a variant's shape support name cuDNN's kernel better? Cross-validated on the choosers' own
training configurations, not on a test set.

python tools/support_cv.py [GPU] [--fits FITS]   # default h100-sxm, bundled fits

For each convolution chooser of a GPU's fits, the training configurations are split in 5 folds
(seeded); each fold is named by the nearest rule of a chooser built on the other four (one
nearest, each kind of convolution from its own kind), once as it is and once with the variants
its shape rules out replaced (seer.models.chooser.Chooser.by_support). It prints, per chooser,
the share named as cuDNN ran them each way, how many names the rule changed and how many of those
were right before and after. Trees, gates and the filter-shape rule are left out: this measures
the one rule.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

from seer.errors import SeerError, SeerWarning
from seer.evaluate.report import fits_for
from seer.models.chooser import Chooser, kind_of

FOLDS = 5


def named(c: Chooser, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(the nearest rule's name, the name with by_support) for each training point, each from a
    chooser fitted on the other folds."""
    fold = rng.integers(0, FOLDS, len(c.points))
    before = np.empty(len(c.points), dtype=int)
    after = np.empty(len(c.points), dtype=int)
    for k in range(FOLDS):
        test = np.flatnonzero(fold == k)
        train = fold != k
        if not len(test):
            continue
        ch = Chooser(c.op, c.algo, c.labels, c.points[train], c.label_idx[train], 1, {}, None, c.per_group)
        q = c.points[test]
        kinds = kind_of(q, c.op)
        for kind in (False, True):
            rows = np.flatnonzero(kinds == kind)
            if not len(rows):
                continue
            sub = ch.of_kind(kind) if (kind_of(ch.points, c.op) == kind).any() else ch
            near = sub.nearest(q[rows], 1)[1]
            before[test[rows]] = near[:, 0]
            after[test[rows]] = sub.by_support(q[rows], near)[:, 0]
    return before, after


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gpu", nargs="?", default="h100-sxm", help="GPU slug (default h100-sxm)")
    ap.add_argument("--fits", type=Path, default=Path("fits"), help="fits folder (default: the bundled fits/)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", SeerWarning)
    try:
        f = fits_for(args.gpu, args.fits, log=lambda *a: None)
    except SeerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(0)
    total = np.zeros(5, dtype=int)
    print(f"{f.gpu.name}, {args.fits}: the nearest rule's names of held-out training configurations ({FOLDS} folds)")
    for key, c in sorted(f.choosers.items()):
        if not c.op.startswith("conv") or len(c.labels) < 2:
            continue
        before, after = named(c, rng)
        truth = c.label_idx
        changed = before != after
        row = np.array(
            [
                len(truth),
                (before == truth).sum(),
                (after == truth).sum(),
                changed.sum(),
                (after[changed] == truth[changed]).sum(),
            ]
        )
        total += row
        n, b, a, ch, right = row
        print(
            f"  {key:36s} {n:6d} configurations: named right {100 * b / n:5.1f}% -> {100 * a / n:5.1f}%;"
            f" {ch} changed, right before {(before[changed] == truth[changed]).sum()}, after {right}"
        )
    n, b, a, ch, right = total
    share = f"{100 * b / n:.2f}% -> {100 * a / n:.2f}%"
    print(f"  all: {n} configurations, named right {share}; {ch} changed, {right} of them right after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
