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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data.configs import log_config
from seer.hardware import gpus
from seer.models.options import FitOptions

from .cli import Parser
from .configs import ConvConfig, config_from_key
from .cost import CostModel
from .errors import BenchError
from .families import FAMILIES
from .plan import Budget, make_plan, prefix
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


def _shape(c: ConvConfig) -> tuple[int, ...]:
    """A configuration's layer shape (families.Layer.shape): everything but the batch."""
    return (c.c_in, c.h_in, c.w_in, c.c_out, c.kh, c.kw, c.stride_h, c.pad_h, c.pad_w, c.dil_h, c.groups)


@dataclass(frozen=True)
class Row:
    label: str
    configs: int
    dist: np.ndarray


def plan_prefix(suite: str, seconds: float, cost: CostModel) -> list[ConvConfig]:
    """The first configurations of a suite's plan order whose estimates add up to `seconds`:
    what a collection of `--budget none --stop-after` measures (the one-shot call's grid step)."""
    items = prefix(make_plan([suite], ["fma"], Budget(), cost).items, seconds)
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
