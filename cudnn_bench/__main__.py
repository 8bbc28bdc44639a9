"""python -m cudnn_bench: collect GPU kernel measurements for seer.

  collect       measure the suites on this machine's GPU (resumable), then ncu counters
  plan          print what `collect` would measure and its estimated GPU minutes (no GPU needed)
  counters      the ncu counter pass alone, over records already collected
  merge         combine stores (shards, sessions, machines) into OUT/<gpu-slug>/, every row once
  export-excel  SEER-format workbooks (sheets train/test, one per kernel variant) from records
  info          the GPU, the libraries and the tools that would be used
  report        what a data folder holds: statuses, kernels, counters, estimate vs wall time
  ncu-worker    (internal) the process ncu profiles

Every failure the user can act on ends with one sentence on stderr and exit code 2. A data
folder is DATA or --data DATA alike (counters, report, export-excel).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from seer import cluster
from seer.errors import SeerError

# the parser's own needs only: each command imports its modules when it runs, so --help stays light
from .argtypes import (
    algos,
    budget,
    folder,
    maths,
    positive_ms,
    redo_reasons,
    resources,
    shard,
    size_bytes,
    suites,
    whole,
)
from .cli import Parser
from .errors import BenchError, os_error_line
from .maths import MATHS
from .options import Options
from .plan import Budget
from .runtime import BACKENDS
from .suites import RUN_ORDER, SUITES
from .timing import TimingOptions

# --stop-after counts from here: loading a large store and opening cuDNN take seconds that the
# caller's own time limit (gpu_oneshot's steps) already counts
STARTED = time.monotonic()

EXAMPLES = """
examples:
  python -m cudnn_bench plan                                   # what the default run measures
  python -m cudnn_bench collect --out data                     # ~14 GPU-min timing + ~3 min counters
  python -m cudnn_bench collect --suite test_set_ii --budget 2m --counters none
  python -m cudnn_bench collect --suite seer_grid --math fma,tf32 --budget 500
  python -m cudnn_bench plan --suite conv_grid --budget 9m       # what one GPU call of the new grid covers
  python -m cudnn_bench collect --suite conv_bwd --budget 90s    # backward-data and backward-filter
  python -m cudnn_bench.coverage                               # Test-set-II within trust distance of the grids
  python -m cudnn_bench collect --suite seer_grid --ray head:6379  # every GPU of a Ray cluster
  python -m cudnn_bench merge data/shards --out data           # stores into data/<gpu-slug>/
  python -m cudnn_bench counters data/h100-sxm --counters sample --counters-budget 5m
  python -m cudnn_bench report data/h100-sxm                   # what a data folder holds
  python -m cudnn_bench export-excel data/h100-sxm --out data/h100-sxm/seer
