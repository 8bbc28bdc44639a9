"""A trace's GPU in model_time: resolved from its deviceProperties (seer.hardware.device), then
predicted with own or transferred fits, the assumption said in one line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seer.errors import SeerError
from seer.hardware import device, gpus
from seer.workload.model_time import model_time

GIB = 2**30


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch):
    monkeypatch.setattr(gpus, "_REGISTERED", dict(gpus._REGISTERED))
    monkeypatch.setattr(device, "_RESOLVED", {})


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, pid: int = 1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _trace(tmp_path: Path, props: list[dict] | None, name: str = "t.json.gz") -> Path:
    """One step of three 1024^3 matrix products, each one 150 us kernel, on the GPU `props` describe."""
    ev = [_x("user_annotation", "ProfilerStep#1", 0, 1000)]
    for i, t in enumerate((100, 300, 500)):
        dims = {"Input Dims": [[1024, 1024], [1024, 1024]], "Input type": ["float", "float"]}
        ev.append(_x("cpu_op", "aten::mm", t, 100, **dims))
        ev.append(_x("cuda_runtime", "cudaLaunchKernel", t + 20, 10, correlation=i + 1))
        ev.append(_x("kernel", f"sgemm{i}", t + 35, 150, tid=7, pid=0, correlation=i + 1, stream=7, device=0))
    doc: dict = {"schemaVersion": 1, "traceEvents": ev}
    if props is not None:
        doc["deviceProperties"] = props
    path = tmp_path / name
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


def _props(name: str, cc: tuple[int, int], sms: int, gib: float, warp: int = 32, id: int = 0) -> dict:
    return {"id": id, "name": name, "totalGlobalMem": int(gib * GIB), "computeMajor": cc[0], "computeMinor": cc[1],
            "numSms": sms, "warpSize": warp, "maxThreadsPerBlock": 1024}  # fmt: skip


def test_a_board_variant_is_predicted_as_its_chip_and_says_so(tmp_path, capsys):
    path = _trace(tmp_path, [_props("Tesla V100-SXM3-32GB", (7, 0), 80, 31.7)])
    mt = model_time(path)
    assert mt.gpu == "Tesla V100-PCIE-32GB" and mt.measured_on == "Tesla V100-SXM3-32GB"
    assert mt.gpu_note == (
        "GPU: 'Tesla V100-SXM3-32GB' taken as Tesla V100-PCIE-32GB (same chip: CC 7.0, 80 SMs, at its datasheet clocks)"
    )
    t = mt.totals
    assert t["kernel_sum_ms"] > 0 and t["measured_kernel_sum_ms"] == pytest.approx(0.45)  # measured on that chip
    assert (mt.ops["kind"] == "linear").all() and (mt.ops["predicted_ms"] > 0).all()

    from seer.predict.__main__ import main

    assert main([str(path), "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("GPU: 'Tesla V100-SXM3-32GB' taken as Tesla V100-PCIE-32GB") == 1


def test_the_entry_of_the_device_the_kernels_ran_on(tmp_path):
    """A node lists all its GPUs; the kernels ran on device 0 here, listed second."""
    path = _trace(
        tmp_path, [_props("NVIDIA H100 PCIe", (9, 0), 114, 80, id=1), _props("Tesla T4", (7, 5), 40, 15, id=0)]
    )
    mt = model_time(path)
    assert mt.measured_on == "Tesla T4" and mt.gpu == "Tesla T4" and mt.gpu_note == ""


def test_an_invented_gpu_gets_a_built_spec_and_transferred_fits(tmp_path):
    path = _trace(tmp_path, [_props("NVIDIA Future X", (9, 0), 100, 96)])
    mt = model_time(path)
    assert mt.gpu == "NVIDIA Future X" and mt.gpu_note.startswith("GPU: 'NVIDIA Future X' is not in seer's table")
    assert "measured_kernel_sum_ms" in mt.totals  # its own measurement: compared
    h100 = model_time(path, "h100-sxm")  # the same trace on the H100 (132 SMs at 1980 MHz) is faster
    assert h100.gpu_note == "" and "measured_kernel_sum_ms" not in h100.totals
    assert h100.totals["kernel_sum_ms"] < mt.totals["kernel_sum_ms"]


def test_a_trace_without_its_gpu_says_so_in_one_sentence(tmp_path):
    bare = _trace(tmp_path, None)
    with pytest.raises(SeerError, match=r"records no deviceProperties, so not its GPU; give one \(--gpu\)$"):
        model_time(bare)
    assert model_time(bare, "t4").gpu == "Tesla T4"
    amd = _trace(tmp_path, [_props("AMD Radeon Graphics", (9, 0), 104, 64, warp=64)], "amd.json.gz")
    with pytest.raises(SeerError, match=r"not an NVIDIA GPU \(warp size 64\).*\(--gpu\)$") as err:
        model_time(amd)
    assert "\n" not in str(err.value)
    other = model_time(amd, "t4")
    assert other.gpu == "Tesla T4" and "measured_kernel_sum_ms" not in other.totals
