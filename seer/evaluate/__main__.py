"""python -m seer.evaluate: how good the predictions are.

--set I           Test-set-I: the held-out 30% of every variant (SEER's split), predicted from
                  the configuration alone (the fits choose the variant) and with the variant
                  known, per variant, algorithm family, op and overall.
--set II          Test-set-II: pick the fastest convolution algorithm (seer.evaluate.selection).
--set analytical  the memory-bound predictors on NeuSight's element-wise, softmax and layer
                  norm data (seer.analytical).
--set noise       how far apart identical launches are in the data: the floor under any error.
--set models      whole models (torch.fx graphs with measured latencies, NeuSight's layout;
                  default ../shared/datasets/neusight-models): predicted vs measured whole-model
                  time, per-node error by op kind, beside NeuSight's own predictions where
                  they lie beside the graphs (seer.workload).
--set transfer    predict each GPU of the data (default: NeuSight's) from the fits of the OTHER
                  chips only (seer.predict.transfer): leave-one-GPU-out on NeuSight's five GPUs,
                  per (GPU, op) and for whole models (NeuSight's graphs, with its published
                  errors beside).
--set traces      PyTorch profiler traces (default: data/*/traces and ../shared/datasets/traces):
                  kernel time linked to ops, step time replayed with measured and with
                  predicted kernel times (for GPUs seer has fits for).
--set trace-loo   leave one trace out (seer.evaluate.trace_loo): fits of the harness records
                  (--data, default data/h100-sxm) and the other traces of --traces (default
                  <data>/traces) predict each trace: kernel time per op kind and the step's
                  kernel sum vs measured, beside the harness-only fits and the step-to-step noise.
--set kernel-floors  memory-bound kernels of the traces (same default folders), leave one trace
                  out: the kernel-level model (seer.models.kernel_floor) fitted on the other
                  traces, element-wise kernel sums per step against the measured ones and their
                  step-to-step noise; --write also refits the bundled parameters on every trace.
Metrics as docs/results.md (Metrics) defines them (seer.evaluate.metrics); --out writes them as JSON (fractions) or CSV.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from seer.cli import data_path, described_gpu, known_gpu, run, writable_dir, writable_file
from seer.hardware.describe import is_description

if TYPE_CHECKING:  # the evaluations load pandas, statsmodels and the fits: after --help, not before
    from seer.predict import Fits


def workspace_bytes(text: str) -> float:
    """argparse type of --workspace-limit: a byte count >= 0 (a negative or NaN limit would
    exclude every algorithm and score nothing, printed as nan%)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 0:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"expected a number of bytes >= 0, got {text!r}")
    return value


def fits_by_gpu(fits: Path, gpu: str | None) -> Callable[[str], Fits]:
    """GPU name -> its fits (fits_for, paired with the data by GPU: its own, else transferred from
    the folder's other GPUs), each GPU looked up once so that a cross-GPU note (--gpu) is said
    once, not once per graph."""
    from seer.evaluate.report import fits_for
    from seer.hardware import gpus

    cache: dict[str, Fits] = {}

    def of(name: str) -> Fits:
        slug = gpus.lookup(name).slug
        if slug not in cache:
            cache[slug] = fits_for(slug, fits, gpu, transfer=True)
        return cache[slug]

    return of


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer.evaluate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    ap.add_argument(
        "--set",
        required=True,
        choices=["I", "II", "analytical", "noise", "models", "traces", "trace-loo", "transfer", "kernel-floors"],
        type=lambda s: (
            s
            if s in ("analytical", "noise", "models", "traces", "trace-loo", "transfer", "kernel-floors")
            else s.upper()
        ),
        help="which evaluation",
    )
    ap.add_argument(
        "--data", type=data_path, help="records to evaluate on (default: as python -m seer.fit; --set models: graphs)"
    )
    ap.add_argument("--traces", help="set trace-loo: a folder of traces with traces.json (default: <data>/traces)")
    ap.add_argument(
        "--autotune", action="store_true", help="set trace-loo: predict the fastest algorithms, not the launched ones"
    )
    ap.add_argument("--fits", help="fits folder or file (default: the bundled fits, seer.fitsfile.FITS_DIR)")
    ap.add_argument("--gpu", help='only this GPU (a GPU the table lacks: described, "name=...,cc=8.6,sms=84,...")')
    ap.add_argument(
        "--gpu-info",
        metavar="FILE",
        help="describe a GPU the table lacks (the data's GPU) by nvidia-smi output or a JSON (see seer.predict)",
    )
    ap.add_argument("--by", choices=["op", "algo", "variant"], default="op", help="detail of the table (set I)")
    ap.add_argument("--out", help="write the metrics to this .json or .csv")
    ap.add_argument("--plots", help="write PNG plots into this folder")
    ap.add_argument(
        "--workspace-limit",
        type=workspace_bytes,
        default=None,
        help="set II: exclude algorithms needing more workspace than this many bytes (>= 0)",
    )
    ap.add_argument(
        "--write",
        action="store_true",
        help="set kernel-floors: refit the bundled kernel floors and dispatch (seer/models/kernel_floors.json)",
    )
    args = ap.parse_args(argv)
    return run(lambda: _main(args), "seer.evaluate")


def _main(args: argparse.Namespace) -> int:
    from seer import fitsfile

    if args.fits is None:
        args.fits = str(fitsfile.FITS_DIR)
    if args.gpu_info:  # registered before any data names it; a --gpu "sms=..." beside it adds to it
        pairs = args.gpu if args.gpu and is_description(args.gpu) else None
        described = described_gpu(args.gpu_info, pairs)
        args.gpu = described if pairs else args.gpu
    if args.gpu:  # an unknown GPU lists the known ones, before any data is read
        args.gpu = known_gpu(args.gpu, fits_file=False)
    if args.out:  # output paths are checked before the work, not after it
        writable_file(args.out, "--out", (".json", ".csv"))
    if args.plots:
        from seer.evaluate.report import pyplot

        writable_dir(args.plots, "--plots")
        pyplot()
    if args.set == "I":
        from seer.evaluate.set_one import run_set_one

        return run_set_one(args)
    if args.set == "II":
        from seer.evaluate.selection import run_set_two

        return run_set_two(args)
    if args.set == "noise":
        from seer.evaluate.noise import run_noise

        return run_noise(args)
    if args.set == "models":
        from seer.evaluate.models import run_set_models

        return run_set_models(args, fits_by_gpu(Path(args.fits), args.gpu))
    if args.set == "transfer":
        from seer.evaluate.transfer import run_set_transfer

        return run_set_transfer(args)
    if args.set == "trace-loo":
        from seer.evaluate.trace_loo import run_set_trace_loo

        return run_set_trace_loo(args)
    if args.set == "traces":
        from seer.evaluate.models import run_set_traces

        return run_set_traces(args)
    if args.set == "kernel-floors":
        from seer.evaluate.kernel_floors import run_set_kernel_floors

        return run_set_kernel_floors(args)
    from seer.evaluate.analytical import report

    return report(args.data, args.out)


if __name__ == "__main__":
    sys.exit(main())
