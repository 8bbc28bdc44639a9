"""The counter pass: choose calls from the records, profile them under ncu in chunks, merge.

`counters_pass` reads data/<gpu>/<suite>.csv, picks calls (all, or a stratified sample that
covers every algorithm x main-kernel variant within --counters-budget), writes each chunk's
calls to JSON, runs `ncu ... python -m cudnn_bench ncu-worker --calls chunk.json` and merges
the counters into the record files (atomic rewrite) after every chunk, so an interrupted pass
keeps what it finished and a rerun profiles only calls without counters. The reports and both
CSV exports of every chunk are kept under data/<gpu>/ncu/ (they are the real fixtures the
parser tests want).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from seer.data.records import CONV_OPS
from seer.data.variants import CONV_OP_ALGOS, classify
from seer.hardware import gpus

from . import counters as C
from . import libs
from .configs import TORCH_CONFIGS, Config, ConvConfig, config_from_key
from .cost import CostModel
from .cublaslt import COMPUTE_NAMES, RECORD_FIELDS
from .env import Env, open_env
from .errors import BenchError, FatalGPUError
from .nvtx import open_nvtx
from .options import Options
from .plan import Budget, stable_hash
from .runners import Call, ConvRunner, GemmRunner, Runner
from .runtime import Driver
from .store import plain_suites, read_frame, rewrite, store_files

CHUNK = 40


@dataclass
class CallRef:
    """One call of the records, enough to make it again in the worker."""

    suite: str
    call_id: int
    config_key: str
    math: str
    op: str
    algo: str
    signature: list | None  # cuBLASLt config (id, tile, splitk, ...) for GEMM calls
    kernels: int  # kernels the timing pass saw (0 if unknown)
    variant: str
    est_s: float
    compute: str = ""  # cuBLASLt compute type the timing pass used (cublaslt.COMPUTE_NAMES)


def _int(v) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) else None


def calls_of(frames: dict[str, pd.DataFrame], cost: CostModel | None = None) -> list[CallRef]:
    """Calls that ran (status ok) and have no counters yet."""
    out = []
    for suite, df in frames.items():
        if df.empty:
            continue
        ok = df[df["status"].astype(str).isin(["ok", ""])]
        for _, g in ok.groupby("call_id", sort=False):
            if pd.to_numeric(g["fp32_inst"], errors="coerce").notna().any():
                continue
            r = g.iloc[0]
            op = str(r["op"])
            if op not in (*CONV_OPS, "gemm"):  # PyTorch's memory-bound kernels: no replay under ncu yet
                continue
            sig = None
            if op == "gemm":
                sig = [_int(str(r["algo"]).split(":")[-1])] + [_int(r.get(column)) for column, _ in RECORD_FIELDS]
            named = g[g["kernel"].astype(str).str.strip() != ""]
            main = named[named["role"] == "main"]["kernel"]
            variant = classify(str(main.iloc[0])).label if len(main) else ""
            est = 1.5
            # ncu replays every launch: a row may stand for many (`launches`: cuDNN's loop over
            # groups), so a depthwise FFT call of thousands of launches never fits a sample's budget
            launches = pd.to_numeric(named["launches"], errors="coerce") if "launches" in named else None
            kernels = int(launches.fillna(1).clip(lower=1).sum()) if launches is not None else len(named)
            if cost is not None:
                try:
                    cfg = config_from_key(str(r["config_key"]))
                    if isinstance(cfg, ConvConfig) and cfg.groups > 1 and str(r["algo"]) in cost.GROUP_LOOP_S:
                        kernels = max(kernels, 4 * cfg.groups)  # 4-7 launches a group, names or not
                    est = cost.ncu_s(cfg, str(r["math"]), max(1, kernels))
                except (BenchError, KeyError, ValueError):
                    pass
            compute = str(r.get("compute_type", "") or "")
            out.append(
                CallRef(
                    suite,
                    int(r["call_id"]),
                    str(r["config_key"]),
                    str(r["math"]),
                    op,
                    str(r["algo"]),
                    sig,
                    len(named),
                    variant,
                    est,
                    "" if compute == "nan" else compute,
                )
            )
    return out


def choose(calls: list[CallRef], mode: str, budget: Budget) -> list[CallRef]:
    """`all`: every call (within the budget); `sample`: round-robin over (op, algorithm,
    main-kernel variant, math) groups so that every variant gets counters first."""
    if mode == "none" or not calls:
        return []
    if mode == "all":
        ordered = sorted(calls, key=lambda c: stable_hash(str(c.call_id)))
    else:
        groups: dict[tuple, list[CallRef]] = {}
        for c in sorted(calls, key=lambda c: stable_hash(str(c.call_id))):
            groups.setdefault((c.op, c.algo if c.op in CONV_OPS else "lt", c.variant, c.math), []).append(c)
        keys = sorted(groups, key=lambda k: stable_hash(repr(k)))
        ordered = []
        i = 0
        while True:
            row = [groups[k][i] for k in keys if i < len(groups[k])]
            if not row:
                break
            ordered += row
            i += 1
    if budget.count is not None:
        return ordered[: budget.count]
    if budget.seconds is None:
        return ordered
    out, spent = [], 0.0
    for c in ordered:
        if spent + c.est_s <= budget.seconds:
            out.append(c)
            spent += c.est_s
    return out


def _device(folder: Path) -> tuple[str, int]:
    try:
        d = json.loads((folder / "device.json").read_text())["device"]
        return str(d["cc"]), int(d["sms"])
    except (OSError, KeyError, ValueError):
        return "9.0", 132


RunProcess = Callable[..., subprocess.CompletedProcess]


def counters_pass(
    folder: Path,
    opts: Options,
    log: Callable[[str], None] | None = None,
    ncu: str | None = None,
    runner: RunProcess = subprocess.run,
) -> int:
    """Profile chosen calls under ncu and merge their counters; returns calls merged."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    folder = Path(folder)
    ncu = ncu or libs.ncu_path()
    if not ncu:
        log("ncu (Nsight Compute) was not found, so no counters were collected; set NCU or PATH")
        return 0
    with plain_suites(folder):  # suites committed gzipped and not collected this time are sampled too
        return _profile(folder, opts, log, ncu, runner)