"""


def _data_args(p: argparse.ArgumentParser, what: str) -> None:
    """DATA, positional or as --data (both spellings were in use: counters took --data, report
    a positional); _data reads whichever was given."""
    p.add_argument("data", nargs="?", metavar="DATA", help=what)
    p.add_argument("--data", dest="data_opt", metavar="DATA", help="the same, as an option")


def _data(a: argparse.Namespace) -> str:
    given = [d for d in (a.data, a.data_opt) if d is not None]
    if not given:
        raise BenchError(f"{a.command}: give the data folder (DATA or --data DATA)")
    if len(given) == 2 and given[0] != given[1]:
        raise BenchError(f"{a.command}: two data folders, {given[0]} and --data {given[1]}: give one")
    return given[0]


def _plan_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what to measure")
    g.add_argument(
        "--suite",
        type=suites,
        default=list(RUN_ORDER),
        metavar="NAMES",
        help=f"comma-separated suites: {', '.join(SUITES)}, or all (default: all)",
    )
    g.add_argument(
        "--math",
        type=maths,
        default=["fma"],
        metavar="MODES",
        help="math families: fma (FP32, no TF32; SEER's setting), tf32, fp16, bf16, or all; "
        "each is recorded as its own variant family (default: fma)",
    )
    g.add_argument(
        "--budget",
        type=budget,
        default=None,
        metavar="B",
        help="time limit of the timing pass (20m, 900s, 1h), or a count of configurations (500), "
        "or none; the suites are subsampled deterministically to fit (default: 14m; with --ray, "
        "none, and a given limit holds for each shard)",
    )
    g.add_argument(
        "--limit",
        type=whole(1),
        default=None,
        metavar="N",
        help="at most N configurations per suite before the budget (for smoke runs)",
    )
    g.add_argument(
        "--max-call-ms",
        type=positive_ms,
        default=250.0,
        metavar="MS",
        help="leave out configurations whose fastest call is estimated above MS (default: 250)",
    )
    g.add_argument(
        "--max-bytes",
        type=size_bytes,
        default=16 << 30,
        metavar="SIZE",
        help="leave out configurations whose tensors need more than SIZE (default: 16GiB)",
    )
    g.add_argument(
        "--gemm-algos",
        type=whole(1),
        default=8,
        metavar="N",
        help="cuBLASLt heuristic algorithms timed per GEMM (default: 8)",
    )
    g.add_argument(
        "--shard",
        type=shard,
        default=None,
        metavar="I/N",
        help="only slice I of N of every suite (1 in N configurations of each stratum: "
        "filter size x stride, GEMM batch x transposes): separate sessions or machines "
        "each take one slice, disjoint and together the whole suite",
    )
    t = p.add_argument_group("timing")
    t.add_argument("--reps", type=whole(1), default=10, help="timed repetitions at most (default: 10)")
    t.add_argument("--min-reps", type=whole(1), default=3, help="timed repetitions at least (default: 3)")
    t.add_argument("--warmup", type=whole(0), default=2, help="warm-up calls (default: 2)")
    t.add_argument(
        "--target-ms",
        type=positive_ms,
        default=200.0,
        help="timed work per call; long calls get fewer repetitions (default: 200)",
    )


def build_parser() -> Parser:
    p = Parser(
        prog="python -m cudnn_bench",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    c = sub.add_parser(
        "collect",
        help="measure on this machine's GPU",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure cuDNN convolution-forward algorithms and cuBLASLt GEMM algorithms "
        "over the suites, appending records to OUT/<gpu-slug>/<suite>.csv; a rerun "
        "skips what is there. Then (unless --counters none) profile a sample of the "
        "calls under Nsight Compute and merge the counters into the records.",
    )
    _plan_args(c)
    c.add_argument("--out", type=folder, default=Path("data"), help="output folder (default: data)")
    r = c.add_argument_group("GPU")
    r.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="GPU runtime for memory, streams and events: pycuda (primary), the CUDA driver "
        "API through ctypes, or CuPy; auto = the first that works in that order",
    )
    r.add_argument("--device", type=whole(0), default=0, help="CUDA device number (default: 0)")
    r.add_argument(
        "--workspace-limit",
        type=size_bytes,
        default=8 << 30,
        metavar="SIZE",
        help="largest workspace an algorithm may use; larger is recorded as workspace_too_large (default: 8GiB)",
    )
    r.add_argument(
        "--algos",
        type=algos,
        default=tuple(range(8)),
        metavar="LIST",
        help="cuDNN forward algorithms to run, e.g. 0-7 (default) or 0,1,2,5-7; the gradients "
        "(suite conv_bwd) always run every algorithm of their direction",
    )
    r.add_argument(
        "--launch-meta",
        choices=("cupti", "none"),
        default="cupti",
        help="per-kernel names, launch geometry, registers, shared memory and durations "
        "from CUPTI activity records (default), or none (the ncu pass can add them)",
    )
    k = c.add_argument_group("counters")
    k.add_argument(
        "--counters",
        choices=("all", "sample", "none"),
        default="sample",
        help="ncu counter pass over all measured calls, a stratified sample, or none (default: sample)",
    )
    k.add_argument(
        "--counters-budget",
        type=budget,
        default=Budget(seconds=3 * 60),
        metavar="B",
        help="time limit of the counter pass, or a count of calls (default: 3m)",
    )
    c.add_argument(
        "--stop-after",
        type=budget,
        default=Budget(),
        metavar="TIME",
        help="stop this invocation after TIME (e.g. 9m) of measuring, whatever the plan; "
        "the same command later resumes (for machines with a per-command time limit)",
    )
    c.add_argument(
        "--interleave",
        action="store_true",
        help="measure the suites' configurations in turns, each suite taking its share of the "
        f"estimated time ({', '.join(f'{n} {SUITES[n].share:g}' for n in RUN_ORDER)}), so a run "
        "stopped early has spread its time over every suite given, not spent it on the first",
    )
    c.add_argument(
        "--redo",
        type=redo_reasons,
        default=[],
        metavar="REASONS",
        help="measure again the stored configurations that the harness got wrong: unsplit = a "
        "call whose CUPTI records did not split into whole calls (no kernel names, or a span "
        "covering one chunk of the batch), as before the split went by launch order; the new "
        "blocks supersede the old (kept in <suite>.csv.superseded)",
    )
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    ry = c.add_argument_group(
        "cluster (Ray)",
        "Split the plan into shards (--shard i/N), one Ray task with one GPU per shard, each "
        "writing its own resumable store; then merge them into OUT/<gpu-slug>/. Lost workers are "
        "retried and resume; the same command again resumes every shard.",
    )
    cluster.add_argument(ry, "measure the shards")
    ry.add_argument(
        "--shards",
        type=whole(1),
        default=None,
        metavar="N",
        help="shards of the plan (default: those of the last run in the shard store, else 2 per GPU)",
    )
    ry.add_argument(
        "--retries",
        type=whole(0),
        default=3,
        metavar="N",
        help="attempts after a lost worker or node, or a sticky CUDA error; each resumes (default: 3)",
    )
    ry.add_argument(
        "--shard-store",
        type=folder,
        default=None,
        metavar="DIR",
        help="the shards' stores, on storage every node sees (default: OUT/shards)",
    )
    ry.add_argument(
        "--accelerator-type",
        default=None,
        metavar="TYPE",
        help="only GPUs Ray labels TYPE (e.g. H100, A100): one GPU kind per run on a mixed cluster",
    )
    ry.add_argument(
        "--ray-resources",
        type=resources,
        default=None,
        metavar="NAME=N",
        help="what a shard task asks for instead of one GPU (a custom resource, e.g. fake_gpu=1)",
    )

    pl = sub.add_parser(
        "plan",
        help="print the collection plan and its GPU minutes (no GPU needed)",
        description="What `collect` with the same options would measure: per suite, how many of its "
        "configurations fit the budget (the suites are subsampled deterministically, stratified) and "
        "their estimated GPU minutes on --gpu, from datasheet peaks (cudnn_bench/cost.py). The count "
        "changes with the budget, the suites and the cost model; no GPU is needed.",
    )
    _plan_args(pl)
    pl.add_argument(
        "--gpu", default="h100-sxm", help="GPU to estimate for (a seer.hardware.gpus name; default: h100-sxm)"
    )
    pl.add_argument("--list", action="store_true", help="list every planned configuration")
    pl.add_argument(
        "--session",
        action="store_true",
        help="what one-shot device calls (cudnn_bench/gpu_oneshot.sh) cover instead of the plan",
    )
    pl.add_argument(
        "--calls",
        type=whole(1),
        default=1,
        metavar="N",
        help="with --session: this many calls of 9.5 minutes (default: 1)",
    )
    pl.add_argument(
        "--data",
        type=Path,
        default=Path("data"),
        metavar="DIR",
        help="with --session: the data folder the calls resume (default: data): what its "
        "data/<gpu-slug> stores hold is skipped, and what an older harness split wrongly is "
        "measured again first",
    )

    k2 = sub.add_parser(
        "counters",
        help="the ncu counter pass over collected records",
        description="Profile the calls of records already collected under Nsight Compute (ncu) and "
        "merge the hardware counters into the records; what `collect` does after timing, alone. Needs "
        "the GPU the records were taken on and ncu (NCU or PATH).",
    )
    _data_args(k2, "the data/<gpu-slug> folder of collected records")
    k2.add_argument(
        "--counters",
        choices=("all", "sample"),
        default="sample",
        help="profile every measured call, or a sample stratified by suite and kernel (default: sample)",
    )
    k2.add_argument(
        "--counters-budget",
        type=budget,
        default=Budget(seconds=3 * 60),
        metavar="B",
        help="time limit of the pass (5m, 300s), or a count of calls (default: 3m)",
    )
    k2.add_argument("--backend", choices=BACKENDS, default="auto", help="GPU runtime, as for collect (default: auto)")
    k2.add_argument("--device", type=whole(0), default=0, help="CUDA device number (default: 0)")
    k2.add_argument(
        "--from-reports",
        action="store_true",
        help="profile nothing: merge the exports already under DATA/ncu/ into the records (no GPU or "
        "ncu needed; for a pass whose merge failed, or exports copied from the GPU machine)",
    )

    cs = sub.add_parser(
        "census",
        help="ask cuDNN which kernel it would launch, for many configurations (no timing)",
        description="For every configuration of the census design (each real layer of "
        "cudnn_bench.families at each batch size of its family, and about 32,000 space-filling points), "
        "each direction's workspace query for every algorithm and cuDNN's heuristic order, and the "
        "kernels each call would launch, captured into a CUDA graph that never runs (cudnn_bench.capture): "
        "no timing. cuDNN runs a direct fallback kernel, 10-20x slower, on some configurations of six of "
        "its algorithms (the forward GEMM algorithm and the backward-filter ALGO_1 ask for no workspace "
        "exactly then); seer.fit's variant choosers learn that choice from these labels. Rows go to "
        "OUT/<gpu-slug>/census/; a stopped run keeps what it asked and the same command asks the rest. "
        "Run it in a process of its own (as this command is): the captured calls never ran.",
    )
    cs.add_argument("--out", type=folder, default=Path("data"), help="data folder of <gpu-slug>/ (default: data)")
    cs.add_argument("--math", choices=MATHS, default="fma", help="the math family asked about (default: fma)")
    cs.add_argument(
        "--stop-after",
        type=budget,
        default=Budget(),
        metavar="TIME",
        help="stop after TIME (e.g. 45s); the same command later asks the rest",
    )
    cs.add_argument("--limit", type=whole(1), default=None, metavar="N", help="at most N configurations")
    cs.add_argument("--backend", choices=BACKENDS, default="auto", help="GPU runtime, as for collect (default: auto)")
    cs.add_argument("--device", type=whole(0), default=0, help="CUDA device number (default: 0)")

    e = sub.add_parser(
        "export-excel",
        help="SEER-format workbooks from records",
        description="Write SEER's workbook format (one .xlsx per kernel variant, sheets train and test "
        "by SEER's 70/30 split) from harness records, for SEER's own MATLAB code.",
    )
    _data_args(e, "a record CSV or a data/<gpu-slug> folder")  # str: '' is refused, not '.'
    e.add_argument("--out", type=Path, required=True, help="folder for the .xlsx files")
    e.add_argument("--math", choices=MATHS, default="fma", help="the math family to export (default: fma)")

    mg = sub.add_parser(
        "merge",
        help="combine stores into OUT/<gpu-slug>/ (every row once)",
        description="Find every store folder (device.json beside <suite>.csv files) under the "
        "SOURCES and append each configuration the target OUT/<gpu-slug>/ lacks, once: shards of "
        "collect --shard or --ray, sessions, other machines. GPUs, drivers or library versions are "
        "never mixed within one GPU slug; a store being written is refused.",
    )
    mg.add_argument("sources", nargs="+", type=Path, metavar="SOURCE", help="folders holding stores")
    mg.add_argument("--out", type=folder, default=Path("data"), help="target folder of <gpu-slug>/ (default: data)")

    sub.add_parser(
        "info",
        help="the GPU, libraries and tools that would be used",
        description="Print the Python, the cuDNN, cuBLASLt, CUDA runtime and NVRTC libraries a "
        "collection would load (paths and versions, with notes on mismatches), the tools (ncu), then "
        "the GPU. Without a GPU it ends with one sentence and exit code 2.",
    )

    rp = sub.add_parser(
        "report",
        help="summarize collected records (coverage, statuses, estimate vs wall time)",
        description="What a data folder holds, per suite and math: configurations, calls by status, "
        "the share with per-kernel rows and with counters, main-kernel variants, and the measured wall "
        "time against the plan's estimate (to recalibrate cudnn_bench/cost.py).",
    )
    _data_args(rp, "a data/<gpu-slug> folder or a record CSV")  # str: '' is refused, not '.'

    w = sub.add_parser("ncu-worker", description="(internal) the process ncu profiles")  # no help line
    w.add_argument("--calls", required=True, help="the file of calls to run")
    w.add_argument("--backend", default="auto", help="GPU runtime (default: auto)")
    w.add_argument("--device", type=whole(0), default=0, help="CUDA device number (default: 0)")
    return p


def _options(a: argparse.Namespace) -> Options:
    return Options(
        out=getattr(a, "out", Path("data")),
        suites=a.suite,
        maths=a.math,
        budget=a.budget if a.budget is not None else default_budget(a),
        timing=TimingOptions(
            warmup=a.warmup, reps=max(1, a.reps), min_reps=max(1, min(a.min_reps, a.reps)), target_ms=a.target_ms
        ),
        backend=getattr(a, "backend", "auto"),
        device=getattr(a, "device", 0),
        launch_meta=getattr(a, "launch_meta", "cupti"),
        algos=getattr(a, "algos", tuple(range(8))),
        counters=getattr(a, "counters", "none"),
        counters_budget=getattr(a, "counters_budget", Budget(seconds=180)),
        workspace_limit=getattr(a, "workspace_limit", 8 << 30),
        gemm_algos=a.gemm_algos,
        max_call_ms=a.max_call_ms,
        max_bytes=a.max_bytes,
        limit=a.limit,
        stop_after=getattr(a, "stop_after", Budget()).seconds,
        started=STARTED,
        shard=a.shard,
        redo=getattr(a, "redo", []),
        interleave=getattr(a, "interleave", False),
        gpu_for_plan=getattr(a, "gpu", "h100-sxm"),
        progress=not getattr(a, "no_progress", False),
    )


def default_budget(a: argparse.Namespace) -> Budget:
    """14 minutes on one GPU; the whole plan across a cluster."""
    return Budget() if getattr(a, "ray", None) is not None else Budget(seconds=14 * 60)


def cmd_collect(a: argparse.Namespace) -> int:
    from . import collect
    from .ray_collect import ClusterOptions, collect_ray

    opts = _options(a)
    if a.ray is None:
        given = [f for f in ("shards", "shard_store", "accelerator_type", "ray_resources") if getattr(a, f) is not None]
        if given:
            raise BenchError(f"--{given[0].replace('_', '-')} is an option of --ray (a collection on a Ray cluster)")
        return 130 if collect.collect(opts).interrupted else 0
    if opts.redo:
        raise BenchError("--redo measures again what one store folder holds: run it without --ray")
    cl = ClusterOptions(
        address=a.ray or None,
        shards=a.shards,
        retries=a.retries,
        resources=a.ray_resources or {},
        accelerator_type=a.accelerator_type,
        store=a.shard_store,
    )
    collect_ray(opts, cl)
    return 0


def cmd_census(a: argparse.Namespace) -> int:
    from . import census
    from .env import open_env

    opts = Options(out=a.out, backend=a.backend, device=a.device, launch_meta="none", progress=False)
    env = open_env(opts, need_conv=True, need_gemm=False, trace=False)
    try:
        census.run(env, a.out, a.math, a.stop_after.seconds, a.limit)
    except KeyboardInterrupt:
        return 130
    finally:
        env.close()
    return 0


def cmd_plan(a) -> int:
    from . import collect
    from .oneshot import session_coverage

    if a.session:
        try:
            print(session_coverage(a.gpu, calls=a.calls, data=a.data))
        except SeerError as exc:
            raise BenchError(f"plan --session: {exc}") from None
        return 0
    opts = _options(a)
    plan = collect.plan_for(opts)
    print(f"plan for {opts.gpu_for_plan} (estimated from datasheet peaks; see cudnn_bench/cost.py CostModel)")
    print(plan.summary())
    if a.list:
        for it in plan.items:
            print(f"{it.suite}\t{it.math}\t{it.est_s:.3f}s\t{it.config.key()}\t{it.config.name}")
    return 0


def cmd_info() -> int:
    """Library paths, the versions they report (loading them as a collection would, runtime
    dependencies of cuDNN first), notes on version mismatches, then the GPU."""
    from . import libs, runtime
    from .cublaslt import CublasLt
    from .cudnn import Cudnn

    print(f"python: {sys.version.split()[0]} ({platform.machine()})")
    for k, v in libs.describe().items():
        print(f"{k}: {v}")
    versions = {}
    for kind, cls in (("cudnn", Cudnn), ("cublaslt", CublasLt)):
        try:
            lib = cls.load()
        except BenchError as exc:
            print(f"{kind} version: not loaded ({exc})")
            continue
        versions[kind] = lib.version_str()
        if isinstance(lib, Cudnn):
            versions["cuda"] = lib.cudart_version_str()
    versions["nvrtc"] = libs.nvrtc_version()
    print("versions: " + ", ".join(f"{k} {v or '-'}" for k, v in versions.items()))
    for kind, path in libs.loaded().items():
        print(f"loaded {kind}: {path}")
    try:
        for note in libs.version_notes(versions):
            print(f"note: {note}")
    except BenchError as exc:
        print(f"error: {exc}")
    drv, dev = runtime._init_driver(0)  # NoGPUError here on a machine without a GPU
    info = runtime.read_device_info(drv, dev, 0)
    for k, v in info.to_dict().items():
        print(f"{k}: {v}")
    return 0


def cmd_counters(a) -> int:
    """The counter pass alone: it needs records, a GPU and ncu; without any of them it stops
    with one sentence and exit code 2 (exit 0 would read as counters collected)."""
    from seer.data.records.load import record_files

    from . import libs, ncu_pass, runtime

    data = Path(_data(a))
    if not data.is_dir() or not record_files(data):
        raise BenchError(
            f"counters: {data} is not a folder of collected records "
            "(data/<gpu-slug> with <suite>.csv files from collect)"
        )
    if a.from_reports:
        print(f"counters: {ncu_pass.merge_reports(data)} calls merged from {data / 'ncu'}")
        return 0
    runtime._init_driver(a.device)  # NoGPUError on a machine without a GPU
    ncu = libs.ncu_path()
    if not ncu:
        raise BenchError(
            "counters: ncu (Nsight Compute) was not found, so no counters can be collected; set NCU or put ncu on PATH"
        )
    opts = Options(backend=a.backend, device=a.device, counters=a.counters, counters_budget=a.counters_budget)
    ncu_pass.counters_pass(data, opts, ncu=ncu)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if a.command is None:
        parser.print_help()
        return 2
    try:
        if a.command == "plan":
            return cmd_plan(a)
        if a.command == "collect":
            return cmd_collect(a)
        if a.command == "merge":
            from .merge import merge

            if not merge(a.sources, a.out, print):
                raise BenchError(f"merge: nothing to merge under {', '.join(map(str, a.sources))}")
            return 0
        if a.command == "counters":
            return cmd_counters(a)
        if a.command == "census":
            return cmd_census(a)
        if a.command == "export-excel":
            from .export import export_seer_excel

            files = export_seer_excel(_data(a), a.out, a.math)
            print(f"wrote {len(files)} workbooks to {a.out}")
            return 0
        if a.command == "info":
            return cmd_info()
        if a.command == "report":
            from .export import report

            print(report(_data(a)))
            return 0
        if a.command == "ncu-worker":
            if not Path(a.calls).is_file():
                raise BenchError(f"ncu-worker: the calls file {a.calls} does not exist")
            from . import ncu_pass

            ncu_pass.ncu_worker(a.calls, a.backend, a.device)
            return 0
    except SeerError as exc:
        sys.stderr.write(f"cudnn_bench: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("cudnn_bench: interrupted; finished configurations are saved, rerun to resume\n")
        return 130
    except OSError as exc:  # a file the harness cannot read or write: one line, not a traceback
        sys.stderr.write(f"cudnn_bench: {os_error_line(exc)}\n")
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
