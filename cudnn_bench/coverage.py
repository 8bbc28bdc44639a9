"""How many Test-set-II configurations a training grid covers: within the fits' trust distance
(seer.models.FitOptions().trust_distance) of a grid configuration, in seer's own log2
configuration space (seer.data.configs.log_config: batch, channels, sizes, filter, groups,
stride, padding + 1; dilation is not one of its axes).

    python -m cudnn_bench.coverage [--budget 9m] [--calls 1,2,3] [--data data/h100-sxm]

Rows: the SEER grid whole and as measured (the `--data` folder's seer_grid.csv), and `conv_grid`
as the GPU calls take it: the first configurations of its plan order (what the one-shot call's
grid step measures, in that order, until its time is up) that fit in 1, 2, 3 calls of `--budget`
each by the cost model, its core, the whole suite, and its space-filling part alone (the real
layers left out). Columns: how many of the Test-set-II configurations lie within the distance,
by batch and by network, and the median distance to the nearest grid configuration.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data.configs import log_config
from seer.data.records import CONV_OPS
from seer.hardware import gpus
from seer.models.options import FitOptions

from .cli import Parser
from .configs import ConvConfig, config_from_key
from .cost import CostModel
from .errors import BenchError
from .families import FAMILIES
from .plan import Budget, PlanItem, interleave, make_plan, prefix
from .store import suite_file
from .suites import SUITES, conv_grid_design, test_set_ii

NETWORKS = ("alexnet", "vgg16", "resnet50", "mobilenet_v2")


def log_points(cfgs: Sequence[ConvConfig]) -> np.ndarray:
    """The configurations as points of seer's log2 configuration space."""
    frame = pd.DataFrame([c.fields() for c in cfgs])
    return log_config(frame, "conv_fwd")


def nearest(train: Sequence[ConvConfig], test: Sequence[ConvConfig]) -> np.ndarray:
    """Each test configuration's distance to the nearest training configuration."""
    if not train:
        return np.full(len(test), np.inf)
    dist, _ = cKDTree(log_points(train)).query(log_points(test), k=1)
    return np.asarray(dist, dtype=float)


def measure_order(
    items: Sequence[PlanItem], covered: Iterable[tuple[str, ...]] = (), interleaved: bool = False
) -> list[PlanItem]:
    """The order a run that may stop early measures `items` in (given in plan order): first
    every suite's uncovered convolutions (uncovered), then the rest; with `interleaved`, each
    of the two in turns by suite share (plan.interleave). A stored neighbourhood waits for the
    configurations whose predictions would be extrapolations: after one session's two calls on
    the H100, 89% of its grids' configurations lay within the trust distance of a measured one,
    83% in plan order; after two sessions 100% and 87% (docs/results.md)."""
    first, rest = uncovered(items, covered)
    if interleaved:
        return interleave(first) + interleave(rest)
    return first + rest


def uncovered(
    items: Sequence[PlanItem], covered: Iterable[tuple[str, ...]] = (), radius: float | None = None
) -> tuple[list[PlanItem], list[PlanItem]]:
    """The items (in plan order) split in two, each in plan order: the convolutions farther than
    `radius` (default: the fits' trust distance) from every covered configuration (`covered`:
    store keys, (suite, config key, math), as PlanItem.key) and from every one taken before
    them, of the same direction, kind (grouped or not) and math, within each suite and each
    tier of it (the core first); and the rest, other suites' items among them."""
    trust = FitOptions().trust_distance if radius is None else radius
    have = _labelled(_conv_keys(covered))
    blocks: dict[tuple[int, int], list[PlanItem]] = {}  # (suite's place, tier): its items
    place: dict[str, int] = {}
    for it in items:
        tier = SUITES[it.suite].tier if it.suite in SUITES else None
        blocks.setdefault((place.setdefault(it.suite, len(place)), tier(it.config) if tier else 0), []).append(it)
    first: list[PlanItem] = []
    rest: list[PlanItem] = []
    for _, block in sorted(blocks.items(), key=lambda kv: kv[0]):
        mine = _beyond(block, have, trust)
        first += [it for it, far in zip(block, mine, strict=True) if far]
        rest += [it for it, far in zip(block, mine, strict=True) if not far]
    return first, rest


