"""`python -m cudnn_bench collect --ray`: the plan in shards, one Ray task per shard and GPU.

The plan is split into N shards (`--shard i/N`: 1 in N configurations of every stratum, so the
shards are alike in size and together the whole plan). Each shard is one Ray task asking for
one GPU; it runs `collect.collect` into its own resumable store, STORE/<i>-of-<N>/<gpu-slug>/,
on storage every node sees (the driver writes a token there that each task must read back).
Ray retries a task whose worker or node was lost (preemption, a kill, an out-of-memory kill)
and one that hit a sticky CUDA error, each attempt in a fresh process; the attempt resumes from
the store, so at most the configuration in flight is measured again and none is stored twice.
The driver prints one progress line (shards done, configurations, rows, ETA) from the ticks the
tasks send to a small actor, and at the end merges every shard store into OUT/<gpu-slug>/
(cudnn_bench.merge: one GPU, driver and library set per slug, every row once). Running the
same command again resumes every shard and merges what is new.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from seer import cluster

from . import collect, merge
from .errors import BenchError, FatalGPUError
from .options import Options
from .plan import Shard
from .store import utc_now, write_json

RUN = "run.json"  # the driver's record in the shard store: shard count and this run's token


@dataclass(frozen=True)
class ClusterOptions:
    """How the shards are spread: where the cluster is and what each shard task asks for."""

    address: str | None = None  # seer.cluster.session's address (None: this machine's cluster or a local one)
    shards: int | None = None  # None: the count of the last run in the store, else 2 per GPU slot
    retries: int = 3  # attempts after a lost worker or node, or a sticky CUDA error
    resources: dict[str, float] = field(default_factory=dict)  # per task instead of one GPU
    accelerator_type: str | None = None  # Ray's accelerator_type, e.g. H100: one GPU kind per run
    store: Path | None = None  # shard stores (None: OUT/shards)

    def task_options(self) -> dict:
        """Ray's options of a shard task. `max_calls=1`: every attempt is a fresh process, as
        neither a CUDA context with a sticky error nor CUPTI's subscription outlives it."""
        custom = dict(self.resources)
        opts: dict = {
            "num_cpus": custom.pop("CPU", 1),
            "num_gpus": custom.pop("GPU", 0 if self.resources else 1),
            "max_retries": self.retries,
            "retry_exceptions": [FatalGPUError],
            "max_calls": 1,
        }
        if custom:
            opts["resources"] = custom
        if self.accelerator_type:
            opts["accelerator_type"] = self.accelerator_type
        return opts

    def need(self) -> dict[str, float]:
        return dict(self.resources) or {"GPU": 1.0}

    def slots(self, available: dict[str, float]) -> int:
        """How many shard tasks a cluster with these resources runs at once."""
        return int(min(available.get(k, 0.0) // v for k, v in self.need().items()))


@dataclass
class ShardState:
    """What the driver knows of one shard while it runs: the latest tick of its attempt."""

    tick: collect.Tick | None = None
    host: str = ""
    attempts: int = 0
    rows_before: int = 0  # rows stored by its earlier, lost attempts

    @property
    def rows(self) -> int:
        return self.rows_before + (self.tick.rows if self.tick else 0)


class Board:
    """The shards' states (a Ray actor: tasks tell it, the driver reads it)."""

    def __init__(self) -> None:
        self.states: dict[int, ShardState] = {}

    def start(self, index: int, host: str) -> None:
        st = self.states.setdefault(index, ShardState())
        st.rows_before, st.tick = st.rows, None
        st.host, st.attempts = host, st.attempts + 1

    def tick(self, index: int, tick: collect.Tick) -> None:
        self.states.setdefault(index, ShardState()).tick = tick

    def read(self) -> dict[int, ShardState]:
        return self.states


@dataclass(frozen=True)
class ShardReport:
    """What a finished shard task returns."""

    index: int
    host: str
    slug: str
    folder: str
    measured: int
    skipped: int
    left: int
    wall_s: float


@dataclass
class RayResult:
    shards: int
    store: Path
    reports: dict[int, ShardReport]
    failed: dict[int, str]
    attempts: dict[int, int]
    merged: list[merge.MergeResult]

    @property
    def left(self) -> int:
        return sum(r.left for r in self.reports.values())


def is_slot(resource: str) -> bool:
    """A resource a task may ask for by count (CPU, GPU, custom), not memory or a node's label."""
    return resource not in ("memory", "object_store_memory") and ":" not in resource


def shard_folder(root: Path, shard: Shard) -> Path:
    return root / f"{shard.index}-of-{shard.count}"


def shard_count(root: Path, asked: int | None, slots: int) -> int:
    """--shards, else the count of the last run in this store (a rerun resumes its shards),
    else two per slot (a slow GPU or a lost attempt holds back less of the run)."""
    if asked:
        return asked
    try:
        return int(json.loads((root / RUN).read_text())["shards"])
    except (OSError, ValueError, KeyError, TypeError):
        return max(1, 2 * slots)


# ====================================================================== the task
def measure_shard(opts: Options, shard: Shard, folder: str, token: str, board) -> ShardReport:
    """One shard on this worker's GPU (a Ray task): collect into its own store, logging to
    <folder>/collect.log and ticking the board after every configuration."""
    import ray  # a Ray worker has it

    where, host = Path(folder), socket.gethostname()
    try:
        seen = json.loads((where.parent / RUN).read_text()).get("token")
    except (OSError, ValueError, AttributeError):
        seen = None
    if seen != token:
        raise BenchError(
            f"shard {shard} on {host}: {where.parent} is not the store the driver made (a disk of "
            "this node only?): give --shard-store a folder every node sees (NFS, Lustre, a shared home)"
        )
    # waited for: a worker lost right after starting must still count as an attempt (a message
    # sent without waiting dies with its process, and the retry would look like the first try)
    ray.get(board.start.remote(shard.index, host))
    where.mkdir(parents=True, exist_ok=True)

    def log(line: str) -> None:
        with open(where / "collect.log", "a", encoding="utf-8") as fh:
            fh.write(f"{utc_now()} {line}\n")

    log(f"shard {shard} on {host}")
    t0, last = time.monotonic(), list[collect.Tick]()

    def watch(tick: collect.Tick) -> None:
        board.tick.remote(shard.index, tick)
        last[:] = [tick]

    try:
        res = collect.collect(replace(opts, shard=shard, out=where, progress=False), log=log, watch=watch)
    except BaseException as exc:
        log(f"failed: {type(exc).__name__}: {exc}")
        raise
    if last:  # the board has every tick before the driver hears the shard is done
        ray.get(board.tick.remote(shard.index, last[0]))
    return ShardReport(
        shard.index, host, res.folder.name, str(res.folder), res.measured, res.skipped, res.left, time.monotonic() - t0
    )


# ====================================================================== the driver
class ClusterProgress:
    """The driver's line: shards done, configurations, rows, elapsed and ETA. The ETA scales
    the planned GPU seconds still to go by the wall seconds the cluster has taken per planned
    second so far (which counts its parallelism); shards not yet started count as the driver's
    plan of one shard."""

    def __init__(self, n: int, per_shard: tuple[int, float], stream=None, enabled: bool = True):
        self.n, self.per_shard = n, per_shard
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = enabled
        self.t0 = time.monotonic()
        self._last, self._shown = 0.0, False

    def line(self, states: dict[int, ShardState], finished: int, failed: int) -> str:
        configs = total = rows = 0
        est_left = est_done = 0.0
        for i in range(1, self.n + 1):
            st = states.get(i)
            t = st.tick if st else None
            rows += st.rows if st else 0
            if t is None:
                total += self.per_shard[0]
                est_left += self.per_shard[1]
                continue
            configs += t.skipped + t.done
            total += t.skipped + t.todo
            est_done += t.est_done
            est_left += max(0.0, t.est_todo - t.est_done)
        elapsed = time.monotonic() - self.t0
        running = sum(1 for i, st in states.items() if st.tick is not None) - finished - failed
        eta = collect.Progress.fmt(est_left * elapsed / est_done) if est_done > 0 else "?"
        return (
            f"shards {finished}/{self.n} done, {max(0, running)} running"
            + (f", {failed} failed" if failed else "")
            + f" | {configs}/{total} configurations | {rows} rows | elapsed {collect.Progress.fmt(elapsed)} | ETA {eta}"
        )

    def show(self, states: dict[int, ShardState], finished: int, failed: int, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self._last < (1.0 if self.tty else 30.0)):
            return
        self._last = now
        text = self.line(states, finished, failed)
        self.stream.write(("\r" + text.ljust(150)) if self.tty else text + "\n")
        self.stream.flush()
        self._shown = self.tty

    def say(self, text: str) -> None:
        """A line of its own (a shard finished), above the progress line."""
        if self._shown:
            self.stream.write("\r" + " " * 150 + "\r")
            self._shown = False
        self.stream.write(text + "\n")
        self.stream.flush()


def run_tasks(ray, refs: dict, board, progress: ClusterProgress) -> tuple[dict[int, ShardReport], dict[int, str]]:
    """Wait for every shard task; a failed one (after Ray's retries) is a line, not the end."""
    pending, reports, failed = dict(refs), {}, {}
    n = progress.n
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    rep = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    failed[i] = cluster.reason(exc)
                    progress.say(f"shard {i}/{n} failed: {failed[i]}")
                    continue
                reports[i] = rep
                progress.say(
                    f"shard {i}/{n} on {rep.host} ({rep.slug}): {rep.measured} measured, {rep.skipped} already "
                    f"there, {rep.left} left, {collect.Progress.fmt(rep.wall_s)}"
                )
            progress.show(ray.get(board.read.remote()), len(reports), len(failed), force=not pending)
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return reports, failed


def collect_ray(opts: Options, cl: ClusterOptions, log: Callable[[str], None] | None = None) -> RayResult:
    """Measure the plan's shards on the cluster's GPUs, then merge them into OUT/<gpu-slug>/."""
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if opts.shard is not None:
        raise BenchError("--shard and --ray do not go together: --ray makes the shards itself (--shards N)")
    root = Path(cl.store) if cl.store is not None else Path(opts.out) / "shards"
    with cluster.session(cl.address) as ray:
        available = ray.cluster_resources()
        slots = cl.slots(available)
        if slots < 1:
            need = ", ".join(f"{v:g} {k}" for k, v in cl.need().items())
            raise BenchError(
                f"the Ray cluster has no room for a shard task ({need}; it has "
                f"{', '.join(f'{v:g} {k}' for k, v in sorted(available.items()) if is_slot(k)) or 'nothing'}): "
                "start its nodes with their GPUs (ray start --num-gpus N) or name the resource with --ray-resources"
            )
        n = shard_count(root, cl.shards, slots)
        token = secrets.token_hex(8)
        root.mkdir(parents=True, exist_ok=True)
        write_json(root / RUN, {"shards": n, "token": token, "started": utc_now(), "driver": socket.gethostname()})
        one = collect.plan_for(replace(opts, shard=Shard(1, n)))
        say(
            f"Ray: {slots} shard tasks at once on {len(ray.nodes())} nodes; {n} shards of about "
            f"{len(one.items)} configurations and {one.est_s / 60:.1f} GPU minutes each (on {opts.gpu_for_plan}) "
            f"into {root}"
        )
        board = ray.remote(num_cpus=0)(Board).remote()
        task_opts = cl.task_options()
        task = ray.remote(max_calls=task_opts.pop("max_calls"))(measure_shard).options(**task_opts)
        refs = {
            task.remote(opts, Shard(i, n), str(shard_folder(root, Shard(i, n))), token, board): i
            for i in range(1, n + 1)
        }
        progress = ClusterProgress(n, (len(one.items), one.est_s), enabled=opts.progress)
        reports, failed = run_tasks(ray, refs, board, progress)
        attempts = {i: st.attempts for i, st in ray.get(board.read.remote()).items()}
    merged = merge.merge([root], Path(opts.out), say) if any(root.rglob("device.json")) else []
    result = RayResult(n, root, reports, failed, attempts, merged)
    if failed:
        i, why = next(iter(sorted(failed.items())))
        raise BenchError(
            f"{len(failed)} of {n} shards failed (shard {i}: {why}; logs in {root}/<i>-of-{n}/collect.log); "
            "what they finished is merged, and the same command resumes them"
        )
    if result.left:
        say(f"{result.left} configurations are left (--budget or --stop-after): run the same command to go on")
    else:
        say(f"done: {n} shards measured and merged into {opts.out}")
    return result
