"""seer.workload.capture: live models captured on fake tensors and predicted like graphs and traces."""

from __future__ import annotations

import math
import resource
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from seer.workload.capture import capture, fake_mode, predict_capture, predict_model  # noqa: E402


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def conv_net():
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )  # fmt: skip


def kernels(ops):
    return ops[~ops["kind"].isin(["dispatch"])]


def test_an_mlp_is_two_gemms_and_a_relu_with_their_shapes():
    cap = capture(mlp(), torch.randn(32, 64))
    k = kernels(cap.ops)
    assert list(k["kind"]) == ["linear", "elementwise", "linear"]
    assert [(c["m"], c["k"], c["n"]) for c in k["config"] if c["op"] == "linear"] == [(32, 64, 256), (32, 256, 10)]
    assert set(cap.ops["direction"]) == {"forward"} and cap.parameters == []


def test_an_mlp_is_predicted_per_op_and_whole_on_two_gpus():
    for gpu in ("h100-sxm", "t4"):
        mt = predict_model(mlp(), torch.randn(32, 64), gpu)
        k = kernels(mt.ops)
        assert (k["predicted_ms"] > 0).all() and list(k["kind"]) == ["linear", "elementwise", "linear"]
        assert k["predictor"].iloc[1] == "kernel:elementwise" and k["predictor"].iloc[0] in ("linear", "gemm")
        assert mt.totals["predicted_ms"] > 0 and mt.totals["kernel_sum_ms"] > 0
        assert not (mt.ops["kind"] == "unmodelled").any()


def test_a_conv_net_maps_every_kernel_with_the_convolutions_geometry():
    mt = predict_model(conv_net(), torch.randn(8, 3, 32, 32), "h100-sxm")
    assert not (mt.ops["kind"] == "unmodelled").any(), mt.ops[mt.ops["kind"] == "unmodelled"]
    convs = [c for k, c in zip(mt.ops["kind"], mt.ops["config"]) if k == "conv"]
    assert [(c["c_in"], c["c_out"], c["h_in"], c["stride_h"], c["pad_h"]) for c in convs] == [
        (3, 16, 32, 2, 1),
        (16, 32, 8, 1, 1),
    ]
    assert mt.by_kind().set_index("kind").loc["conv", "predicted"] > 0


def test_training_takes_the_backward_from_the_joint_graph_and_adds_the_optimizer():
    mt = predict_model(conv_net(), torch.randn(8, 3, 32, 32), "h100-sxm", training=True, optimizer="adam")
    ops = mt.ops
    assert list(dict.fromkeys(ops["direction"])) == ["forward", "backward", "optimizer"]
    # the forward runs to the loss (a batch norm's buffer updates come first among the joint graph's outputs)
    fwd = set(ops.loc[ops["direction"] == "forward", "op"])
    assert {"convolution", "relu", "max_pool2d_with_indices", "addmm", "nll_loss_forward"} <= fwd
    assert not any(op.endswith("_backward") for op in fwd)
    back = ops[ops["direction"] == "backward"]
    assert {"convolution_backward", "threshold_backward", "max_pool2d_with_indices_backward"} <= set(back["op"])
    # the first convolution's input needs no gradient: AOTAutograd asks for wgrad only
    first = back[back["op"] == "convolution_backward"].iloc[-1]
    assert first["predictor"] == "conv_fwd[wgrad as forward]"
    assert not (ops["kind"] == "unmodelled").any(), ops[ops["kind"] == "unmodelled"][["name", "why"]]
    assert (ops["direction"] == "optimizer").sum() == 7  # Adam's passes
    n = sum(p.numel() for p in conv_net().parameters())
    assert mt.totals["parameters"] == n
    assert mt.totals["predicted_ms"] > mt.totals["predicted_ms_forward"] > 0


def test_sgd_is_three_passes_and_none_leaves_the_step_without_optimizer():
    cap = capture(mlp(), torch.randn(4, 64), training=True)
    with_sgd = predict_capture(cap, "t4")
    without = predict_capture(cap, "t4", optimizer=None)
    assert (with_sgd.ops["direction"] == "optimizer").sum() == 3
    assert "optimizer" not in set(without.ops["direction"])
    assert with_sgd.totals["kernel_sum_ms"] > without.totals["kernel_sum_ms"]


def test_a_model_built_in_fake_mode_or_on_meta_allocates_no_weights():
    with fake_mode():
        big = torch.nn.Sequential(*[torch.nn.Linear(8192, 8192) for _ in range(4)])  # 1 GiB of float32
        x = torch.zeros(16, 8192)
    cap = capture(big, x)
    assert (kernels(cap.ops)["kind"] == "linear").sum() == 4
    with torch.device("meta"):
        meta = torch.nn.Sequential(torch.nn.Linear(8192, 8192), torch.nn.ReLU())
    assert len(kernels(capture(meta, torch.zeros(2, 8192, device="meta")).ops)) == 2


def test_memory_stays_small_for_a_billion_parameters():
    """A child process builds and captures a 1e9-parameter stack: its peak RSS stays far below
    the 4 GB its float32 weights would take. Its own peak: Linux's ru_maxrss carries the parent's
    over fork and exec (the whole suite's pytest, 1.7 GB once the H100's grid had grown, read
    as the child's), the high-water mark in /proc/self/status is the new process image's."""
    code = (
        "import os, resource, torch\n"
        "from seer.workload.capture import capture, fake_mode\n"
        "with fake_mode():\n"
        "    m = torch.nn.Sequential(*[torch.nn.Linear(8192, 8192) for _ in range(15)])\n"
        "    x = torch.zeros(8, 8192)\n"
        "assert sum(p.numel() for p in m.parameters()) > 1e9\n"
        "capture(m, x, training=True)\n"
        "status = '/proc/self/status'\n"
        "hwm = [ln for ln in open(status) if ln.startswith('VmHWM:')] if os.path.exists(status) else []\n"
        "print(hwm[0].split()[1] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    peak_mib = int(out.stdout.split()[-1]) / 1024
    assert peak_mib < 1500, f"peak RSS {peak_mib:.0f} MiB for a model whose weights take 4000 MiB"
    assert math.isfinite(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def test_a_model_that_cannot_be_traced_is_one_seer_error():
    from seer.errors import SeerError

    class DataDependent(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(SeerError, match="could not capture DataDependent"):
        capture(DataDependent(), torch.randn(4))


def test_import_seer_does_not_load_torch():
    code = "import sys, seer, seer.workload.capture, seer.workload.hf; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
