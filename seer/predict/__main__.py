"""python -m seer.predict MODEL_OR_TRACE [--gpu GPU]: how long a whole model takes on a GPU.

MODEL_OR_TRACE is a torch.fx graph with per-node latencies (NeuSight's layout: <model>.csv and
<model>.json with num_layer) or a PyTorch profiler trace (.json or .json.gz; --et gives the
execution trace of the same run where the profiler recorded no shapes). Prints the ops that
take the time, the time per op kind, and the whole model: predicted, and measured where the
input was measured on the same GPU. --gpu predicts for another GPU seer has fits for.

Examples:
  python -m seer.predict ../shared/datasets/neusight-models/Tesla_T4/bert_large-inf-512-8.csv
  python -m seer.predict ../shared/datasets/neusight-models/Tesla_T4/bert_large-inf-512-8.csv --gpu v100
  python -m seer.predict data/h100-sxm/traces/gpt_b8.pt.trace.json.gz
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from seer.cli import run, writable_file
from seer.errors import SeerError
from seer.evaluate.metrics import format_table
from seer.predict import available


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer.predict",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    ap.add_argument("model", help="a torch.fx graph (.csv) or a profiler trace (.json, .json.gz)")
    ap.add_argument(
        "--gpu",
        help=f"predict for this GPU (bundled fits: {', '.join(available())}; or a fits file); any other GPU "
        "of seer.hardware.gpus gets fits transferred from the bundled ones (seer.predict.transfer)",
    )
    ap.add_argument("--et", help="execution trace of the same run (shapes for a trace recorded without them)")
    ap.add_argument("--top", type=int, default=15, help="how many of the longest ops to list (default: %(default)s)")
    ap.add_argument("--out", help="write the per-op table to this .csv")
    args = ap.parse_args(argv)
    return run(lambda: _main(args), "seer.predict")


def _main(args: argparse.Namespace) -> int:
    from seer.workload.model_time import model_time

    if args.out:
        writable_file(args.out, "--out", (".csv",))
    if args.top < 0:
        raise SeerError(f"--top must be >= 0, got {args.top}")
    mt = model_time(Path(args.model), args.gpu, execution_trace=args.et)
    where = f" (measured on {mt.measured_on})" if mt.measured_on and mt.measured_on != mt.gpu else ""
    print(f"{mt.source.name} on {mt.gpu}{where}\n")
    ops = mt.ops.assign(total_ms=mt.ops["predicted_ms"].fillna(0) * mt.ops["count"])
    top = ops[ops["kind"] != "dispatch"].nlargest(args.top, "total_ms")
    print(f"The {len(top)} longest ops (time per call; total = per call x count):\n")
    print(top[["name", "kind", "count", "measured_ms", "predicted_ms", "total_ms"]].round(4).to_string(index=False))
    print("\nPer op kind (whole model):\n")
    print(format_table(mt.by_kind().round(3), percent=("measured_share", "predicted_share")))
    t = mt.totals
    print()
    for key, label in (
        ("predicted_ms", "predicted whole model"),
        ("kernel_sum_ms", "  of which kernels (sum)"),
        ("measured_ms", "measured whole model"),
        ("replay_measured_ms", "replay with measured kernel times"),
        ("measured_kernel_sum_ms", "measured kernels (sum)"),
        ("unmodelled_ms", "unmodelled ops (measured time)"),
    ):
        if key in t:
            print(f"{label:36s} {t[key]:10.3f} ms")
    measured, predicted = t.get("measured_ms", math.nan), t.get("predicted_ms", math.nan)
    if measured > 0 and math.isfinite(measured) and math.isfinite(predicted):  # never an error against no time
        print(f"{'error':36s} {100 * (predicted / measured - 1):+9.1f} %")
    far = ops[ops["extrapolated"].to_numpy(dtype=bool)]
    if len(far):
        share = far["total_ms"].sum() / max(ops["total_ms"].sum(), 1e-300)
        print(
            f"\nwarning: {len(far)} op{'s lie' if len(far) != 1 else ' lies'} ({share:.0%} of the predicted time) "
            "outside the fitted range of "
            f"the models that timed them (extrapolated; column 'extrapolated' of --out), e.g. {far['name'].iloc[0]}",
            file=sys.stderr,
        )
    unm = mt.ops[mt.ops["kind"] == "unmodelled"]
    if len(unm):
        print(f"\n{len(unm)} unmodelled ops, e.g. {unm['name'].iloc[0]}: {unm['why'].iloc[0]}")
    if args.out:
        mt.ops.to_csv(args.out, index=False)
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