def _profile(folder: Path, opts: Options, log: Callable[[str], None], ncu: str, runner: RunProcess) -> int:
    """counters_pass on the plain suite files: choose, profile chunk by chunk, merge."""
    frames = {p.stem: read_frame(p) for p in store_files(folder)}
    cc, sms = _device(folder)
    try:
        spec = gpus.lookup(json.loads((folder / "device.json").read_text())["device"]["name"])
    except Exception:  # an unknown GPU or no device.json: the H100 cost model
        spec = gpus.lookup("h100-sxm")
    cost = CostModel.for_gpu(spec)
    chosen = choose(calls_of(frames, cost), opts.counters, opts.counters_budget)
    if not chosen:
        log("counters: nothing to profile (every measured call has counters, or none ran)")
        return 0
    log(f"counters: profiling {len(chosen)} calls under ncu, about {sum(c.est_s for c in chosen) / 60:.1f} minutes")
    ncu_dir = folder / "ncu"
    ncu_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    t_end = (time.monotonic() + opts.counters_budget.seconds * 1.5) if opts.counters_budget.seconds else None
    merged_total = 0
    for ci in range(0, len(chosen), CHUNK):
        if t_end is not None and time.monotonic() > t_end:
            log("counters: the budget is spent; a rerun profiles the calls still without counters")
            break
        chunk = chosen[ci : ci + CHUNK]
        base = ncu_dir / f"{stamp}-{ci // CHUNK:03d}"
        calls_json = base.with_suffix(".calls.json")
        calls_json.write_text(json.dumps([asdict(c) for c in chunk], indent=1))
        worker = [
            sys.executable,
            "-m",
            "cudnn_bench",
            "ncu-worker",
            "--calls",
            str(calls_json),
            "--backend",
            str(opts.backend),
            "--device",
            str(opts.device),
        ]
        cmd = C.profile_command(ncu, str(base), worker, C.metric_list())
        timeout = max(60.0, (t_end - time.monotonic()) if t_end else 3600.0)
        try:
            proc = runner(cmd, capture_output=True, text=True, timeout=timeout)
            Path(f"{base}.log").write_text((proc.stdout or "") + (proc.stderr or ""))
        except subprocess.TimeoutExpired:
            log(f"counters: ncu ran past its time on chunk {ci // CHUNK}; its calls stay without counters")
            break
        report = Path(f"{base}.ncu-rep")
        if not report.exists():
            tail = ((proc.stderr or "") + (proc.stdout or "")).strip().splitlines()[-3:]
            log(f"counters: ncu wrote no report for chunk {ci // CHUNK} ({' | '.join(tail)})")
            continue
        try:  # the calls the worker made (a failed one launched nothing)
            made = set(json.loads(Path(f"{calls_json}.ran.json").read_text()))
            chunk = [c for c in chunk if c.call_id in made]
        except (OSError, ValueError):
            pass
        raw = runner(C.import_command(ncu, str(report)), capture_output=True, text=True).stdout
        ren = runner(C.import_command(ncu, str(report), rename=True), capture_output=True, text=True).stdout
        Path(f"{base}.raw.csv").write_text(raw)
        Path(f"{base}.nvtx.csv").write_text(ren)
        n = merge_exports(raw, ren, chunk, frames, folder, cc, sms, log)
        merged_total += n
        log(f"counters: chunk {ci // CHUNK + 1} of {math.ceil(len(chosen) / CHUNK)}: {n} calls merged")
    return merged_total


