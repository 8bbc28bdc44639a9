"""Benchmarks of seer.workload.capture (issue 30), each figure printed with what it compares.

python tools/capture_bench.py traces   # cudnn_bench.torch_traces' GPT and ResNet stacks (and a
                                       # ResNet-50) captured on the CPU vs the H100 traces' kernel time
python tools/capture_bench.py billion  # capture + prediction time and memory of a 1e9-parameter GPT-2
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "h100-sxm" / "traces"


def traces() -> None:
    import torch

    from cudnn_bench.torch_traces import GPTConfig, ResNetConfig, define_models
    from seer.workload.capture import fake_mode, predict_model
    from seer.workload.model_time import model_time

    gpt_cls, resnet_cls = define_models(torch)
    index = {e["file"]: e for e in json.loads((TRACES / "traces.json").read_text())}
    print(f"{'trace':22s} {'measured kernels':>16s} {'seer on trace':>14s} {'seer on capture':>16s} "
          f"{'capture vs measured':>20s} {'capture vs trace pred':>22s}")  # fmt: skip
    for name, entry in index.items():
        if "train" in entry.get("mode", "") and not entry["mode"].startswith("training"):
            continue
        cfg = entry["config"]
        training = entry["mode"].startswith("training")
        with fake_mode():
            if entry["model"] == "gpt":
                net = gpt_cls(GPTConfig(**cfg))
                x = torch.zeros(entry["batch"], cfg["seq"], dtype=torch.long)
            else:
                rc = ResNetConfig(**{**cfg, "stages": tuple(tuple(s) for s in cfg["stages"])})
                net = resnet_cls(rc)
                x = torch.zeros(entry["batch"], rc.in_channels, rc.image, rc.image)
        mine = predict_model(net, x, "h100-sxm", training=training).totals["kernel_sum_ms"]
        tr = model_time(TRACES / name).totals
        meas, pred = tr["measured_kernel_sum_ms"], tr["kernel_sum_ms"]
        print(f"{name:22s} {meas:16.3f} {pred:14.3f} {mine:16.3f} {100 * (mine / meas - 1):+19.1f}% "
              f"{100 * (mine / pred - 1):+21.1f}%")  # fmt: skip
    r50 = ResNetConfig(stages=((64, 256, 3, 1), (128, 512, 4, 2), (256, 1024, 6, 2), (512, 2048, 3, 2)))
    for batch in (1, 32):
        with fake_mode():
            net = resnet_cls(r50)
            x = torch.zeros(batch, 3, 224, 224)
        t = predict_model(net, x, "h100-sxm").totals
        kernels, whole = t["kernel_sum_ms"], t["predicted_ms"]
        print(f"ResNet-50 b{batch} (no trace): predicted kernels {kernels:.3f} ms, whole {whole:.3f} ms")


def billion() -> None:
    t0 = time.perf_counter()
    import torch  # noqa: F401

    from seer.workload.capture import capture, predict_capture
    from seer.workload.hf import hf_model

    t1 = time.perf_counter()
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 22, "n_embd": 1920,
              "n_head": 16, "n_positions": 1024, "vocab_size": 50257}  # fmt: skip
    model, inputs = hf_model(config, batch=1, seq=1024)
    n = sum(p.numel() for p in model.parameters())
    t2 = time.perf_counter()
    cap = capture(model, inputs)
    t3 = time.perf_counter()
    mt = predict_capture(cap, "h100-sxm")
    t4 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"GPT-2 of {n / 1e9:.3f} B parameters, batch 1 x 1024, float32, on the h100-sxm")
    print(f"import torch {t1 - t0:.2f} s, build {t2 - t1:.2f} s, capture {t3 - t2:.2f} s, predict {t4 - t3:.2f} s; "
          f"build to prediction {t4 - t1:.2f} s; total {t4 - t0:.2f} s")  # fmt: skip
    print(f"peak RSS {rss:.0f} MiB (the weights alone would take {4 * n / 2**20:.0f} MiB)")
    print(f"predicted {mt.totals['predicted_ms']:.2f} ms ({len(cap.ops)} ATen ops)")


if __name__ == "__main__":
    {"traces": traces, "billion": billion}[sys.argv[1] if len(sys.argv) > 1 else "traces"]()
