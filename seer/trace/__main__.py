"""python -m seer.trace VERB ...: explain a PyTorch profiler trace kernel by kernel.

  summary TRACE [--out F.csv|F.json] [--top N]
      the per-kernel table (as PyTorch inductor's profile_analysis.py prints it): count, total
      and mean time, share of the GPU time, FLOPs, bytes, achieved TFLOP/s and GB/s and their
      share of the GPU's peaks, with seer's predicted time and measured / predicted; then the
      kernels seer is furthest from (|log(measured / predicted)| x time).
  augment TRACE --out T2.json[.gz]
      the trace written back with, under each GPU event's args, seer_ keys: op, layer, direction,
      FLOPs, bytes, roofline bound, achieved rates and % of peak, predicted time and measured /
      predicted. Every event and field is kept: open T2 in Perfetto (ui.perfetto.dev) or
      TensorBoard and click a kernel.
  diff A B [--out F.csv|F.json] [--top N]
      what changed between two runs: kernel by kernel and op by op, counts, total times, roofline
      efficiency, delta and ratio, largest change first.

Each verb takes --gpu (predict for that GPU; default the one the trace was taken on), --et (the
execution trace of the same run, for a trace recorded without shapes; diff: --et-a, --et-b) and
--no-progress (the progress bar on stderr shows only on a terminal anyway). How an op's work and
time are shared among its kernels: seer.trace.kernels (column `split`). A trace's ops and step
time as a whole: python -m seer.predict TRACE. The `seer` command has both: `seer trace TRACE` and
`seer trace summary|augment|diff ...`.

Examples:
  python -m seer.trace summary data/h100-sxm/traces/gpt_b8.pt.trace.json.gz --top 10
  python -m seer.trace augment data/h100-sxm/traces/gpt_b8.pt.trace.json.gz --out gpt_b8.seer.json.gz
  python -m seer.trace diff data/h100-sxm/traces/gpt_b1.pt.trace.json.gz data/h100-sxm/traces/gpt_b8.pt.trace.json.gz
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

from seer.cli import known_gpu, run, writable_file
from seer.errors import SeerError
from seer.evaluate.metrics import format_table

PERCENT = ("gpu_share", "frac_peak_flops", "frac_peak_bw", "efficiency_a", "efficiency_b")
NAME_WIDTH = 70  # kernel names are printed this long at most (--out has them whole)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer.trace",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    sub = ap.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = sub.add_parser("summary", help="the per-kernel table and the kernels seer is furthest from")
    s.add_argument("trace", help="a PyTorch profiler trace (.json, .json.gz)")
    _common(s)
    s.add_argument("--out", metavar="FILE", help="write the per-kernel table to this .csv, or to this .json with "
                   "the totals and the furthest kernels (times in ms, shares as fractions)")  # fmt: skip
    s.add_argument("--top", type=int, default=15, help="rows of each printed table (default: %(default)s)")
    a = sub.add_parser("augment", help="the trace with seer's explanation under each GPU event's args")
    a.add_argument("trace", help="a PyTorch profiler trace (.json, .json.gz)")
    _common(a)
    a.add_argument("--out", metavar="FILE", required=True, help="the augmented trace (.json, or .json.gz: gzipped)")
    d = sub.add_parser("diff", help="two traces compared kernel by kernel and op by op")
    d.add_argument("a", help="the first trace (the baseline)")
    d.add_argument("b", help="the second trace")
    _common(d, et=False)
    d.add_argument("--et-a", help="execution trace of A's run (shapes for a trace recorded without them)")
    d.add_argument("--et-b", help="execution trace of B's run")
    d.add_argument("--out", metavar="FILE", help="write both tables to this .csv (column level: kernel or op) or "
                   ".json with the totals")  # fmt: skip
    d.add_argument("--top", type=int, default=15, help="rows of each printed table (default: %(default)s)")
    args = ap.parse_args(argv)
    return run(lambda: _main(args), "seer.trace")


def _common(p: argparse.ArgumentParser, et: bool = True) -> None:
    p.add_argument("--gpu", help="predict for this GPU (default: the GPU the trace was taken on)")
    if et:
        p.add_argument("--et", help="execution trace of the same run (shapes for a trace recorded without them)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _trace_arg(path: str, what: str = "TRACE") -> Path:
    from seer.workload.model_time import is_trace

    p = Path(path)
    if not is_trace(p):
        raise SeerError(f"{what} {path}: expected a profiler trace (.json, .json.gz)")
    if not p.is_file():
        raise SeerError(f"{what} {path}: expected an existing trace file, found none")
    return p


def _out_format(out: str | None, augment: bool = False) -> str | None:
    if out is None:
        return None
    if augment:
        writable_file(out, "--out", (".json", ".gz"))
        if out.endswith(".gz") and not out.endswith(".json.gz"):
            raise SeerError(f"--out must end in .json or .json.gz, got {out!r}")
        return "json"
    writable_file(out, "--out", (".csv", ".json"))
    return Path(out).suffix[1:]


def _main(args: argparse.Namespace) -> int:
    from seer.trace.progress import steps

    if getattr(args, "top", 0) < 0:
        raise SeerError(f"--top must be >= 0, got {args.top}")
    if args.gpu:
        known_gpu(args.gpu)
    fmt = _out_format(args.out, args.verb == "augment")
    progress = not args.no_progress
    if args.verb == "diff":
        a, b = _trace_arg(args.a, "A"), _trace_arg(args.b, "B")
        with steps(6, "seer.trace diff", progress) as stage:
            ea = _explain(a, args.gpu, args.et_a, lambda s: stage(f"A: {s}"))
            eb = _explain(b, args.gpu, args.et_b, lambda s: stage(f"B: {s}"))
        return _diff(ea, eb, args.top, args.out, fmt)
    path = _trace_arg(args.trace)
    with steps(4 if args.verb == "augment" else 3, f"seer.trace {args.verb}", progress) as stage:
        ex = _explain(path, args.gpu, args.et, stage)
        if args.verb == "augment":
            from seer.trace.augment import augment

            stage("write")
            n = augment(ex, args.out)
    if args.verb == "augment":
        print(f"wrote {args.out}: {n} GPU events with seer_ args (op, layer, FLOPs, bytes, % of peak, prediction)")
        return 0
    return _summary(ex, args.top, args.out, fmt)


def _explain(path: Path, gpu: str | None, et: str | None, stage):
    from seer.trace.kernels import explain

    return explain(path, gpu, execution_trace=et, stage=stage)


def _short(t: pd.DataFrame, col: str) -> pd.DataFrame:
    cut = t[col].astype(str).map(lambda s: s if len(s) <= NAME_WIDTH else s[: NAME_WIDTH - 3] + "...")
    return t.assign(**{col: cut})


def _records(t: pd.DataFrame) -> list:
    return json.loads(t.to_json(orient="records"))


def _finite(d: dict) -> dict:
    return {k: (v if math.isfinite(v) else None) for k, v in d.items()}


def _write(out: str, text: str) -> None:
    from seer.data.records import atomic_write

    atomic_write(Path(out), lambda p: p.write_text(text))
    print(f"\nwrote {out}")


def _summary(ex, top: int, out: str | None, fmt: str | None) -> int:
    from seer.trace.summary import furthest, kernel_summary, totals

    table = kernel_summary(ex)
    far = furthest(table, top)
    tot = totals(ex)
    where = f" (measured on {ex.measured_on})" if ex.measured_on and ex.measured_on != ex.gpu else ""
    print(f"{ex.path.name}: {len(ex.kernels)} GPU events, {len(table)} kernels, {ex.steps} steps; "
          f"seer on {ex.gpu}{where}; rates against {ex.peaks_of}'s FP32 and DRAM peaks\n")  # fmt: skip
    for note in ex.notes:
        print(f"{note}\n")
    shown = ["name", "count", "total_ms", "mean_us", "gpu_share", "achieved_tflops", "achieved_gbs",
             "frac_peak_flops", "frac_peak_bw", "predicted_ms", "ratio"]  # fmt: skip
    print(f"The {min(top, len(table))} longest kernels (total over the trace; ratio = measured / predicted):\n")
    print(format_table(_short(table.head(top), "name")[shown].round(4), percent=PERCENT))
    print("\nThe kernels seer is furthest from (|log(measured / predicted)| x total time = off_ms):\n")
    print(format_table(_short(far, "name")[["name", "op", "kind", "count", "total_ms", "predicted_ms", "ratio",
                                            "off_ms"]].round(4), percent=()))  # fmt: skip
    print(f"\n{'GPU time (every GPU event)':40s} {tot['gpu_ms']:12.3f} ms")
    print(f"{'  of which seer predicts':40s} {tot['predicted_kernels_measured_ms']:12.3f} ms")
    print(f"{'  seer predicts it as':40s} {tot['predicted_ms']:12.3f} ms")
    print(f"{'  not predicted (unmodelled, unlinked)':40s} {tot['unpredicted_ms']:12.3f} ms")
    if out and fmt:
        if fmt == "csv":
            _write(out, table.to_csv(index=False))
        else:
            doc = {"source": str(ex.path), "gpu": ex.gpu, "measured_on": ex.measured_on, "peaks_of": ex.peaks_of,
                   "totals": _finite(tot), "kernels": _records(table), "furthest": _records(far)}  # fmt: skip
            _write(out, json.dumps(doc, indent=1) + "\n")
    return 0


def _diff(a, b, top: int, out: str | None, fmt: str | None) -> int:
    from seer.trace.diff import compare, totals

    kernels, ops = compare(a, b, "name"), compare(a, b, "op_name")
    tot = totals(a, b)
    print(f"A = {a.path.name} ({len(a.kernels)} GPU events, {a.steps} steps)\n"
          f"B = {b.path.name} ({len(b.kernels)} GPU events, {b.steps} steps)\n")  # fmt: skip
    for title, t, key in (("ops", ops, "op_name"), ("kernels", kernels, "name")):
        print(f"The {min(top, len(t))} {title} whose time changed most (totals over each trace; ratio = B / A):\n")
        print(format_table(_short(t.head(top), key).round(4), percent=PERCENT))
        print()
    print(f"{'GPU time A':12s} {tot['gpu_ms_a']:12.3f} ms\n{'GPU time B':12s} {tot['gpu_ms_b']:12.3f} ms\n"
          f"{'B - A':12s} {tot['delta_ms']:+12.3f} ms")  # fmt: skip
    if out and fmt:
        if fmt == "csv":
            both = pd.concat([kernels.rename(columns={"name": "key"}).assign(level="kernel"),
                              ops.rename(columns={"op_name": "key"}).assign(level="op")])  # fmt: skip
            _write(out, both[["level", "key", *both.columns[1:-1]]].to_csv(index=False))
        else:
            doc = {"a": str(a.path), "b": str(b.path), "totals": _finite(tot), "ops": _records(ops),
                   "kernels": _records(kernels)}  # fmt: skip
            _write(out, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
