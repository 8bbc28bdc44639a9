"""python -m seer: the package's main job on the built-in data (what `make run` runs).

Fits every GPU of the built-in data into a build folder (default build/fits, so the bundled
fits are never overwritten), evaluates Test-set-I, Test-set-II and the analytical predictors
from there, predicts NeuSight's whole-model graphs where they lie beside the repository, says
whether fitting the same data again gives the bundled fits, and ends with a headline: per GPU,
each figure against its target and its anchor (seer.evaluate.headline). The built-in data is
the project's own measurements (data/<gpu-slug>/ of a clone, taken with cudnn_bench); without
them, NeuSight's (read in place from ../shared/datasets/neusight).

Prints one short line per step; every step's full text (the tables, as `-v` prints them), its
figures as JSON, the warnings and the headline as JSON go to the report folder (build/report).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, cast

from seer.cli import data_path, run, writable_dir

DEFAULT_OUT = "build/fits"
WARNING = "warning: "


@dataclass
class Step:
    """One evaluation of the run: its name, its report files' stem and how it is called (argv of
    its command line, --out of its JSON added)."""

    name: str
    stem: str
    call: Callable[[list[str]], int]
    argv: list[str]
    json: bool = True


@dataclass
class Done:
    step: Step
    rc: int
    seconds: float
    text: str  # stdout, then stderr: the step's full text
    errors: list[str]  # stderr lines that are not warnings (notes, the error of a failed step)
    warnings: list[str]
    doc: dict | None  # its JSON, read back


class _Tee(io.TextIOBase):
    """Writes to several streams (the step's text and, with -v, the terminal)."""

    def __init__(self, *streams: TextIO):
        self.streams = streams

    def write(self, s: str) -> int:
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self) -> None:
        for st in self.streams:
            st.flush()


def run_step(step: Step, report: Path, verbose: bool) -> Done:
    """Run one step with its output captured into report/<stem>.txt (and shown with -v); its
    warnings (stdout or stderr lines starting 'warning: ') are collected, not printed."""
    js = report / f"{step.stem}.json"
    for old in (js, report / f"{step.stem}.txt"):
        old.unlink(missing_ok=True)  # a stale file of an earlier run is never read as this one's
    out, err = io.StringIO(), io.StringIO()
    shown = cast(TextIO, _Tee(out, sys.stdout)) if verbose else out
    argv = [*step.argv, "--out", str(js)] if step.json else step.argv
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(err):
        rc = step.call(argv)
    seconds = time.perf_counter() - t0
    lines = out.getvalue().splitlines() + err.getvalue().splitlines()
    warned = [ln[len(WARNING) :] for ln in lines if ln.startswith(WARNING)]
    errors = [ln for ln in err.getvalue().splitlines() if not ln.startswith(WARNING)]
    text = out.getvalue() + err.getvalue()
    (report / f"{step.stem}.txt").write_text(text)
    doc = json.loads(js.read_text()) if step.json and rc == 0 and js.is_file() else None
    return Done(step, rc, seconds, text, errors, warned, doc)


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def summary(done: Done, fitted: list[str]) -> str:
    """One short line of what a step found (from its JSON), for the progress line."""
    doc = done.doc or {}
    name = done.step.name
    if name == "fit":
        return f"{len(fitted)} GPU(s): {', '.join(fitted)}"
    if name == "Test-set-I":
        o = doc["overall"]
        return f"{o['n']} held-out rows, RMSPE {_pct(o['rmspe'])}, median APE {_pct(o['median_ape'])}"
    if name == "Test-set-II":
        if "agreement" in doc.get("overall", {}):
            o = doc["overall"]
            return f"{o['n']} held-out configs, seer's pick is cuDNN's autotuner's on {_pct(o['agreement'])}"
        m, h = doc["overall"]["model"], doc["overall"]["cudnn_heuristic"]
        return (
            f"{m['n']:.0f} layers, seer's pick within 10% of the fastest on {_pct(m['within_10pct'])} "
            f"(cuDNN's heuristic {_pct(h['within_10pct'])})"
        )
    if name == "analytical":
        import pandas as pd

        from seer.evaluate.analytical import missed_targets

        o, t = doc["overall"], doc["targets"]
        missed = missed_targets(pd.DataFrame(doc["groups"]))
        n = len(doc["groups"])
        verdict = f"met by all {n}" if not missed else f"missed by {len(missed)} of {n}"
        return (
            f"memory-bound kernels: median APE {_pct(o['median_ape'])}, RMSPE {_pct(o['rmspe'])}; "
            f"targets <= {_pct(t['median_ape'])}, {_pct(t['rmspe'])} {verdict} ops x GPUs"
        )
    if name in ("whole models", "training steps"):
        o = doc["overall"]
        ns = [r for r in doc.get("neusight_by_gpu", []) if r["gpu"] == "overall"]
        vs = f" (NeuSight's {_pct(ns[0]['median_ape'])} on {ns[0]['n']})" if ns else ""
        return f"{o['n']} graphs, median APE {_pct(o['median_ape'])}{vs}"
    return ""


