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


def test_every_row_has_a_source_and_the_datasheet_figures_the_power_model_needs():
    """A source on every row, and TDP, process, memory on every one; base clocks where published."""
    assert len(gpus.GPUS) >= 45
    for g in gpus.GPUS.values():
        assert g.source and g.tdp_w and g.process and g.memory_type and g.memory_gb, g.slug
        assert g.process_nm in (4, 7, 8, 12, 16), g.slug
        assert g.base_mhz is None or g.base_mhz <= g.boost_mhz, g.slug
        if g.base_mhz is None:
            assert "not published" in g.source or "derived" in g.source, g.slug
    assert (
        sum(g.base_mhz is not None for g in gpus.GPUS.values()) >= 36
    )  # the nine without: H100/H200 NVL, H200, H20, GH200 x2, B200, GB200, A10G


def test_tensor_peaks_follow_the_chip():
    """FP16 tensor peak per SM per clock: 1024 FLOP on Volta/Turing/GA10x data-center cards and
    2048 on GA100 (at the boost clock, within 10%); GeForce halves it (FP32 accumulate)."""
    for slug in ("v100-sxm2", "t4", "a10", "a40", "rtx-a6000"):
        g = gpus.GPUS[slug]
        assert g.fp16_tensor_tflops is not None
        per = g.fp16_tensor_tflops * 1e12 / (g.sms * g.boost_mhz * 1e6)
        assert per == pytest.approx(1024, rel=0.1), slug
    g = gpus.GPUS["a100-40gb"]
    assert g.fp16_tensor_tflops * 1e12 / (g.sms * g.boost_mhz * 1e6) == pytest.approx(2048, rel=0.01)
    assert gpus.GPUS["rtx-3090"].fp16_tensor_tflops == pytest.approx(gpus.GPUS["a40"].fp16_tensor_tflops / 2, rel=0.1)
    assert all(g.fp16_tensor_tflops is None for g in gpus.GPUS.values() if g.cc.startswith("6."))


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Tesla V100-DGXS-32GB", "v100-sxm2"), ("Tesla V100-SXM2-32GB", "v100-sxm2"),
        ("Tesla V100-PCIE-16GB", "v100-pcie"), ("NVIDIA A100-PG509-200", "a100-40gb-sxm"),
        ("NVIDIA H100 NVL", "h100-nvl"), ("NVIDIA A10G", "a10g"), ("Tesla V100S-PCIE-32GB", "v100s-pcie"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"), ("Quadro RTX 6000", "quadro-rtx-8000"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("NVIDIA GH200 480GB", "gh200"), ("NVIDIA B200", "b200"),
        ("Tesla P40", "p40"), ("NVIDIA L40", "l40"), ("NVIDIA H20", "h20"),
    ],
)  # fmt: skip
def test_the_drivers_names_of_the_new_rows(name, slug):
    assert gpus.lookup(name).slug == slug


def test_a_fits_files_spec_keeps_its_figures_and_takes_the_power_fields_of_its_row():
    """A fits file written before the power fields existed: its figures as fitted, TDP and the
    rest from the table's row of its slug."""
    old = {k: v for k, v in gpus.GPUS["t4"].to_dict().items() if k in gpus._CORE}
    old["fp32_tflops"] = 8.0
    spec = gpus.spec_from_dict({**old, "source": "fits"})
    assert spec.fp32_tflops == 8.0 and spec.tdp_w == 70 and spec.memory_type == "GDDR6"
    unknown = gpus.spec_from_dict({**old, "slug": "mystery", "source": "fits"})
    assert unknown.tdp_w is None
