"""What the next GPU sessions' grid steps cover, in plan order and in the order a run measures.

python tools/measure_order.py [GPU_FOLDER ...] [--sessions 1,2] [--minutes 10.1]
    # default: data/h100-sxm data/h200; a folder that does not exist (data/none): nothing stored

The grid step takes conv_grid, seer_grid and conv_bwd_grid in turns by share until its time
is up (`python -m cudnn_bench plan --session` says about 10 minutes of it per session of two
calls). In plan order (stratified, the core first) a stored neighbourhood is measured again
and again; `cudnn_bench.coverage.measure_order` takes first what lies beyond the fits' trust
distance of everything stored and taken. Printed per order and number of sessions: the share of
Test-set-II's forward layers, of its gradients' layers and of the three grids that lie within
the trust distance of a measured configuration (of the same direction, kind and math), by the
planner's cost model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cudnn_bench.cost import CostModel
from cudnn_bench.coverage import measure_order, within_trust
from cudnn_bench.oneshot import GRID_SUITES, resume
from cudnn_bench.plan import Budget, PlanItem, interleave, make_plan, prefix
from cudnn_bench.suites import conv_bwd, test_set_ii
from seer.hardware import gpus


def coverage_rows(folder: Path, sessions: list[int], minutes: float) -> list[str]:
    slug = folder.name
    cost = CostModel.for_gpu(gpus.lookup(slug if slug in gpus.GPUS else "h100-sxm"))  # else: an H100 kind
    stores = folder if folder.is_dir() else None
    plans = {s: make_plan([s], ["fma"], Budget(), cost) for s in GRID_SUITES}
    states = {s: resume(plans[s], stores, cost) for s in GRID_SUITES}
    new = [i for st in states.values() for i in st.new]
    left = {i.key for i in new}
    stored = [i.key for p in plans.values() for i in p.items if i.key not in left]
    targets = {
        "Test-set-II": [PlanItem("test_set_ii", c, "fma", 0.0) for c in test_set_ii()],
        "its gradients": [PlanItem("conv_bwd", c, "fma", 0.0) for c in conv_bwd()],
        "the grids": [i for p in plans.values() for i in p.items],
    }
    orders = {"plan order": interleave(new), "measure_order": measure_order(new, stored, interleaved=True)}
    what = f"{folder}" if stores else f"{folder} (nothing stored)"
    out = [f"{what}: {len(stored)} grid configurations stored, {len(new)} to measure"]
    shares = {name: f"{100 * within_trust(t, stored).mean():.1f}%" for name, t in targets.items()}
    out.append(f"  {'now':<44}" + "".join(f"{n} {v:>6}   " for n, v in shares.items()))
    for name, order in orders.items():
        for k in sessions:
            taken = prefix(order, k * minutes * 60)
            cov = stored + [i.key for i in taken]
            cells = "".join(f"{n} {100 * within_trust(t, cov).mean():5.1f}%   " for n, t in targets.items())
            out.append(f"  {f'{name}, {k} session(s) ({len(taken)} configs)':<44}" + cells)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="*", type=Path, default=[Path("data/h100-sxm"), Path("data/h200")])
    p.add_argument("--sessions", default="1,2", help="numbers of sessions to show (default: 1,2)")
    p.add_argument("--minutes", type=float, default=10.1, help="grid-step minutes a session (default: 10.1)")
    a = p.parse_args(argv)
    try:
        sessions = [int(x) for x in a.sessions.split(",") if x.strip()]
    except ValueError:
        sys.stderr.write(f"measure_order: --sessions {a.sessions!r} is not a list of numbers\n")
        return 2
    print("within the fits' trust distance of a measured configuration (cudnn_bench.coverage.within_trust):")
    for folder in a.folders:
        print("\n".join(coverage_rows(folder, sessions, a.minutes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