def compare_with_bundled(out: Path, since: float = 0.0) -> list[str]:
    """Whether fitting the data again gave the bundled fits, for each GPU fitted into `out` (files
    written after `since`, a time.time()); GPUs with the same answer share a line. Only fits of
    the same data (its content hash, recorded in both files) are compared: fits of other data
    are expected to differ."""
    from seer import fitsfile

    said: dict[str, list[str]] = {}
    for path in sorted(p for p in out.glob("*.json") if p.stat().st_mtime >= since):
        bundled = fitsfile.FITS_DIR / path.name
        if not bundled.is_file():
            said.setdefault("no bundled fits of this GPU", []).append(path.stem)
            continue
        new, old = fitsfile.read(path), fitsfile.read(bundled)
        nd, od = new.get("dataset", {}), old.get("dataset", {})
        if nd.get("content_sha256") != od.get("content_sha256"):
            what = (
                f"not compared: the bundled fits are of other data ({od.get('path', '?')}, {od.get('rows', '?')} rows)"
            )
        elif (cmp := fitsfile.compare(new, old)).same():
            what = f"yes, {cmp.describe()}"
        else:
            what = (
                f"no, {cmp.describe()}; the bundled ones were made by seer {old.get('seer_version', '?')} on "
                f"{old.get('date', '?')}, so this seer fits differently "
                "(refit them with python -m seer.fit to ship its fits)"
            )
        said.setdefault(what, []).append(path.stem)
    return [f"  {', '.join(slugs)}: {what}" for what, slugs in said.items()]


def steps(args: argparse.Namespace, out: Path, plots: Path | None) -> list[Step]:
    """The run's steps, each an existing command line called in-process."""
    from seer.data import records
    from seer.evaluate.__main__ import main as evaluate
    from seer.fit.__main__ import main as fit

    data = ["--data", str(args.data)] if args.data is not None else []
    pl = ["--plots", str(plots)] if plots is not None else []
    fit_argv = ["--quiet", "--out", str(out), *data] + (["--replace"] if args.out == DEFAULT_OUT else [])
    todo = [
        Step("fit", "fit", fit, fit_argv, json=False),
        Step("Test-set-I", "test-set-i", evaluate, ["--set", "I", "--fits", str(out), *data, *pl]),
        Step("Test-set-II", "test-set-ii", evaluate, ["--set", "II", "--fits", str(out), *data, *pl]),
    ]
    ns = records.neusight_dir()
    if ns is not None:  # NeuSight's memory-bound kernels and whole-model graphs, beside the repository
        todo.append(Step("analytical", "analytical", evaluate, ["--set", "analytical"]))
        if (ns.parent / "neusight-models").is_dir():
            todo.append(Step("whole models", "whole-models", evaluate, ["--set", "models", *pl]))
        if (ns.parent / "neusight-train").is_dir():  # training steps: their plots beside, not over, the above
            pl_train = ["--plots", str(plots / "training")] if plots is not None else []
            train = ["--set", "models", "--data", str(ns.parent / "neusight-train"), *pl_train]
            todo.append(Step("training steps", "training-steps", evaluate, train))
    return todo


