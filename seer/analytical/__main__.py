"""python -m seer.analytical: held-out accuracy of the memory-bound model on NeuSight's data."""

from __future__ import annotations

import argparse
import sys

from .validate import report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer.analytical",
        description=(
            "Fit the memory-bound roofline (effective bandwidth, floor) on the training rows of "
            "NeuSight's add, mul, relu, gelu, tanh, softmax and layer-norm measurements and print "
            "held-out accuracy per op and GPU."
        ),
    )
    ap.add_argument(
        "--neusight",
        metavar="DIR",
        help="NeuSight data folder (default: $SEER_NEUSIGHT or ../shared/datasets/neusight)",
    )
    ap.add_argument("--out", metavar="FILE", help="also write the table (.csv) or table and fitted parameters (.json)")
    ap.add_argument(
        "--datasheet",
        action="store_true",
        help="score the unfitted datasheet roofline instead (the fallback for a GPU without measurements)",
    )
    args = ap.parse_args(argv)
    return report(args.neusight, args.out, datasheet=args.datasheet)


if __name__ == "__main__":
    sys.exit(main())
