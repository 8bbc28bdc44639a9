"""cudnn_bench.timing and runtime buffers: warm-up, L2 flush, events, median and spread."""
from __future__ import annotations

import math

import numpy as np
import pytest
from fakes import FakeBackend

from cudnn_bench import timing as T
from cudnn_bench.errors import DeviceOutOfMemory
from cudnn_bench.runtime import BufferPool, random_pattern


def test_plan_reps():
    o = T.TimingOptions(reps=10, min_reps=3, target_ms=200, slow_ms=500)
    assert T.plan_reps(0.01, o) == 10
    assert T.plan_reps(50.0, o) == 4
    assert T.plan_reps(150.0, o) == 3
    assert T.plan_reps(600.0, o) == 1
    assert T.plan_reps(float("nan"), o) == 10


def test_time_call_median_spread_and_flush():
    be = FakeBackend()
    durations = iter([5.0, 1.0, 1.0, 2.0, 3.0, 4.0, 100.0, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5])

    def fn():
        be.clock_ms += next(durations)

    flush = T.Flusher(be, 50 << 20, stream=7)
    t = T.time_call(be, 7, fn, T.TimingOptions(warmup=2, reps=5, min_reps=3, target_ms=10), flush)
    # warm-ups 5 and 1 ms: the faster one (1 ms) plans ceil(10 / 1) -> capped at reps = 5
    assert t.warmup_ms == pytest.approx([5.0, 1.0]) and t.reps == 5 and t.calls == 7
    assert t.times_ms == pytest.approx([1.0, 2.0, 3.0, 4.0, 100.0])  # flush time is outside
    assert t.median_ms == pytest.approx(3.0)
    assert t.spread_ms == pytest.approx(4.0 - 2.0)
    # one flush per call, on the call's stream, of >= 2x the L2
    assert len(be.memsets) == 7 and all(m[3] == 7 and m[2] >= 100 << 20 for m in be.memsets)
    assert len({m[1] for m in be.memsets}) > 1  # a changing value: no memset is a no-op


def test_single_rep_has_no_spread():
    t = T.Timing([2.0], [2.0])
    assert t.median_ms == 2.0 and math.isnan(t.spread_ms)


def test_no_flush_when_disabled():
    be = FakeBackend()
    flush = T.Flusher(be, 1 << 20, 0)
    T.time_call(be, 0, lambda: None, T.TimingOptions(warmup=1, reps=3, flush=False), flush)
    assert be.memsets == []
    assert flush.nbytes == 8 << 20  # small L2s still get a useful flush


def test_errors_of_the_call_propagate():
    be = FakeBackend()

    def boom():
        raise RuntimeError("library said no")

    with pytest.raises(RuntimeError, match="said no"):
        T.time_call(be, 0, boom, T.TimingOptions())


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_random_pattern_is_non_zero_and_finite(dtype):
    raw = random_pattern(dtype, nbytes=1 << 16, seed=3)
    if dtype == "float32":
        v = raw.view(np.float32)
    elif dtype == "float16":
        v = raw.view(np.float16).astype(np.float32)
    else:
        v = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    assert v.size == (1 << 16) // raw.view(np.uint8).itemsize // (4 if dtype == "float32" else 2)
    assert np.all(np.isfinite(v)) and np.all(np.abs(v) >= 0.49) and np.all(np.abs(v) <= 1.51)
    assert (v < 0).mean() == pytest.approx(0.5, abs=0.05)
    assert np.array_equal(raw, random_pattern(dtype, nbytes=1 << 16, seed=3))


def test_buffer_pool_grows_reuses_and_refills():
    be = FakeBackend(mem_bytes=1 << 30)
    pool = BufferPool(be)
    p1 = pool.get("x", 1000, "float32")
    uploads = be.uploads
    assert pool.get("x", 500, "float32") == p1 and be.uploads == uploads  # reused, not refilled
    pool.get("x", 500, "float16")
    assert be.uploads > uploads  # another dtype: refilled
    p2 = pool.get("x", 40 << 20, "float16")
    assert p2 != p1 and p1 not in be.allocs and be.allocs[p2] == 40 << 20
    with pytest.raises(DeviceOutOfMemory):
        pool.get("y", 2 << 30)
    pool.close()
    assert be.allocs == {}
