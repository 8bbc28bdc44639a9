"""A GPU described by the user (key=value text, JSON, nvidia-smi output): its spec is built
from what was given, the rest from the table's nearest chip, and the note says what was assumed."""

from __future__ import annotations

import json

import pytest

from seer.errors import SeerError, UnknownGPUError
from seer.hardware import device, gpus
from seer.hardware.describe import build, describe, parse_nvidia_smi, parse_pairs

SMI_Q = """
==============NVSMI LOG==============
Driver Version                            : 535.104.05
Attached GPUs                             : 1
GPU 00000000:00:1E.0
    Product Name                          : NVIDIA A10G
    FB Memory Usage
        Total                             : 23028 MiB
    Power Readings
        Current Power Limit               : 250.00 W
        Default Power Limit               : 300.00 W
    Default Applications Clocks
        Graphics                          : 1710 MHz
    Max Clocks
        Graphics                          : 1710 MHz
        SM                                : 1710 MHz
"""
SMI_CSV = (
    "name, compute_cap, clocks.max.sm [MHz], power.default_limit [W], memory.total [MiB]\n"
    "NVIDIA GeForce RTX 4070, 8.9, 2475 MHz, 200.00 W, 12282 MiB\n"
)


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch):
    monkeypatch.setattr(gpus, "_REGISTERED", dict(gpus._REGISTERED))
    monkeypatch.setattr(device, "_RESOLVED", {})


def test_pairs_parse_and_refuse_what_is_not_a_field():
    assert parse_pairs("cc=8.6, sms=84;boost_mhz=1695") == {"cc": "8.6", "sms": 84.0, "boost_mhz": 1695.0}
    with pytest.raises(SeerError, match="key=value pairs"):
        parse_pairs("cores=10752")
    with pytest.raises(SeerError, match="sms must be a positive number"):
        parse_pairs("sms=-3")


def test_nvidia_smi_q_gives_name_clock_power_limit_and_memory():
    """The current power limit is what the card runs under: a cap below the default counts."""
    assert parse_nvidia_smi(SMI_Q) == {"name": "NVIDIA A10G", "memory_gb": 24.1, "tdp_w": 250.0, "boost_mhz": 1710.0}


def test_nvidia_smi_query_gpu_csv():
    got = parse_nvidia_smi(SMI_CSV)
    assert got == {"name": "NVIDIA GeForce RTX 4070", "cc": "8.9", "boost_mhz": 2475.0, "tdp_w": 200.0,
                   "memory_gb": 12.9}  # fmt: skip


def test_an_unknown_gpu_is_built_and_the_note_says_what_was_assumed():
    r = describe("name=NVIDIA GeForce RTX 4070,cc=8.9,sms=46,boost_mhz=2475,dram_gbs=504,tdp_w=200")
    s = r.spec
    assert (s.slug, s.cc, s.sms, s.boost_mhz, s.dram_gbs, s.tdp_w) == ("rtx-4070", "8.9", 46, 2475, 504, 200)
    assert s.fp32_tflops == pytest.approx(46 * 128 * 2 * 2475e6 / 1e12, abs=0.01)
    l4 = gpus.GPUS["l4"]  # CC 8.9 with the nearest SM count (58)
    assert s.l2_mb == l4.l2_mb and f"L2 ({l4.l2_mb:g} MB) of NVIDIA L4 assumed" in r.note
    assert "CC 8.9, 46 SMs, 2475 MHz, 504 GB/s, 200 W" in r.note and "FP32 29.15 TFLOP/s" in r.note
    assert gpus.lookup("NVIDIA GeForce RTX 4070") is s  # registered


def test_what_is_not_given_comes_from_the_nearest_chip():
    r = build({"name": "NVIDIA Future", "cc": "9.0", "sms": 100})
    near = gpus.GPUS["h100-pcie"]  # CC 9.0, 114 SMs
    assert (r.spec.boost_mhz, r.spec.dram_gbs, r.spec.l2_mb) == (near.boost_mhz, near.dram_gbs, near.l2_mb)
    assert "clock (1755 MHz) and DRAM bandwidth (2000 GB/s) and L2 (50 MB) of NVIDIA H100 PCIe assumed" in r.note


def test_a_blackwell_cc_gets_kernels_of_the_newest_cc_seer_models():
    r = build({"name": "NVIDIA GeForce RTX 5080", "cc": "12.0", "sms": 84, "boost_mhz": 2617})
    assert r.spec.cc == "9.0" and "kernels and occupancy of CC 9.0" in r.note


def test_an_unknown_gpu_without_cc_or_sms_says_what_to_give(tmp_path):
    p = tmp_path / "smi.csv"
    p.write_text(SMI_CSV)
    with pytest.raises(UnknownGPUError, match=r"gives no SM count \(sms=\)"):
        describe(p)
    r = describe(p, "sms=46,dram_gbs=504")  # the SM count given beside the file
    assert r.spec.sms == 46 and r.spec.tdp_w == 200 and "and 'sms=46,dram_gbs=504'" in r.note


def test_a_table_gpu_is_its_row_and_a_power_cap_makes_a_variant(tmp_path):
    assert describe("name=Tesla T4,cc=7.5,sms=40").spec is gpus.GPUS["t4"]  # agrees: the row, nothing said
    p = tmp_path / "q.txt"
    p.write_text(SMI_Q)
    r = describe(p)  # the A10G capped at 250 W of its 300
    assert r.spec.slug == "a10g-as-described" and r.spec.tdp_w == 250 and r.spec.sms == 80
    assert "tdp_w 300 -> 250" in r.note
    with pytest.raises(SeerError, match=r"of compute capability 7\.5, not 8\.0"):
        describe("name=Tesla T4,cc=8.0")


def test_a_figure_the_row_lacks_is_filled_in_without_a_variant():
    r = describe("name=NVIDIA H100 NVL,base_mhz=1080")
    assert r.spec.slug == "h100-nvl" and r.spec.base_mhz == 1080 and "base_mhz from the description" in r.note


def test_json_descriptions(tmp_path, neusight_path):
    ours = tmp_path / "gpu.json"
    ours.write_text(json.dumps({"name": "NVIDIA RTX 4000 Ada Generation", "cc": "8.9", "sms": 48, "tdp_w": 130}))
    assert describe(ours).spec.sms == 48
    props = tmp_path / "props.json"
    props.write_text(json.dumps({"name": "NVIDIA A100-PG506-207", "computeMajor": 8, "computeMinor": 0,
                                 "numSms": 108, "totalGlobalMem": 85 * 10**9, "warpSize": 32}))  # fmt: skip
    assert describe(props).spec.slug == "a100-80gb-sxm"  # deviceProperties: seer.hardware.device.resolve
    assert describe(neusight_path / "device_configs" / "NVIDIA_L4.json").spec.dram_gbs == 300
    with pytest.raises(SeerError, match="key=value text or an existing file"):
        describe(tmp_path / "missing.txt")