def _plots_folder(report: Path) -> Path | None:
    try:
        import matplotlib  # noqa: F401  (the plot extra: pip install 'seer[plot]')
    except ImportError:
        return None
    return report / "plots"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer",
        description=__doc__.split("\n\n")[1],
        epilog=__doc__.split("\n\n")[2],
    )
    ap.add_argument(
        "--data",
        type=data_path,
        help="records to fit and score (default: data/ of a clone, else NeuSight's beside it)",
    )
    ap.add_argument("--out", default=DEFAULT_OUT, help="folder for the fresh fits (default: %(default)s)")
    ap.add_argument(
        "--report",
        default="build/report",
        help="folder for each step's full text and JSON, warnings.txt, headline.json and plots (default: %(default)s)",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="print every step's full tables too")
    args = ap.parse_args(argv)
    from seer.data import paths
    from seer.data.prepare import default_data
    from seer.evaluate import headline

    data = args.data if args.data is not None else default_data()  # no data: said before any folder is made
    out = writable_dir(args.out, "--out")
    report = writable_dir(args.report, "--report")
    plots = _plots_folder(report)
    if args.data is not None:
        print(f"seer: fitting and evaluating {data}")
    elif "neusight" in str(data):
        print(
            "seer: no measurements of seer's own (data/<gpu>/ of a clone), so fitting and evaluating "
            f"NeuSight's ({data})"
        )
    else:
        print(f"seer: fitting and evaluating seer's own measurements in {data}")
    where = "" if paths.in_checkout() else " (the current folder: this seer is installed, not a clone)"
    print(f"fits go to {out}, the full report to {report}{where}; -v prints it here too\n")
    t0, started = time.perf_counter(), time.time()
    todo = steps(args, out, plots)
    done: list[Done] = []
    for i, step in enumerate(todo, 1):
        if args.verbose:
            print(f"===== {step.name} " + "=" * (70 - len(step.name)), flush=True)
        d = run_step(step, report, args.verbose)
        done.append(d)
        if d.rc:
            sys.stdout.flush()
            print("\n".join(d.errors) or f"{step.name} failed", file=sys.stderr)
            return d.rc
        fitted = sorted(p.stem for p in out.glob("*.json") if p.stat().st_mtime >= started)
        if args.verbose and d.errors:
            print("\n".join(d.errors))
        print(f"[{i}/{len(todo)}] {step.name:<14} {summary(d, fitted)} ({d.seconds:.1f} s)", flush=True)
        if args.verbose:
            print()
    print(
        "\nfresh fits vs the bundled ones (fitting the same data again must give the same models;\n"
        "fits of other data are expected to differ and are not compared):"
    )
    print("\n".join(compare_with_bundled(out, since=started)))
    warned = [(d.step.name, w) for d in done for w in d.warnings]
    (report / "warnings.txt").write_text("".join(f"{name}: {w}\n" for name, w in warned))
    if warned:
        per = ", ".join(f"{d.step.name} {len(d.warnings)}" for d in done if d.warnings)
        print(f"\n{len(warned)} warnings ({per}): see {report / 'warnings.txt'}")
    if plots is not None and plots.is_dir():
        print(f"plots in {plots}")
    rows = [
        *headline.set_one_rows(_doc(done, "Test-set-I")),
        *headline.set_two_rows(_doc(done, "Test-set-II")),
        *headline.models_rows(_doc(done, "whole models")),
        *headline.models_rows(_doc(done, "training steps"), headline.TRAINING),
    ]
    doc = {
        "data": str(data),
        "fits": str(out),
        "seconds": round(time.perf_counter() - t0, 1),
        "warnings": len(warned),
        "targets_and_anchors": headline.SOURCES,
        "rows": headline.as_json(rows),
    }
    (report / "headline.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(
        f"\nheadline ({time.perf_counter() - t0:.0f} s): seer per GPU against the project's target and an anchor,\n"
        "a published bar (docs/reference.md, Published bars) or a rival on the same data (seer.evaluate.headline)\n"
    )
    print(headline.format_rows(rows))
    return 0


def _doc(done: list[Done], name: str) -> dict:
    return next((d.doc for d in done if d.step.name == name and d.doc is not None), {})


if __name__ == "__main__":
    sys.exit(run(main, "seer"))