def within_trust(
    items: Sequence[PlanItem], covered: Iterable[tuple[str, ...]], radius: float | None = None
) -> np.ndarray:
    """Whether each convolution item lies within `radius` (default: the fits' trust distance) of
    a covered configuration (store keys) of its direction, kind and math: where the fits
    interpolate, not extrapolate. False for other items."""
    trust = FitOptions().trust_distance if radius is None else radius
    have = _labelled(_conv_keys(covered))
    conv = [j for j, it in enumerate(items) if isinstance(it.config, ConvConfig)]
    out = np.zeros(len(items), dtype=bool)
    if conv:
        pts, labels = _labelled([(items[j].config, items[j].math) for j in conv])  # type: ignore[misc]
        out[conv] = _nearest_of_label(pts, labels, have) <= trust
    return out


def _conv_keys(keys: Iterable[tuple[str, ...]]) -> list[tuple[ConvConfig, str]]:
    """The convolutions of store keys (suite, config key, math), with their math."""
    seen = [(config_from_key(k[1]), k[2]) for k in keys if k[1].split(":")[0] in CONV_OPS]
    return [(c, m) for c, m in seen if isinstance(c, ConvConfig)]


def _nearest_of_label(pts: np.ndarray, labels: np.ndarray, have: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Each point's distance to the nearest of `have`'s points of its label (inf: none)."""
    dist = np.full(len(pts), np.inf)
    for label in np.unique(labels):
        mine, theirs = labels == label, have[1] == label
        if theirs.any():
            dist[mine] = cKDTree(have[0][theirs]).query(pts[mine], k=1)[0]
    return dist


def _labelled(cfgs: Sequence[tuple[ConvConfig, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Log points and a label each of what a configuration's distance is measured against:
    its direction, kind (grouped or not) and math."""
    if not cfgs:
        return np.zeros((0, 0)), np.zeros(0, dtype=object)  # no label: never searched
    labels = np.array([f"{c.op}:{c.groups > 1}:{m}" for c, m in cfgs], dtype=object)
    return log_points([c for c, _ in cfgs]), labels


def _beyond(block: list[PlanItem], have: tuple[np.ndarray, np.ndarray], radius: float) -> np.ndarray:
    """Which items of one block are taken as uncovered (uncovered): beyond `radius` of `have`
    and of the items taken before them."""
    if not block or not all(isinstance(it.config, ConvConfig) for it in block):
        return np.zeros(len(block), dtype=bool)
    pts, labels = _labelled([(it.config, it.math) for it in block])  # type: ignore[misc]
    dist = _nearest_of_label(pts, labels, have)
    members = {label: np.flatnonzero(labels == label) for label in np.unique(labels)}
    far = np.zeros(len(block), dtype=bool)
    for j in range(len(block)):
        if dist[j] <= radius:
            continue
        far[j] = True
        later = members[labels[j]]
        later = later[later > j]
        dist[later] = np.minimum(dist[later], np.sqrt(((pts[later] - pts[j]) ** 2).sum(axis=1)))
    return far


def _shape(c: ConvConfig) -> tuple[int, ...]:
    """A configuration's layer shape (families.Layer.shape): everything but the batch."""
    return (c.c_in, c.h_in, c.w_in, c.c_out, c.kh, c.kw, c.stride_h, c.pad_h, c.pad_w, c.dil_h, c.groups)


@dataclass(frozen=True)
class Row:
    label: str
    configs: int
    dist: np.ndarray


def plan_prefix(suite: str, seconds: float, cost: CostModel) -> list[ConvConfig]:
    """The first configurations of a suite, in the order a run measures it from nothing stored
    (measure_order), whose estimates add up to `seconds`: what a collection of `--budget none
    --stop-after` measures (the one-shot call's grid step)."""
    items = prefix(measure_order(make_plan([suite], ["fma"], Budget(), cost).items), seconds)
    return [it.config for it in items if isinstance(it.config, ConvConfig)]


def measured(data: Path, suite: str) -> list[ConvConfig]:
    """The configurations a store folder holds for a suite, plain or gzipped (none if it has no
    such file)."""
    path = suite_file(data, suite)
    if path is None:
        return []
    keys = pd.read_csv(path, usecols=["config_key"])["config_key"].dropna().unique()
    out = []
    for k in keys:
        cfg = config_from_key(str(k))
        if isinstance(cfg, ConvConfig):
            out.append(cfg)
    return out


def rows(gpu: str = "h100-sxm", budget_s: float = 9 * 60, calls: Sequence[int] = (1, 2, 3), data: Path | None = None):
    """The coverage rows and the Test-set-II configurations they are measured against."""
    test = test_set_ii()
    cost = CostModel.for_gpu(gpus.lookup(gpu))
    grid = SUITES["seer_grid"].build()
    out = [Row("seer_grid, whole", len(grid), nearest(grid, test))]
    if data is not None:
        got = measured(data, "seer_grid")
        out.append(Row(f"seer_grid, measured ({data})", len(got), nearest(got, test)))
    for k in calls:
        pre = plan_prefix("conv_grid", k * budget_s, cost)
        out.append(Row(f"conv_grid, {k} call(s) of {budget_s / 60:g} min", len(pre), nearest(pre, test)))
    d = conv_grid_design()
    core = [c for c in d.configs if d.tiers[c.key()] == 0]
    out.append(Row("conv_grid, core", len(core), nearest(core, test)))
    out.append(Row("conv_grid, whole", len(d.configs), nearest(list(d.configs), test)))
    sobol = [c for c in d.configs if d.parts[c.key()] == "sobol"]
    out.append(Row("conv_grid, space-filling part only", len(sobol), nearest(sobol, test)))
    own = {ly.shape() for f in FAMILIES if f.name in NETWORKS for hw in f.sizes for ly in f.build(hw)}
    strict = [c for c in d.configs if _shape(c) not in own]
    out.append(Row("conv_grid, no layer of Test-set-II's nets", len(strict), nearest(strict, test)))
    out.append(Row("seer_grid + conv_grid, whole", len(grid) + len(d.configs), nearest(grid + list(d.configs), test)))
    return out, test


def table(
    gpu: str = "h100-sxm", budget_s: float = 9 * 60, calls: Sequence[int] = (1, 2, 3), data: Path | None = None
) -> str:
    trust = FitOptions().trust_distance
    out, test = rows(gpu, budget_s, calls, data)
    batch = np.array([c.batch for c in test])
    net = np.array([c.name.split(".")[0] for c in test])
    heads = ["configs", "within", "share"]
    heads += [f"n={b}" for b in sorted(set(batch))] + list(NETWORKS) + ["median dist"]
    lines = [
        f"Test-set-II: {len(test)} configurations; within {trust:g} (FitOptions().trust_distance) of a training "
        "configuration in seer.data.configs.log_config's log2 space; plan prefixes by the cost model "
        f"({gpu}, cudnn_bench/cost.py)",
        f"{'training set':<44}" + "".join(f"{h:>13}" for h in heads),
    ]
    for r in out:
        inside = r.dist <= trust
        cells = [str(r.configs), str(int(inside.sum())), f"{100 * inside.mean():.0f}%"]
        cells += [f"{int(inside[batch == b].sum())}/{int((batch == b).sum())}" for b in sorted(set(batch))]
        cells += [f"{int(inside[net == n].sum())}/{int((net == n).sum())}" for n in NETWORKS]
        cells.append(f"{np.median(r.dist):.2f}")
        lines.append(f"{r.label[:44]:<44}" + "".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m cudnn_bench.coverage",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--gpu", default="h100-sxm", help="GPU of the cost model (default: h100-sxm)")
    p.add_argument("--budget", default="9m", help="GPU time of one call's grid step (default: 9m)")
    p.add_argument("--calls", default="1,2,3", help="numbers of calls to show (default: 1,2,3)")
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a data/<gpu-slug> folder whose measured seer_grid to show too (default: data/h100-sxm if present)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        b = Budget.parse(a.budget)
        if b.seconds is None:
            raise BenchError(f"--budget {a.budget!r}: give a time, such as 9m")
        calls = [int(x) for x in a.calls.split(",") if x.strip()]
    except (BenchError, ValueError) as exc:
        sys.stderr.write(f"cudnn_bench.coverage: {exc}\n")
        return 2
    data = a.data
    if data is None and suite_file(Path("data/h100-sxm"), "seer_grid"):
        data = Path("data/h100-sxm")
    print(table(a.gpu, b.seconds, calls, data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
