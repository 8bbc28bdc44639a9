"""Timing one library call on the GPU: warm-up, L2 flush, CUDA events, median and spread.

Per repetition: an L2 flush (memset of a buffer of at least twice the L2 on the same stream),
then start event, the call, end event. Repetitions are queued back to back and read after one
synchronize, so the GPU is rarely idle between them; the flush memset sits between the end of
one repetition and the start of the next, outside the timed interval. The number of
repetitions adapts to the call's length so a slow algorithm cannot eat the budget: at least
`min_reps`, at most `reps`, about `target_ms` of timed work, and a single repetition for calls
slower than `slow_ms` (SEER dropped kernels over 1000 ms anyway).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TimingOptions:
    warmup: int = 2
    reps: int = 10
    min_reps: int = 3
    target_ms: float = 200.0  # timed work per call, roughly
    slow_ms: float = 500.0  # above this, one timed repetition
    flush: bool = True


@dataclass
class Timing:
    """Median and spread (interquartile range) of the timed repetitions, in ms."""

    times_ms: list[float]
    warmup_ms: list[float] = field(default_factory=list)

    @property
    def reps(self) -> int:
        return len(self.times_ms)

    @property
    def median_ms(self) -> float:
        return float(np.median(self.times_ms)) if self.times_ms else math.nan

    @property
    def spread_ms(self) -> float:
        if len(self.times_ms) < 2:
            return math.nan
        q1, q3 = np.percentile(self.times_ms, [25, 75])
        return float(q3 - q1)

    @property
    def calls(self) -> int:
        """Every call made (warm-up and timed): tracers see this many launches of the call."""
        return len(self.warmup_ms) + len(self.times_ms)


def plan_reps(first_ms: float, opts: TimingOptions) -> int:
    """Timed repetitions for a call whose warm-up took first_ms."""
    if not math.isfinite(first_ms) or first_ms <= 0:
        return opts.reps
    if first_ms > opts.slow_ms:
        return 1
    want = math.ceil(opts.target_ms / first_ms)
    return int(max(opts.min_reps, min(opts.reps, want)))


class Flusher:
    """Evicts the L2 between repetitions by writing a buffer of >= 2x the L2 size."""

    def __init__(self, backend, l2_bytes: int, stream: int):
        self.backend, self.stream = backend, stream
        self.nbytes = int(max(2 * int(l2_bytes), 8 << 20))
        self.ptr = backend.alloc(self.nbytes)
        self._value = 0

    def __call__(self) -> None:
        self._value = (self._value + 1) % 255
        self.backend.memset_async(self.ptr, self._value + 1, self.nbytes, self.stream)

    def close(self) -> None:
        if self.ptr:
            self.backend.free(self.ptr)
            self.ptr = 0


class EventPool:
    """Reused CUDA events: creating two per repetition would cost more than the call."""

    def __init__(self, backend):
        self.backend = backend
        self.events: list = []

    def take(self, n: int) -> list:
        while len(self.events) < n:
            self.events.append(self.backend.new_event())
        return self.events[:n]


def _run(backend, stream, fn: Callable[[], None], flush: Flusher | None, events: list, n: int) -> list[float]:
    for i in range(n):
        if flush is not None:
            flush()
        backend.record(events[2 * i], stream)
        fn()
        backend.record(events[2 * i + 1], stream)
    backend.sync_event(events[2 * n - 1])
    return [float(backend.elapsed_ms(events[2 * i], events[2 * i + 1])) for i in range(n)]


def time_call(
    backend,
    stream: int,
    fn: Callable[[], None],
    opts: TimingOptions,
    flush: Flusher | None = None,
    pool: EventPool | None = None,
    warmed: Callable[[], None] | None = None,
) -> Timing:
    """Warm up, then time `fn` (which enqueues work on `stream`) repeatedly.

    The first warm-up call is timed too: it decides how many repetitions follow. `warmed` is
    called after each warm-up call, with the device idle: a tracer takes that call's kernels
    alone there. Exceptions of `fn` propagate (the caller records them as a status).
    """
    pool = pool or EventPool(backend)
    flush = flush if opts.flush else None
    warm: list[float] = []
    for _ in range(max(1, opts.warmup)):
        warm += _run(backend, stream, fn, flush, pool.take(2), 1)
        if warmed is not None:
            warmed()
    n = plan_reps(min(warm), opts)
    times = _run(backend, stream, fn, flush, pool.take(2 * n), n)
    return Timing(times, warm)
