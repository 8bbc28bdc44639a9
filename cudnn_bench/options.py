"""What one invocation was asked to do: the run's options, read by the collection, the GPU
environment and the ncu pass alike (kept apart so none of them imports another for it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seer.data.variants import CONV_ALGOS

from .plan import Budget, Shard
from .suites import RUN_ORDER
from .timing import TimingOptions

GiB = 1 << 30


@dataclass
class Options:
    out: Path = Path("data")
    suites: list[str] = field(default_factory=lambda: list(RUN_ORDER))
    maths: list[str] = field(default_factory=lambda: ["fma"])
    budget: Budget = field(default_factory=lambda: Budget(seconds=14 * 60))
    timing: TimingOptions = field(default_factory=TimingOptions)
    backend: str = "auto"
    device: int = 0
    launch_meta: str = "cupti"  # cupti | none
    counters: str = "sample"  # all | sample | none
    counters_budget: Budget = field(default_factory=lambda: Budget(seconds=3 * 60))
    workspace_limit: int = 8 * GiB
    gemm_algos: int = 8
    algos: tuple[int, ...] = tuple(CONV_ALGOS)
    max_call_ms: float = 250.0
    max_bytes: int = 16 * GiB
    limit: int | None = None
    stop_after: float | None = None  # seconds of wall time for this invocation (resume later)
    started: float | None = None  # time.monotonic() when the invocation began: its start-up counts too
    shard: Shard | None = None  # only this slice of every suite (--shard i/n)
    redo: list[str] = field(default_factory=list)  # measure stored configurations again (redo.REASONS)
    interleave: bool = False  # the suites' new configurations in turns by share (plan.interleave)
    gpu_for_plan: str = "h100-sxm"  # only for `plan` on a machine without a GPU
    progress: bool = True
