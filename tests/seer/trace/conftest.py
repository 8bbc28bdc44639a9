"""Traces the seer.trace tests read: the project's H100 traces (always there) and the shared ones
(../shared/datasets/traces beside the repository; tests that need them skip without)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seer.trace.kernels import explain

REPO = Path(__file__).resolve().parents[3]
H100 = REPO / "data" / "h100-sxm" / "traces"
SHARED = REPO.parent / "shared" / "datasets" / "traces"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}


def _shared(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"shared trace {name} not found: place the traces in ../shared/datasets/traces beside the repo")
    return path


def _raw_gpu_events(path: Path) -> list[dict]:
    """The GPU events of a trace as its JSON has them, read here without seer."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATS]


@pytest.fixture(scope="session")
def gpt_b8():
    return explain(H100 / "gpt_b8.pt.trace.json.gz")


@pytest.fixture(scope="session")
def gpt_b1():
    return explain(H100 / "gpt_b1.pt.trace.json.gz")


@pytest.fixture(scope="session")
def param_resnet():
    """A training step (PARAM's ResNet-18, RTX 2080 Ti), its shapes from the execution trace."""
    return explain(_shared("param/resnet_kineto.json.gz"), execution_trace=_shared("param/resnet_et.json.gz"))


def _conv_backward_trace(path: Path) -> Path:
    """A one-op trace: a convolution backward (dgrad and wgrad, seer's two parts) that launches a
    memset, then a wgrad and a dgrad kernel, on an H100."""
    dev = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132,
            "totalGlobalMem": 85000000000}]  # fmt: skip
    dims = [[32, 64, 56, 56], [32, 64, 56, 56], [64, 64, 3, 3], *[[]] * 8]
    concrete = ["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"]
    args = {"External id": 7, "Input Dims": dims, "Input type": ["float"] * 3 + [""] * 8, "Concrete Inputs": concrete}
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 200},
        {"ph": "X", "cat": "cpu_op", "name": "aten::convolution_backward", "pid": 1, "tid": 1, "ts": 10, "dur": 100,
         "args": args},
    ]  # fmt: skip
    gpu = [("gpu_memset", "Memset (Device)", 2), ("kernel", "sm90_xmma_wgrad_implicit_gemm", 300),
           ("kernel", "sm90_xmma_dgrad_implicit_gemm", 200)]  # fmt: skip
    for i, (cat, name, dur) in enumerate(gpu):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": 20 + 10 * i, "dur": 5, "args": {"correlation": 100 + i, "External id": 7}})  # fmt: skip
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": 1000 + 1000 * i, "dur": dur,
                       "args": {"correlation": 100 + i, "stream": 7, "device": 0}})  # fmt: skip
    path.write_text(json.dumps({"deviceProperties": dev, "traceEvents": events}))
    return path


@pytest.fixture
def shared():
    """shared(name): the path of a shared trace (the test skips without it)."""
    return _shared


@pytest.fixture
def raw_gpu_events():
    """raw_gpu_events(path): a trace's GPU events as its JSON has them, read without seer."""
    return _raw_gpu_events


@pytest.fixture
def conv_backward(tmp_path):
    return _conv_backward_trace(tmp_path / "conv_backward.json")


@pytest.fixture
def h100():
    """The project's H100 traces (data/h100-sxm/traces)."""
    return H100
