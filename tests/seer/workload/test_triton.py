"""seer.workload.triton: inductor's Triton kernels mapped by their names and argument shapes."""

from __future__ import annotations

import pandas as pd
import pytest

from seer.analytical.roofline import kernel_work
from seer.workload.ops import classify
from seer.workload.triton import is_triton


def _bytes(m) -> float:
    return float(kernel_work(pd.DataFrame([m.config]))["bytes"].iat[0])


def test_pointwise_and_reductions_move_every_tensor_argument_once():
    m = classify("triton_poi_fused_add_cos_sin_0", [[10, 10], [10, 10], [10, 10], []])
    assert m.kind == "elementwise" and _bytes(m) == pytest.approx(3 * 100 * 4, rel=0.01)
    r = classify("triton_red_fused_sum_1", [[64, 4096], [64]], dtype="float16")
    assert r.kind == "reduction" and _bytes(r) == pytest.approx(2 * (64 * 4096 + 64), rel=0.01)
    assert classify("triton_per_fused_softmax_2", [[8, 512], [8, 512]]).kind == "reduction"


def test_matrix_product_templates_are_gemms():
    mm = classify("triton_tem_fused_mm_0", [[64, 32], [32, 16], [64, 16]])
    assert mm.kind == "linear" and {k: mm.config[k] for k in "mkn"} == {"m": 64, "k": 32, "n": 16}
    # an addmm's bias [m, n] with m == n could pass for an operand: the pair whose result is an argument wins
    add = classify("triton_tem_fused_addmm_relu_0", [[16, 16], [16, 8], [8, 16], [16, 16]])
    assert add.kind == "linear" and {k: add.config[k] for k in "mkn"} == {"m": 16, "k": 8, "n": 16}
    bmm = classify("triton_tem_fused_bmm_1", [[4, 64, 32], [4, 32, 16], [4, 64, 16]])
    assert bmm.kind == "bmm" and bmm.config["batch"] == 4 and bmm.config["n"] == 16


def test_what_it_cannot_time_is_unmodelled_and_says_why():
    conv = classify("triton_tem_fused_convolution_0", [[1, 3, 8, 8], [4, 3, 3, 3], [1, 4, 6, 6]])
    assert conv.kind == "unmodelled" and "template" in conv.why
    assert "shapes" in classify("triton_poi_fused_0", []).why
    assert classify("triton_tem_fused_mm_0", [[3, 5], [7, 2]]).kind == "unmodelled"  # no inner sizes agree


def test_only_triton_names_take_the_prefix_handler():
    assert is_triton("triton_poi_x") and is_triton("aten::triton_red_y") and not is_triton("tritonish")
    assert classify("tritonish", [[4, 4]]).why.endswith("no predictor")
