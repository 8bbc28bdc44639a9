import json

import pytest

from seer.errors import DataError, UnknownGPUError
from seer.hardware import gpus


@pytest.mark.parametrize(
    "name,slug",
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("Tesla T4", "t4"),
        ("NVIDIA A100-PCIE-40GB", "a100-40gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("Tesla V100-PCIE-32GB", "v100-pcie"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2"),
        ("Tesla P100-PCIE-16GB", "p100-pcie"),
        ("Tesla P4", "p4"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA TITAN Xp", "titan-xp"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA A10", "a10"),
        ("h200", "h200"),
        ("a100-80gb-pcie", "a100-80gb-pcie"),
    ],
)
def test_lookup_cuda_names(name, slug):
    assert gpus.lookup(name).slug == slug


def test_every_reference_gpu_has_its_numbers():
    h100 = gpus.lookup("h100-sxm")
    assert (h100.cc, h100.sms, h100.fp32_tflops, h100.dram_gbs, h100.l2_mb, h100.boost_mhz) == (
        "9.0",
        132,
        66.9,
        3350,
        50,
        1980,
    )
    assert gpus.lookup("a100-80gb-pcie").dram_gbs == 1935
    assert gpus.lookup("titan-xp").sms == 30
    assert len([g for g in gpus.GPUS.values() if g.source.startswith("docs/reference.md")]) == 17


@pytest.mark.parametrize("name", ["NVIDIA H100 PG530", "A10X", "Tesla V100-SXM3-32GB", "Radeon", ""])
def test_unknown_gpu_is_clear(name):
    with pytest.raises(UnknownGPUError, match="device JSON|GPU name"):
        gpus.lookup(name)


def test_device_json_ours(tmp_path):
    p = tmp_path / "dev.json"
    p.write_text(
        json.dumps(
            {
                "name": "NVIDIA RTX PRO 6000 Test",
                "cc": "9.0",
                "sms": 188,
                "fp32_tflops": 120.0,
                "dram_gbs": 1792,
                "l2_mb": 128,
                "boost_mhz": 2600,
            }
        )
    )
    spec = gpus.load_device_json(p)
    assert gpus.lookup("NVIDIA RTX PRO 6000 Test") == spec
    assert spec.sms == 188 and spec.fp32_flops == 120e12


def test_device_json_neusight_format(neusight_path):
    spec = gpus.load_device_json(neusight_path / "device_configs" / "NVIDIA_L4.json", register=False)
    assert spec.cc == "8.9" and spec.dram_gbs == 300 and spec.fp32_tflops == pytest.approx(31.334)


def test_device_json_needs_cc_for_unknown(tmp_path):
    p = tmp_path / "dev.json"
    p.write_text(
        json.dumps(
            {"Device": "Mystery GPU", "Num_Sm": 10, "SingleFLOPs": 1000, "Mem_Bw": 100, "L2Cache": 1, "Freq": 1000}
        )
    )
    with pytest.raises(DataError, match="column 'cc'"):
        gpus.load_device_json(p)


def test_device_json_bad_values(tmp_path):
    p = tmp_path / "dev.json"
    p.write_text(
        json.dumps({"name": "X1", "cc": "8.0", "sms": -3, "fp32_tflops": 1, "dram_gbs": 1, "l2_mb": 1, "boost_mhz": 1})
    )
    with pytest.raises(DataError, match="'sms'.*positive"):
        gpus.load_device_json(p)
    p.write_text("{not json")
    with pytest.raises(DataError, match="valid JSON"):
        gpus.load_device_json(p)
