"""The kernels of a backward pass and of gradient accumulation (seer.workload.backward)."""

import pytest

from seer.workload.backward import accumulation, backward_of, conv_dgrad, gemm_backward
from seer.workload.ops import Mapped, classify


def _conv_out_hw(cfg):
    h = (cfg["h_in"] + 2 * cfg["pad_h"] - cfg["dil_h"] * (cfg["kh"] - 1) - 1) // cfg["stride_h"] + 1
    w = (cfg["w_in"] + 2 * cfg["pad_w"] - cfg["dil_w"] * (cfg["kw"] - 1) - 1) // cfg["stride_w"] + 1
    return h, w


def test_linear_backward_is_dgrad_wgrad_and_bias():
    fwd = classify("addmm", [[768], [4096, 1024], [1024, 768]])  # x[4096, 1024] W[1024, 768]
    bw = backward_of(fwd, "addmm")
    dgrad, wgrad, bias = bw.parts
    assert (dgrad.config["m"], dgrad.config["k"], dgrad.config["n"]) == (4096, 768, 1024)  # dx = dy W^T
    assert (wgrad.config["m"], wgrad.config["k"], wgrad.config["n"]) == (1024, 4096, 768)  # dW = x^T dy
    assert bias.kind == "reduction" and (bias.config["rows"], bias.config["cols"]) == (4096, 768)
    assert [p.label for p in bw.parts] == ["dgrad", "wgrad", "bias grad"]
    assert (dgrad.config["trans"], wgrad.config["trans"]) == ("nn", "nt")  # cuBLAS's layouts of each product
    # an input that needs no gradient (the first layer's): no dgrad; no parameters: no wgrad
    assert [p.label for p in backward_of(fwd, "addmm", dgrad=False).parts] == ["wgrad", "bias grad"]
    assert [p.label for p in backward_of(classify("mm", [[8, 4], [4, 2]]), "mm", wgrad=False).parts] == ["dgrad"]


def test_batched_backward_keeps_the_batch():
    fwd = classify("bmm", [[32, 128, 64], [32, 64, 256]])
    a, b = backward_of(fwd, "bmm").parts
    assert a.config == {"op": "bmm", "batch": 32, "m": 128, "k": 256, "n": 64, "trans": "tn"}
    assert b.config == {"op": "bmm", "batch": 32, "m": 64, "k": 128, "n": 256, "trans": "nt"}
    assert gemm_backward(fwd.config, dgrad=False, wgrad=False) == ()


@pytest.mark.parametrize("stride,pad,k", [(1, 1, 3), (1, 0, 1), (1, 3, 7), (2, 1, 3), (2, 0, 1)])
def test_conv_dgrad_maps_dy_back_to_the_input(stride, pad, k):
    fwd = classify("conv2d", [[8, 64, 56, 56], [128, 64, k, k]], [8, 128, 56 // stride, 56 // stride])
    fwd = Mapped("conv", {**fwd.config, "stride_h": stride, "stride_w": stride, "pad_h": pad, "pad_w": pad})
    d = conv_dgrad(fwd.config)
    assert (d["c_in"], d["c_out"]) == (128, 64)  # K -> C channels
    if stride == 1:  # exact: a convolution of dy over the output's size back to the input's size
        assert (d["h_in"], d["w_in"]) == _conv_out_hw(fwd.config)
        assert _conv_out_hw(d) == (56, 56)
    else:  # the forward's geometry, channels swapped: the same FLOPs
        assert (d["h_in"], d["stride_h"]) == (56, stride)
    labels = [p.label for p in backward_of(fwd, "conv2d").parts]
    assert labels == ["dgrad", "wgrad as forward"]


def test_memory_bound_backwards_have_their_traffic():
    gelu = backward_of(classify("gelu", [[8, 512, 4096]], [8, 512, 4096]), "gelu")
    (k,) = gelu.parts
    assert k.config["fn"] == "mul" and (k.config["rows"], k.config["cols"]) == (8 * 512, 4096)  # dy, x -> dx
    assert backward_of(classify("add", [[4, 8], [4, 8]], [4, 8]), "add").kind == "dispatch"  # passed on
    both = backward_of(classify("mul", [[4, 8], [4, 8]], [4, 8]), "mul")
    assert len(both.parts) == 2  # x * y: a gradient for each operand
    scaled = backward_of(classify("truediv", [[4, 8], [1]], [4, 8]), "truediv")
    assert len(scaled.parts) == 1 and scaled.parts[0].config["fn"] == "copy"  # dy / s: one unary stream
    ln = backward_of(classify("layer_norm", [[2048, 1024]], [2048, 1024]), "layer_norm")
    assert [p.kind for p in ln.parts] == ["elementwise", "reduction"] and ln.parts[1].config["rows"] == 4096
    soft = backward_of(classify("softmax", [[64, 512]], [64, 512]), "softmax")
    assert soft.kind == "softmax" and soft.parts[0].config["fn"] == "mul"
    emb = backward_of(
        classify("embedding", [[8, 512]], [8, 512, 1024], module="Embedding"), "embedding", table_rows=30522
    )
    zero, add = emb.parts
    assert (zero.config["rows"], add.config["rows"]) == (30522, 8 * 512)  # the table zeroed, the rows added
    assert backward_of(classify("view", [[4]]), "view").kind == "dispatch"
    assert backward_of(Mapped("unmodelled", why="x: no predictor"), "x").kind == "unmodelled"


def test_accumulation_is_one_pass_over_the_parameters():
    acc = accumulation([[768, 1024], [768]])
    (k,) = acc.parts
    assert k.config["fn"] == "add" and k.config["rows"] * k.config["cols"] >= 768 * 1024 + 768
    assert k.config["rows"] * k.config["cols"] < 768 * 1024 + 768 + 1024  # rounded up to whole rows only
    assert accumulation([]).kind == "dispatch"
