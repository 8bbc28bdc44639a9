"""python -m seer: the package's main job on the built-in data."""
from __future__ import annotations

import sys

from .errors import SeerError


def main() -> int:
    from .records import neusight_dir, read_neusight

    print("seer ships no GPU measurements of its own yet; showing NeuSight's measurements "
          "from ../shared/datasets/neusight.")
    path = neusight_dir()
    if path is None:
        print("seer: NeuSight data not found (set SEER_NEUSIGHT to its folder).", file=sys.stderr)
        return 2
    df = read_neusight(path)
    print(df.groupby(["op", "gpu"]).size().rename("rows").to_string())
    conv = df[df["op"] == "conv_fwd"]
    print("\nconvolution algorithm picked by cuDNN's autotuner, per GPU:")
    print(conv.groupby(["gpu", "algo"]).size().unstack(fill_value=0).to_string())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SeerError as exc:
        print(f"seer: {exc}", file=sys.stderr)
        sys.exit(2)
