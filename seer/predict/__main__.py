"""python -m seer.predict MODEL_OR_TRACE [--gpu GPU]: how long a whole model takes on a GPU.

MODEL_OR_TRACE is a torch.fx graph with per-node latencies (NeuSight's layout: <model>.csv and
<model>.json with num_layer) or a PyTorch profiler trace (.json or .json.gz; --et gives the
execution trace of the same run where the profiler recorded no shapes). Prints the ops that
take the time, the time per op kind, and the whole model: predicted, and measured where the
input was measured on the same GPU. --gpu predicts for another GPU seer has fits for. A trace's
ops are told apart by their site: the module or call site where the trace records one, else
the outermost op and its occurrence in the step (linear#5: the step's fifth aten::linear).
--out writes the per-op table as .csv, or as .json with the whole-model totals; --out - writes
it to stdout (--format, default json) and the report to stderr.

A live model instead of a file (needs the torch extra: pip install 'seer[torch]'): --hf CONFIG
(a Hugging Face config.json, or a hub model id where the hub is reachable; built without
weights) with --batch, --seq, --dtype; or --python package.module:function returning (model,
example_inputs). Captured on the CPU (seer.workload.capture), --train adds the backward from
AOTAutograd's joint graph and the optimizer's step (--optimizer).

Examples:
  python -m seer.predict ../shared/datasets/neusight-models/Tesla_T4/bert_large-inf-512-8.csv
  python -m seer.predict ../shared/datasets/neusight-models/Tesla_T4/bert_large-inf-512-8.csv --gpu v100
  python -m seer.predict data/h100-sxm/traces/gpt_b8.pt.trace.json.gz --out ops.json
  python -m seer.predict data/h100-sxm/traces/gpt_b8.pt.trace.json.gz --out - | jq '.ops[0]'
  python -m seer.predict --hf tests/data/hf/gpt2-large.json --batch 4 --seq 1024 --gpu t4
  python -m seer.predict --hf tests/data/hf/gpt2-large.json --batch 1 --seq 512 --train --optimizer adam
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from pathlib import Path

from seer.cli import described_gpu, known_gpu, run, writable_file
from seer.errors import SeerError
from seer.evaluate.metrics import format_table
from seer.hardware.describe import is_description
from seer.predict import available
from seer.workload.model_time import ModelTime, is_trace, model_time

FORMATS = ("json", "csv")
TRACE_DESCRIPTION = (
    "seer trace TRACE [--gpu GPU]: a profiler trace's ops and step time on a GPU (seer.predict on a trace)."
)
TABLE = ["name", "site", "shapes", "kind", "direction", "count", "measured_ms", "predicted_ms", "total_ms", "assumed"]


def main(argv: list[str] | None = None, *, trace: bool = False) -> int:
    """`trace`: the input must be a profiler trace (the `seer trace` subcommand)."""
    ap = argparse.ArgumentParser(
        prog="python -m seer.predict",
        description=TRACE_DESCRIPTION if trace else __doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    if trace:
        ap.add_argument("model", metavar="trace", help="a PyTorch profiler trace (.json, .json.gz)")
    else:
        ap.add_argument("model", nargs="?", help="a torch.fx graph (.csv) or a profiler trace (.json, .json.gz)")
        _live_arguments(ap)
    ap.add_argument(
        "--gpu",
        help=f"predict for this GPU (bundled fits: {', '.join(available())}; or a fits file); any other GPU "
        "of seer.hardware.gpus gets fits transferred from the bundled ones (seer.predict.transfer); "
        'a GPU the table lacks is described: --gpu "name=My GPU,cc=8.6,sms=84,boost_mhz=1695,dram_gbs=936,tdp_w=350"',
    )
    ap.add_argument(
        "--gpu-info",
        metavar="FILE",
        help="describe the GPU (--gpu's default) by a file: `nvidia-smi -q` or `nvidia-smi --query-gpu=... "
        "--format=csv` output, or a JSON of --gpu's keys; what the table lacks is assumed and said",
    )
    ap.add_argument("--et", help="execution trace of the same run (shapes for a trace recorded without them)")
    ap.add_argument(
        "--autotune",
        action="store_true",
        help="time each GEMM and convolution as the fastest fitted algorithm (an autotuned run: "
        "torch.backends.cudnn.benchmark = True) instead of the kernel profiler traces saw the framework "
        "launch for the nearest shape (the default where the fits learnt one; column 'assumed')",
    )
    ap.add_argument("--top", type=int, default=15, help="how many of the longest ops to list (default: %(default)s)")
    ap.add_argument(
        "--out",
        metavar="FILE",
        help="write the per-op table to this .csv, or to this .json with the totals (times in ms); "
        "- writes it to stdout (in --format) and the report to stderr",
    )
    ap.add_argument("--format", choices=FORMATS, help="format of --out (default: the file's suffix; json for -)")
    args = ap.parse_args(argv)
    return run(lambda: _main(args, trace), "seer.trace" if trace else "seer.predict")


def _live_arguments(ap: argparse.ArgumentParser) -> None:
    """--hf / --python: a model captured on the CPU instead of a graph or trace file."""
    from seer.workload.optimizer import OPTIMIZERS

    live = ap.add_argument_group("a live model (needs the torch extra)")
    what = live.add_mutually_exclusive_group()
    what.add_argument(
        "--hf", metavar="CONFIG", help="a Hugging Face config.json (or hub model id), built without weights"
    )
    what.add_argument("--python", metavar="MOD:FN", help="package.module:function returning (model, example_inputs)")
    live.add_argument("--batch", type=int, default=1, help="--hf: batch size (default: %(default)s)")
    live.add_argument("--seq", type=int, default=128, help="--hf: sequence length (default: %(default)s)")
    live.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"), help="--hf: dtype")
    live.add_argument("--arch", help="--hf: the model class (default: the config's first architecture)")
    live.add_argument("--mask", action="store_true", help="--hf: pass an all-ones attention mask")
    live.add_argument("--train", action="store_true", help="a training step: forward, loss, backward, optimizer")
    live.add_argument(
        "--optimizer", default="sgd", choices=OPTIMIZERS, help="--train: the optimizer step (default: %(default)s)"
    )


def _live(args: argparse.Namespace) -> ModelTime:
    gpu = args.gpu or "h100-sxm"
    if args.hf:
        from seer.workload.hf import predict_hf

        return predict_hf(
            args.hf, gpu, batch=args.batch, seq=args.seq, dtype=args.dtype, training=args.train,
            optimizer=args.optimizer, architecture=args.arch, attention_mask=args.mask,
        )  # fmt: skip
    from seer.workload.capture import load_factory, predict_model

    model, inputs = load_factory(args.python)
    return predict_model(model, inputs, gpu, training=args.train, optimizer=args.optimizer, source=args.python)


def trace_main(argv: list[str] | None = None) -> int:
    """`seer trace`: seer.predict for profiler traces only."""
    return main(argv, trace=True)


def out_format(out: str | None, fmt: str | None) -> str | None:
    """The format --out is written in (None: no --out), its file checked before the work."""
    if out is None:
        if fmt is not None:
            raise SeerError("--format says how to write --out: give --out FILE or --out - too")
        return None
    if out == "-":
        return fmt or "json"
    suffix = f".{fmt}" if fmt else None
    writable_file(out, "--out", (suffix,) if suffix else tuple(f".{f}" for f in FORMATS))
    return fmt or Path(out).suffix[1:]


def to_json(mt: ModelTime) -> str:
    """The per-op table as records (NaN as null) under the whole model's totals."""
    doc = {
        "source": str(mt.source),
        "gpu": mt.gpu,
        "measured_on": mt.measured_on,
        **({"gpu_note": mt.gpu_note} if mt.gpu_note else {}),
        **({"fits": mt.fits} if mt.fits else {}),
        **({"notes": mt.notes} if mt.notes else {}),
        "totals": {k: (v if math.isfinite(v) else None) for k, v in mt.totals.items()},
        "ops": json.loads(mt.ops.to_json(orient="records")),
    }
    return json.dumps(doc, indent=1) + "\n"


