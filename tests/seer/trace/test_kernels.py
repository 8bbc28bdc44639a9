"""seer.trace.kernels: one row per GPU event, each op's work and prediction shared among its kernels."""

from __future__ import annotations

import numpy as np
import pytest

from seer.trace.kernels import COLUMNS, SPLITS, _match, explain


def _per_op(ex, col: str):
    k = ex.kernels[ex.kernels["op"] >= 0]
    return k.groupby("op")[col].sum(min_count=1)


def test_one_row_per_gpu_event_with_the_traces_own_times(gpt_b8, h100, raw_gpu_events):
    raw = raw_gpu_events(h100 / "gpt_b8.pt.trace.json.gz")
    k = gpt_b8.kernels
    assert list(k.columns) == COLUMNS and len(k) == len(raw)
    assert k["dur_us"].sum() == pytest.approx(sum(float(e["dur"]) for e in raw), rel=1e-12)
    assert sorted(k["name"]) == sorted(e["name"] for e in raw)
    assert set(k["split"]) <= set(SPLITS)


def test_the_kernels_of_an_op_share_its_prediction_and_work(param_resnet, gpt_b8):
    for ex in (gpt_b8, param_resnet):
        ops = ex.ops.set_index("op")
        timed = ops["kind"].isin(["linear", "bmm", "conv", "elementwise", "copy", "norm", "softmax", "layer_norm",
                                  "embedding", "reduction", "pool", "concat", "memcpy"])  # fmt: skip
        pred = _per_op(ex, "predicted_us")
        want = ops.loc[timed[timed].index, "predicted_ms"] * 1e3
        # a multi-part op whose kernels take one part each sums its parts: the op's time, predicted part by part
        np.testing.assert_allclose(pred.reindex(want.index).to_numpy(float), want.to_numpy(float), rtol=1e-9)
        assert ex.kernels.loc[ex.kernels["split"] == "none", "predicted_us"].isna().all()


def test_kernels_seer_does_not_time_have_no_prediction_not_a_made_up_one(param_resnet):
    k = param_resnet.kernels
    none = k[k["split"] == "none"]
    assert len(none) and none["predicted_us"].isna().all() and none["flops"].isna().all()
    untimed = set(none["kind"]) - {"unmodelled", "dispatch", "host_copy", "unlinked"}
    assert none.loc[none["kind"].isin(untimed), "cat"].isin(["memset", "memcpy"]).all()  # a timed op's helpers
    assert (none["why"] != "").all()  # and says why
    assert k.loc[k["kind"] == "unlinked", "op"].eq(-1).all()


def test_an_op_of_several_parts_gives_each_kernel_its_part(conv_backward):
    """A convolution backward seer times as dgrad + wgrad that launched a memset and two kernels:
    each kernel one part, the memset none; the parts add up to the op."""
    ex = explain(conv_backward)
    k = ex.kernels
    assert list(k["split"]) == ["none", "part", "part"] and k["kind"].eq("conv").all()
    assert np.isnan(k["predicted_us"].iat[0]) and "memset" in k["why"].iat[0]
    assert k["predicted_us"].iloc[1:].gt(0).all() and k["flops"].iloc[1:].gt(0).all()
    assert k["predicted_us"].sum() == pytest.approx(ex.ops["predicted_ms"].iat[0] * 1e3, rel=1e-9)


def test_match_pairs_labels_with_kernel_names_then_launch_order():
    assert _match(["dgrad", "wgrad"], ["sm75_xmma_wgrad_x", "sm75_xmma_dgrad_y"]) == [1, 0]
    assert _match(["dgrad", "wgrad", "bias grad"], ["reduce_kernel", "k_wgrad", "k_dgrad"]) == [2, 1, 0]
    assert _match(["a", "b"], ["x", "y"]) == [0, 1]


def test_achieved_rates_are_against_the_gpus_peaks(gpt_b8):
    k = gpt_b8.kernels
    gemm = k[k["kind"] == "linear"].iloc[0]
    # 67 FP32 TFLOP/s on the H100 SXM (seer.hardware.gpus): achieved / peak
    assert gemm["frac_peak_flops"] == pytest.approx(gemm["achieved_tflops"] / 66.9, rel=1e-9)
    assert gemm["bound"] == "compute" and gemm["flops"] == 2 * 4096 * 768 * 2304
    copy = k[k["kind"] == "copy"].iloc[0]
    assert copy["bound"] == "memory" and copy["frac_peak_bw"] == pytest.approx(copy["achieved_gbs"] / 3350, rel=1e-9)
    assert gemm["ratio"] == pytest.approx(gemm["dur_us"] / gemm["predicted_us"])


def test_triton_kernels_are_predicted_by_their_op(shared):
    ex = explain(shared("hta/triton_example_triton_example.json.gz"))
    (row,) = ex.kernels.to_dict("records")
    assert row["name"].startswith("triton_poi") and row["op_name"] == row["name"]
    assert row["kind"] == "elementwise" and row["bytes"] == 3 * 100 * 4  # three 10x10 float tensors, once each
    assert row["predicted_us"] > 0 and row["bound"] == "memory"


def test_another_gpu_is_predicted_but_the_rates_stay_against_the_traces_own(h100):
    ex = explain(h100 / "gpt_b1.pt.trace.json.gz", "a100-80gb-sxm")
    assert "A100" in ex.gpu and "H100" in ex.peaks_of and ex.kernels["predicted_us"].notna().all()
