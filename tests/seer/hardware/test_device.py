"""A trace's GPU from its deviceProperties: the table's GPU by name, a board of a known chip, a
MIG slice, or a spec built from CC and SMs; every real trace's NVIDIA GPU resolves."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seer.errors import UnknownGPUError
from seer.hardware import device, gpus
from seer.hardware.device import FP32_LANES, Device, occupancy_cc, resolve

REPO = Path(__file__).resolve().parents[3]
GIB = 2**30


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch):
    """Each test resolves from the table alone (a name registered by one test is not another's)."""
    monkeypatch.setattr(gpus, "_REGISTERED", dict(gpus._REGISTERED))
    monkeypatch.setattr(device, "_RESOLVED", {})


def test_the_lanes_per_sm_give_the_datasheet_peaks():
    """SMs x FP32 lanes x 2 x boost clock is each table entry's FP32 TFLOP/s within 2% (the P4's
    datasheet quotes 5.5 at a clock below its 1114 MHz boost: 3.6% apart)."""
    for g in gpus.GPUS.values():
        peak = g.sms * FP32_LANES[g.cc] * 2 * g.boost_mhz * 1e6 / 1e12
        assert peak == pytest.approx(g.fp32_tflops, rel=0.04 if g.slug == "p4" else 0.02), g.slug


def test_from_properties_reads_kineto_and_drops_what_is_not_a_number():
    d = Device.from_properties({
        "id": 0, "name": " Tesla V100-DGXS-32GB ", "totalGlobalMem": 34089730048, "computeMajor": 7,
        "computeMinor": 0, "numSms": 80, "warpSize": 32, "maxThreadsPerMultiprocessor": 2048,
        "regsPerMultiprocessor": 65536, "sharedMemPerMultiprocessor": 98304,
    })  # fmt: skip
    assert (d.name, d.cc, d.sms, d.memory_bytes, d.warp_size) == ("Tesla V100-DGXS-32GB", "7.0", 80, 34089730048, 32)
    assert (d.max_threads_per_sm, d.regs_per_sm, d.smem_per_sm) == (2048, 65536, 98304)
    assert d.describe() == "CC 7.0, 80 SMs, 32 GB"
    bad = Device.from_properties({"name": "X", "computeMajor": "seven", "computeMinor": 0, "numSms": -4,
                                  "totalGlobalMem": True, "warpSize": 32.0})  # fmt: skip
    assert (bad.cc, bad.sms, bad.memory_bytes, bad.warp_size) == (None, None, None, 32)


def test_a_known_name_is_the_table_entry_and_assumes_nothing():
    r = resolve(Device("NVIDIA H100 80GB HBM3", "9.0", 132, 80 * GIB, 32))
    assert r.spec is gpus.GPUS["h100-sxm"] and r.note == ""
    assert resolve("Tesla T4").spec.slug == "t4"


@pytest.mark.parametrize(
    ("name", "cc", "sms", "gib", "slug"),
    [
        ("Tesla V100-DGXS-32GB", "7.0", 80, 31.7, "v100-sxm2"),  # names of the table's boards
        ("NVIDIA A100-PG509-200", "8.0", 108, 39.4, "a100-40gb-sxm"),
        ("NVIDIA H100 NVL", "9.0", 132, 93.1, "h100-nvl"),
        ("Tesla V100S-PCIE-32GB", "7.0", 80, 31.7, "v100s-pcie"),
    ],
)
def test_a_board_the_table_names_assumes_nothing(name, cc, sms, gib, slug):
    r = resolve(Device(name, cc, sms, int(gib * GIB), 32))
    assert r.spec is gpus.GPUS[slug] and r.note == ""


@pytest.mark.parametrize(
    ("name", "cc", "sms", "gib", "slug"),
    [
        ("Tesla V100-SXM3-32GB", "7.0", 80, 31.7, "v100-pcie"),  # the 32 GB board of the chip
        ("Tesla V100-FHHL-16GB", "7.0", 80, 15.8, "v100-sxm2"),
        ("NVIDIA A100-PG506-207", "8.0", 108, 79.2, "a100-80gb-sxm"),
        ("NVIDIA H100 PG530", "9.0", 132, 93.1, "h100-nvl"),
    ],
)
def test_a_board_variant_is_its_chip(name, cc, sms, gib, slug):
    with pytest.raises(UnknownGPUError):
        gpus.lookup(name)  # not by name
    r = resolve(Device(name, cc, sms, int(gib * GIB), 32))
    assert r.spec is gpus.GPUS[slug]
    assert r.note == f"{name!r} taken as {r.spec.name} (same chip: CC {cc}, {sms} SMs, at its datasheet clocks)"
    assert gpus.lookup(name) is r.spec and gpus.slug_for(name) == slug  # registered
    assert resolve(Device(name)) == r  # a second resolve says the same


def test_a_chip_with_other_sm_counts_is_no_board_of_it():
    """A board with 70 SMs has the A10's name family and CC but not its 72 SMs (nor the A10G's 80):
    a spec built on the clock of the family's nearest chip, the A10."""
    r = resolve(Device("NVIDIA A10X", "8.6", 70, 22 * GIB, 32))
    a10 = gpus.GPUS["a10"]
    assert r.spec.slug == "a10x" and r.spec.sms == 70 and r.spec.boost_mhz == a10.boost_mhz
    assert r.spec.fp32_tflops == pytest.approx(a10.fp32_tflops * 70 / 72, rel=0.01)
    assert "built from its deviceProperties" in r.note and "of NVIDIA A10 assumed" in r.note


def test_an_unknown_gpu_gets_a_built_spec_that_lookup_finds_afterwards():
    r = resolve(Device("NVIDIA Future X", "9.0", 100, 96 * GIB, 32))
    near = gpus.GPUS["h100-pcie"]  # CC 9.0 with the nearest SM count (114)
    s = r.spec
    assert (s.slug, s.name, s.cc, s.sms) == ("future-x", "NVIDIA Future X", "9.0", 100)
    assert s.fp32_tflops == pytest.approx(100 * 128 * 2 * near.boost_mhz * 1e6 / 1e12, abs=0.01)
    assert (s.dram_gbs, s.l2_mb, s.boost_mhz) == (near.dram_gbs, near.l2_mb, near.boost_mhz)
    for said in (
        "CC 9.0, 100 SMs, 128 FP32 lanes per SM",
        "1755 MHz",
        "2000 GB/s",
        "50 MB",
        "NVIDIA H100 PCIe assumed",
    ):
        assert said in r.note
    assert gpus.lookup("NVIDIA Future X") is s and gpus.lookup("future-x") is s


def test_a_cc_the_occupancy_model_lacks_takes_the_nearest_one():
    assert [occupancy_cc(c) for c in ("8.0", "8.7", "7.2", "6.2", "12.0", "10.0", "5.2")] == [
        "8.0", "8.6", "7.0", "6.1", "9.0", "9.0", "6.0"]  # fmt: skip
    r = resolve(Device("NVIDIA GeForce RTX 5080", "12.0", 84, 16 * GIB, 32))
    assert r.spec.cc == "9.0" and r.spec.fp32_tflops == pytest.approx(84 * 128 * 2 * 1980e6 / 1e12, abs=0.01)
    assert "kernels and occupancy of CC 9.0" in r.note


def test_a_mig_slice_is_its_share_of_the_gpu():
    r = resolve(Device("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "8.0", 42, 20 * GIB, 32))
    a100 = gpus.GPUS["a100-40gb-sxm"]
    assert r.spec.sms == 42 and r.spec.boost_mhz == a100.boost_mhz
    assert r.spec.dram_gbs == pytest.approx(a100.dram_gbs * 42 / 108, rel=1e-3)
    assert "42 of the 108 SMs of NVIDIA A100-SXM4-40GB" in r.note


@pytest.mark.parametrize(
    ("dev", "says"),
    [
        (Device("AMD Radeon Graphics", "9.0", 104, 64 * GIB, 64), "not an NVIDIA GPU (warp size 64)"),
        (Device("AMD Instinct MI300X", "9.4", 304), "not an NVIDIA GPU (its vendor)"),
        (Device("NVIDIA Mystery"), "no compute capability and SM count"),
        (Device(""), "no GPU name"),
    ],
)
def test_what_cannot_be_resolved_says_why(dev, says):
    with pytest.raises(UnknownGPUError, match=says.replace("(", r"\(").replace(")", r"\)")):
        resolve(dev)


def _trace_devices() -> list[tuple[str, Device | None]]:
    shared = REPO.parent / "shared" / "datasets" / "traces"
    files = sorted(shared.rglob("*.json*")) + sorted((REPO / "data").glob("*/traces/*.json.gz"))
    out = []
    for p in files:
        with gzip.open(p, "rt") if p.suffix == ".gz" else p.open() as f:
            doc = json.load(f)
        props = doc.get("deviceProperties") if isinstance(doc, dict) else None
        if props:
            out.append((p.name, Device.from_properties(props[0])))
    return out


def test_every_real_traces_nvidia_gpu_resolves():
    if not (REPO.parent / "shared" / "datasets" / "traces").is_dir():
        pytest.skip("shared traces not found: place them in ../shared/datasets/traces beside the repo")
    seen = _trace_devices()
    assert len(seen) >= 10
    for name, dev in seen:
        assert dev is not None and dev.cc and dev.sms, name
        if dev.warp_size == 64:  # the MI250 trace: refused for what it is, not for its name
            with pytest.raises(UnknownGPUError, match="not an NVIDIA GPU"):
                resolve(dev)
            continue
        r = resolve(dev)
        assert r.spec.cc == dev.cc and r.spec.sms == dev.sms, name
