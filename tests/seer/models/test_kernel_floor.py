"""The kernel-level memory-bound model: floors of a few us, bandwidth fits, transfer, dispatch."""

import numpy as np
import pandas as pd
import pytest

from seer.errors import SeerError
from seer.hardware.peaks import spec_of
from seer.models.kernel_floor import (
    KernelFloors,
    KernelLine,
    bundled,
    fit_dispatch,
    fit_kernel_floors,
    fit_kind_scales,
    fit_line,
    op_times,
)


def _synthetic(floor_ms=0.003, const_ms=0.001, bw_gbs=1500.0, n=200, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    b = 10 ** rng.uniform(3, 9, n)
    t = np.maximum(floor_ms, const_ms + b / (bw_gbs * 1e6)) * (1 + noise * rng.standard_normal(n))
    return b, t


def test_fit_line_recovers_a_synthetic_line():
    b, t = _synthetic()
    line = fit_line(b, t, "a100-40gb")
    assert line.bw_gbs == pytest.approx(1500.0, rel=0.05)
    assert line.floor_ms == pytest.approx(0.003, rel=0.05)
    assert line.time(np.array([1e3]))[0] == pytest.approx(line.floor_ms)


def test_fit_line_refuses_too_few_kernels():
    b, t = _synthetic(n=5)
    with pytest.raises(SeerError, match="needs"):
        fit_line(b, t, "a100-40gb")


def test_bundled_floors_are_a_few_us_not_tens():
    floors = bundled()
    assert floors.lines, "the bundled kernel floors have no GPU"
    for line in floors.lines.values():
        assert 0.0005 < line.floor_ms < 0.006  # a kernel's floor, not a whole PyTorch call's 26-61 us
        assert 0.5 < line.bw_gbs / spec_of(line.gpu).dram_gbs < 1.2


def test_transfer_follows_the_target_dram_and_leaves_the_gpu_itself_out():
    a = KernelLine("a100-40gb", 0.003, 0.0, 0.8 * spec_of("a100-40gb").dram_gbs)
    h = KernelLine("h100-sxm", 0.002, 0.0, 0.9 * spec_of("h100-sxm").dram_gbs)
    floors = KernelFloors({"a100-40gb": a, "h100-sxm": h})
    t4 = spec_of("t4")
    moved = floors.line(t4)
    assert moved.source.startswith("spec") and moved.n == 0
    assert moved.bw_gbs == pytest.approx(0.85 * t4.dram_gbs)
    assert floors.without("h100-sxm").line("h100-sxm").bw_gbs == pytest.approx(0.8 * spec_of("h100-sxm").dram_gbs)
    with pytest.raises(SeerError):
        KernelFloors().line("t4")


def test_fit_kernel_floors_groups_by_gpu_and_round_trips():
    b, t = _synthetic(bw_gbs=700.0, n=300)
    k = pd.DataFrame({"gpu": "v100-sxm2", "bytes": b, "part_bytes": [(x,) for x in b], "kernel_ms": t,
                      "n_parts": 1, "n_kernels": 1})  # fmt: skip
    floors = fit_kernel_floors(k, ("synthetic",))
    assert floors.lines["v100-sxm2"].bw_gbs == pytest.approx(700.0, rel=0.1)
    back = KernelFloors.from_dict(floors.to_dict())
    assert back.lines["v100-sxm2"] == floors.lines["v100-sxm2"]
    with pytest.raises(SeerError, match="schema"):
        KernelFloors.from_dict({"schema": "other"})


def test_dispatch_is_the_call_time_less_the_kernel_and_positive():
    line = KernelLine("t4", 0.002, 0.0, 300.0)
    floors = KernelFloors({"t4": line})
    calls = pd.DataFrame({"gpu": "Tesla T4", "op": "elementwise", "fn": "relu", "rows": [1, 64, 1024],
                          "cols": [1024] * 3, "dtype": "float32"})  # fmt: skip
    from seer.analytical.memory import work

    kernel = line.time(work(calls[["op", "fn", "rows", "cols", "dtype"]])["bytes"].to_numpy())
    calls["time_ms"] = kernel + 0.025
    d = fit_dispatch(calls, floors)
    assert d["t4"] == pytest.approx(0.025)
    assert bundled().dispatch("t4") > 0


def test_kind_scales_recover_a_kind_slower_than_plain_streaming():
    """A kind whose kernels take 3x the floor and 2x the streaming time of the GPU's line gets
    those scales; element-wise kernels (the line's own) keep none, and the scales round-trip."""
    rng = np.random.default_rng(1)
    line = KernelLine("h100-sxm", 0.002, 0.0, 2500.0)
    floors = KernelFloors({"h100-sxm": line})
    b = 10 ** rng.uniform(3, 9, 400)
    kind = np.where(np.arange(400) % 2 == 0, "layer_norm", "elementwise")
    slow = kind == "layer_norm"
    t = np.where(slow, np.maximum(3 * 0.002, 2 * b / 2.5e9), line.time(b)) * (1 + 0.01 * rng.standard_normal(400))
    k = pd.DataFrame({"trace": "x", "gpu": "h100-sxm", "kind": kind, "part_bytes": [(x,) for x in b],
                      "kernel_ms": t})  # fmt: skip
    scales = fit_kind_scales(k, floors)
    assert set(scales) == {"layer_norm"}
    assert scales["layer_norm"].floor == pytest.approx(3.0, rel=0.05)
    assert scales["layer_norm"].stream == pytest.approx(2.0, rel=0.05)
    scaled = KernelFloors(floors.lines, kinds=scales)
    assert op_times(k, scaled) == pytest.approx(t, rel=0.1)
    assert KernelFloors.from_dict(scaled.to_dict()).kinds == scales
    # a kind the fit never saw streams as the line says
    assert scaled.times("h100-sxm", np.array([1e9]), np.array(["pool"]))[0] == pytest.approx(line.time(1e9))