def merge_reports(folder: Path, log: Callable[[str], None] | None = None) -> int:
    """Merge the counters of the ncu exports already kept under `folder`/ncu/ (each chunk's
    .raw.csv, .nvtx.csv and .calls.json) into the records, without a GPU: for a pass whose merge
    failed on the GPU machine, or exports brought back from another one. Suite files committed
    gzipped are merged into and gzipped again. Returns the calls merged."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    folder = Path(folder)
    raws = sorted((folder / "ncu").glob("*.raw.csv"))
    if not raws:
        raise BenchError(f"counters: {folder / 'ncu'} holds no ncu exports (<chunk>.raw.csv)")
    with plain_suites(folder):
        frames = {p.stem: read_frame(p) for p in store_files(folder)}
        cc, sms = _device(folder)
        total = 0
        for raw in raws:
            base = str(raw)[: -len(".raw.csv")]
            try:
                chunk = [CallRef(**c) for c in json.loads(Path(f"{base}.calls.json").read_text())]
                renamed = Path(f"{base}.nvtx.csv").read_text()
            except (OSError, ValueError, TypeError) as exc:
                log(f"counters: {raw.name}: its chunk's files are incomplete ({exc}); skipped")
                continue
            n = merge_exports(raw.read_text(), renamed, chunk, frames, folder, cc, sms, log)
            log(f"counters: {raw.name}: {n} calls merged")
            total += n
    return total


def merge_exports(
    raw: str,
    renamed: str,
    chunk: list[CallRef],
    frames: dict[str, pd.DataFrame],
    folder: Path,
    cc: str,
    sms: int,
    log: Callable[[str], None],
) -> int:
    """Parse both exports of one report, attribute kernels to calls, merge and rewrite files."""
    try:
        kernels = C.parse_raw_csv(raw)
    except BenchError as exc:
        log(f"counters: {exc}")
        return 0
    try:
        C.attach_ranges(kernels, C.parse_raw_csv(renamed))
    except BenchError:
        pass
    if not any(k.range for k in kernels):
        try:
            C.attach_by_sequence(kernels, [(c.call_id, c.kernels) for c in chunk])
        except BenchError as exc:
            log(f"counters: no NVTX ranges in the report and {exc}")
            return 0
    grouped = C.by_call(kernels)
    total = 0
    for suite, df in frames.items():
        merged, n = C.merge(df, grouped, cc, sms)
        if n:
            rewrite(folder / f"{suite}.csv", merged)
            frames[suite] = read_frame(folder / f"{suite}.csv")
            total += n
    return total


# ====================================================================== the worker (under ncu)
def recall(env: Env, ref: CallRef, cfg: Config, opts: Options) -> tuple[Runner, Call | None]:
    """The runner of a recorded call (of configuration `cfg`) and the call as the timing pass
    made it (None where cuBLASLt no longer offers its algorithm); the caller closes the runner."""
    if isinstance(cfg, ConvConfig):
        algo = {name: i for i, name in CONV_OP_ALGOS[cfg.op].items()}[ref.algo]
        conv = ConvRunner(env, cfg, ref.math)
        return conv, conv.call(algo)
    if isinstance(cfg, TORCH_CONFIGS):
        raise BenchError(f"{cfg.key()}: PyTorch's memory-bound kernels are not replayed under ncu")
    compute = {v: k for k, v in COMPUTE_NAMES.items()}.get(ref.compute)  # None: the math family's default
    gemm = GemmRunner(env, cfg, ref.math, opts.workspace_limit, compute)
    try:
        offered = gemm.heuristics(32)
    except BaseException:
        gemm.close()
        raise
    found = [a for a in offered if list(a.signature()) == list(ref.signature or [])]
    return gemm, (gemm.call(found[0]) if found else None)


def ncu_worker(
    calls_json: str, backend: str = "auto", device: int = 0, log: Callable[[str], None] | None = None
) -> int:
    """Make each listed call once, profiled, inside NVTX range seer:<call_id>; returns calls made."""
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    calls = [CallRef(**c) for c in json.loads(Path(calls_json).read_text())]
    opts = Options(backend=backend, device=device, launch_meta="none", counters="none")
    env = open_env(opts, any(c.op in CONV_OPS for c in calls), any(c.op == "gemm" for c in calls), trace=False)
    nvtx = open_nvtx()
    if nvtx is None:
        log("ncu-worker: no NVTX provider; kernels will be attributed by launch order")
    drv = Driver()
    ran = []
    try:
        for c in calls:
            cfg = config_from_key(c.config_key)
            runner = None
            try:
                runner, call = recall(env, c, cfg, opts)
                if call is None:
                    log(f"ncu-worker: cuBLASLt no longer offers {c.algo} {c.signature} for {c.config_key}")
                    continue
                ws = call.workspace()
                fn = call.make(env.pool.get("ws", ws) if ws else 0, ws)
                fn()  # warm-up, not profiled
                env.backend.synchronize()
                drv("cuProfilerStart")
                if nvtx:
                    nvtx.push(f"{C.RANGE_PREFIX}{c.call_id}")
                fn()
                env.backend.synchronize()
                if nvtx:
                    nvtx.pop()
                drv("cuProfilerStop")
                ran.append(c.call_id)
            except FatalGPUError:
                raise
            except BenchError as exc:
                log(f"ncu-worker: {c.config_key} {c.algo}: {exc}")
            finally:
                if runner is not None:
                    runner.close()
    finally:
        Path(calls_json + ".ran.json").write_text(json.dumps(ran))
        env.close()
    return len(ran)