def write_table(mt: ModelTime, out: str, fmt: str) -> None:
    text = to_json(mt) if fmt == "json" else mt.ops.to_csv(index=False)
    if out == "-":
        sys.stdout.write(text)
        return
    from seer.data.records import atomic_write

    atomic_write(Path(out), lambda p: p.write_text(text))


def _main(args: argparse.Namespace, trace: bool = False) -> int:
    fmt = out_format(args.out, args.format)
    if args.top < 0:
        raise SeerError(f"--top must be >= 0, got {args.top}")
    live = not trace and (args.hf or args.python)
    if not trace and bool(live) == bool(args.model):
        raise SeerError("give one model: a graph or trace file, or --hf CONFIG, or --python MOD:FN")
    if trace and not is_trace(Path(args.model)):
        raise SeerError(f"{args.model}: expected a profiler trace (.json, .json.gz); a graph (.csv) is seer predict's")
    if args.gpu_info:  # a --gpu "sms=..." beside it adds to the file's description
        pairs = args.gpu if args.gpu and is_description(args.gpu) else None
        described = described_gpu(args.gpu_info, pairs)
        args.gpu = described if pairs or not args.gpu else args.gpu
    if args.gpu:
        args.gpu = known_gpu(args.gpu)
    mt = (
        _live(args) if live else model_time(Path(args.model), args.gpu, execution_trace=args.et, autotune=args.autotune)
    )
    to_stdout = args.out == "-"
    with contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext():
        report(mt, args.top)
    if args.out and fmt:
        write_table(mt, args.out, fmt)
        if not to_stdout:
            print(f"\nwrote {args.out}")
    return 0


def report(mt: ModelTime, top_n: int) -> None:
    """The printed account: the longest ops, time per op kind, the whole model."""
    where = f" (measured on {mt.measured_on})" if mt.measured_on and mt.measured_on != mt.gpu else ""
    print(f"{mt.source.name} on {mt.gpu}{where}\n")
    if mt.fits:
        print(f"fits: {mt.fits}\n")
    for note in [mt.gpu_note, *mt.notes]:
        if note:
            print(f"{note}\n")
    ops = mt.ops.assign(total_ms=mt.ops["predicted_ms"].fillna(0) * mt.ops["count"])
    top = ops[ops["kind"] != "dispatch"].nlargest(top_n, "total_ms")
    print(f"The {len(top)} longest ops (time per call; total = per call x count):\n")
    training = len(mt.directions) > 1
    cols = [c for c in TABLE if c in top and (c != "direction" or training)]
    print(top[cols].round(4).to_string(index=False))
    print(f"\nPer op kind{' and direction' if training else ''} (whole model):\n")
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
        for d in mt.directions if training else ():
            if f"{key}_{d}" in t:
                print(f"{'  ' + d:36s} {t[f'{key}_{d}']:10.3f} ms")
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


if __name__ == "__main__":
    sys.exit(main())
