"""Roofline and efficiency (PyProf / PyTorch profile analysis style) and the peak figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seer.analytical import kernel_work, peaks_for, roofline, roofline_records
from seer.errors import SeerError, UnknownGPUError
from seer.hardware.peaks import L2_TO_DRAM


def test_compute_bound_kernel_on_a100():
    # A100 40GB in the table: 19.5 TFLOP/s FP32, 1555 GB/s
    r = roofline(1e9, 1e6, 1.0, "a100-40gb").iloc[0]
    assert r["compute_ms"] == pytest.approx(1e9 / 19.5e12 * 1e3)
    assert r["memory_ms"] == pytest.approx(1e6 / 1555e9 * 1e3)
    assert r["ideal_ms"] == r["compute_ms"] and r["bound"] == "compute"
    assert r["intensity"] == pytest.approx(1000.0)
    assert r["ridge"] == pytest.approx(19.5e12 / 1555e9)
    assert r["achieved_gflops"] == pytest.approx(1000.0)
    assert r["flops_fraction_of_peak"] == pytest.approx(1e12 / 19.5e12)
    assert r["bw_fraction_of_peak"] == pytest.approx(1e9 / 1555e9)
    assert r["efficiency"] == pytest.approx(r["ideal_ms"] / 1.0)


def test_memory_bound_vectors_and_links():
    t4 = peaks_for("t4")
    r = roofline(np.array([1e6, 0.0]), np.array([3.2e8, 3.2e8]), 2.0, "t4")  # scalars broadcast
    assert list(r["bound"]) == ["memory", "memory"]
    assert r["memory_ms"].iloc[0] == pytest.approx(3.2e8 / (t4.dram_gbs * 1e9) * 1e3)
    assert r["bw_fraction_of_peak"].iloc[0] == pytest.approx(3.2e8 / 2e-3 / (t4.dram_gbs * 1e9))
    assert r["intensity"].iloc[1] == 0.0
    pcie = roofline(0, 1.6e9, 200.0, "t4", memory="pcie").iloc[0]
    assert pcie["memory_ms"] == pytest.approx(1.6e9 / 15.75e9 * 1e3)  # PCIe gen3 x16
    over = roofline(0, 1e9, 2.0, "t4", peaks={"peak_dram_bw": 250}).iloc[0]
    assert over["bw_fraction_of_peak"] == pytest.approx(2.0)  # peaks below the GPU: above 1


def test_shares_of_peak_are_fractions():
    # Kernels no faster than their roofline: every share of the peak lies in [0, 1], and the
    # efficiency is the larger of the two shares (ideal time = the slower roof).
    rng = np.random.default_rng(0)
    f, b = 10 ** rng.uniform(3, 12, 200), 10 ** rng.uniform(3, 10, 200)
    ideal = roofline(f, b, 1.0, "h100-sxm")["ideal_ms"].to_numpy()
    r = roofline(f, b, ideal * rng.uniform(1, 50, 200), "h100-sxm")
    for c in ("flops_fraction_of_peak", "bw_fraction_of_peak", "efficiency"):
        assert ((r[c] >= 0) & (r[c] <= 1 + 1e-12)).all(), c
    both = np.maximum(r["flops_fraction_of_peak"], r["bw_fraction_of_peak"])
    np.testing.assert_allclose(r["efficiency"], both, rtol=1e-12)
    assert not any(c.endswith("_pct") or "pct_" in c for c in r.columns)


@pytest.mark.parametrize(
    "args,name",
    [
        ((1e9, 1e6, 0.0), "time_ms"),
        ((-1.0, 1e6, 1.0), "flops"),
        ((1.0, float("nan"), 1.0), "bytes_moved"),
        ((0.0, 0.0, 1.0), "flops and bytes_moved"),
    ],
)
def test_bad_input(args, name):
    with pytest.raises(SeerError, match=name):
        roofline(*args, gpu="t4")


def test_unknown_gpu_and_link():
    with pytest.raises(UnknownGPUError, match="argument gpu"):
        roofline(1, 1, 1, "Voodoo 5")
    with pytest.raises(SeerError, match="memory"):
        roofline(1, 1, 1, "t4", memory="nvlink")


def test_records_work_and_roofline():
    rec = pd.DataFrame(
        {
            "gpu": ["Tesla T4"] * 4,
            "op": ["elementwise", "gemm", "memcpy", "conv_fwd"],
            "fn": ["add", "", "h2d", ""],
            "rows": [1000, None, 1000, None],
            "cols": [1000, None, 250, None],
            "batch": [None, 2, None, 8],
            "m": [None, 128, None, None],
            "n": [None, 256, None, None],
            "k": [None, 64, None, None],
            "c_in": [None, None, None, 3],
            "h_in": [None, None, None, 32],
            "w_in": [None, None, None, 32],
            "c_out": [None, None, None, 16],
            "kh": [None, None, None, 3],
            "kw": [None, None, None, 3],
            "stride_h": [None, None, None, 1],
            "stride_w": [None, None, None, 1],
            "pad_h": [None, None, None, 1],
            "pad_w": [None, None, None, 1],
            "dil_h": [None, None, None, 1],
            "dil_w": [None, None, None, 1],
            "groups": [None, None, None, 1],
            "time_ms": [0.05, 0.02, 0.1, 0.03],
            "kernel": ["k0", "k1", "k2", "k3"],
        }
    )
    w = kernel_work(rec)
    assert list(w["flops"]) == [1e6, 2 * 2 * 128 * 256 * 64, 0, 2 * 8 * 16 * 3 * 9 * 32 * 32]
    assert w["bytes"].iloc[0] == 12e6
    assert w["bytes"].iloc[1] == 4 * 2 * (128 * 64 + 64 * 256 + 128 * 256)
    assert w["bytes"].iloc[3] == 4 * (8 * 3 * 32 * 32 + 16 * 3 * 9 + 8 * 16 * 32 * 32)
    r = roofline_records(rec)
    assert list(r.index) == [0, 1, 2, 3] and list(r["kernel"]) == ["k0", "k1", "k2", "k3"]
    t4 = peaks_for("t4")
    assert r.loc[2, "memory_ms"] == pytest.approx(1e6 / (t4.pcie_gbs * 1e9) * 1e3)  # host copy: PCIe
    assert r.loc[0, "bound"] == "memory"
    assert r.loc[0, "bw_fraction_of_peak"] == pytest.approx(12e6 / 5e-5 / 320e9)


def test_peaks_from_table_and_overrides():
    v = peaks_for("Tesla V100-SXM2-16GB")
    assert (v.dram_gbs, v.fp32_gflops, v.sms, v.l2_bytes) == (900, 15700, 80, 6 * 2**20)
    assert v.l2_gbs == 2847.5  # measured by the DLRM repo
    h = peaks_for("h200")
    assert h.l2_gbs == pytest.approx(L2_TO_DRAM * 4800) and h.pcie_gbs == 63.0
    assert 2.9 < L2_TO_DRAM < 3.3  # median of the four measured L2/DRAM ratios
    with pytest.raises(SeerError, match="nonsense"):
        peaks_for("t4", {"nonsense": 1})
