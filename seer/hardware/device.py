"""The GPU a trace was taken on: its `deviceProperties` resolved to a spec seer can predict for.

A profiler trace names its GPU as the driver does ('Tesla V100-DGXS-32GB', 'NVIDIA A100-PG509-200')
and describes it (compute capability, SMs, memory). `resolve` takes, in order:

1. the GPU of that name in the table (seer.hardware.gpus.lookup), nothing assumed;
2. a board variant of a chip in the table: same model family ('v100', 'a100'), same compute
   capability and SM count; of several boards of the chip, the one whose memory is closest. The
   board is taken as that chip at the table's clocks and bandwidth (deviceProperties give neither);
3. a spec built from the description: FP32 throughput = SMs x FP32 lanes per SM of its compute
   capability x 2 (an FMA is two FLOPs) x the boost clock of the table's chip of that compute
   capability (of its model family where there is one) with the nearest SM count, whose DRAM
   bandwidth and L2 it also takes; a MIG slice of a GPU of the table is that GPU's share of SMs.

Cases 2 and 3 register the name, so lookup() knows it afterwards, and come with one sentence that
says what was assumed. A description that is not of an NVIDIA GPU (warp size other than 32) or
gives no compute capability or SM count raises UnknownGPUError.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from seer.errors import UnknownGPUError
from seer.hardware import gpus

# FP32 add/multiply/multiply-add results per clock per SM (= FP32 lanes), by compute capability:
# CUDA C++ Programming Guide, "Arithmetic Instructions", throughput of native arithmetic
# instructions. The table's datasheet peaks agree (SMs x lanes x 2 x boost clock): V100 80 x 64
# x 2 x 1530 MHz = 15.7 TFLOP/s, A100 108 x 64 -> 19.5, A10 72 x 128 -> 31.2, H100 SXM 132 x 128
# -> 66.9 (tests/seer/hardware/test_device.py checks every entry); RTX 5090 (12.0): 170 x 128 x 2
# x 2407 MHz = 104.8 TFLOP/s, NVIDIA's figure.
FP32_LANES: dict[str, int] = {
    "3.0": 192, "3.2": 192, "3.5": 192, "3.7": 192,
    "5.0": 128, "5.2": 128, "5.3": 128,
    "6.0": 64, "6.1": 128, "6.2": 128,
    "7.0": 64, "7.2": 64, "7.5": 64,
    "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128,
    "9.0": 128, "10.0": 128, "10.3": 128, "11.0": 128, "12.0": 128, "12.1": 128,
}  # fmt: skip

_VENDORS = re.compile(r"\b(amd|radeon|instinct|intel|arc)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Device:
    """A GPU as a trace's deviceProperties describe it (None where the trace does not say)."""

    name: str
    cc: str | None = None  # compute capability, "8.0"
    sms: int | None = None  # multiprocessors
    memory_bytes: int | None = None  # totalGlobalMem
    warp_size: int | None = None  # 32 on NVIDIA GPUs, 64 on AMD's
    max_threads_per_sm: int | None = None
    regs_per_sm: int | None = None
    smem_per_sm: int | None = None  # shared memory per SM, bytes

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> Device:
        """Kineto's deviceProperties entry (name, computeMajor, computeMinor, numSms,
        totalGlobalMem, warpSize, ...); a value that is not a whole number counts as absent."""
        major, minor = _whole(props.get("computeMajor")), _whole(props.get("computeMinor"))
        return cls(
            name=str(props.get("name") or "").strip(),
            cc=f"{major}.{minor}" if major is not None and minor is not None else None,
            sms=_whole(props.get("numSms")),
            memory_bytes=_whole(props.get("totalGlobalMem")),
            warp_size=_whole(props.get("warpSize")),
            max_threads_per_sm=_whole(props.get("maxThreadsPerMultiprocessor")),
            regs_per_sm=_whole(props.get("regsPerMultiprocessor")),
            smem_per_sm=_whole(props.get("sharedMemPerMultiprocessor", props.get("maxSharedMemoryPerMultiProcessor"))),
        )

    @property
    def memory_gib(self) -> float | None:
        return self.memory_bytes / 2**30 if self.memory_bytes else None

    def describe(self) -> str:
        """'CC 7.0, 80 SMs, 32 GB' (what is known)."""
        parts = [f"CC {self.cc}" if self.cc else "", f"{self.sms} SMs" if self.sms else ""]
        parts.append(f"{self.memory_gib:.0f} GB" if self.memory_gib else "")
        return ", ".join(p for p in parts if p)


def _whole(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v >= 0 else None
    if isinstance(v, float) and v.is_integer() and v >= 0:
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return None


class Resolved(NamedTuple):
    """The spec a trace's GPU is predicted as, and what was assumed to get it ('' where nothing)."""

    spec: gpus.GPUSpec
    note: str


_RESOLVED: dict[str, Resolved] = {}  # by name (lower case): a second resolve says the same


def resolve(device: Device | str) -> Resolved:
    """The GPU of the table a trace's device is, or a spec built from its description (see the
    module docstring); the name is registered with seer.hardware.gpus for later lookups."""
    if isinstance(device, str):
        device = Device(device)
    key = device.name.lower()
    if key in _RESOLVED:
        return _RESOLVED[key]
    try:
        return Resolved(gpus.lookup(device.name), "")
    except UnknownGPUError:
        if not device.name:
            raise UnknownGPUError("the trace's deviceProperties give no GPU name") from None
    if device.warp_size not in (None, 32) or _VENDORS.search(device.name):
        why = f"warp size {device.warp_size}" if device.warp_size not in (None, 32) else "its vendor"
        raise UnknownGPUError(
            f"{device.name!r} is not an NVIDIA GPU ({why}), and seer's models are NVIDIA kernels'; "
            "give a GPU to predict it on (--gpu)"
        )
    if device.cc is None or not device.sms:
        raise UnknownGPUError(
            f"unknown GPU {device.name!r}, and the trace's deviceProperties give no compute capability and SM "
            "count to build it from; give the GPU (--gpu) or describe it in a device JSON"
        )
    spec = _board(device)
    if spec is not None:
        note = (
            f"{device.name!r} taken as {spec.name} (same chip: CC {spec.cc}, {spec.sms} SMs, at its datasheet clocks)"
        )
        out = Resolved(spec, note)
    else:
        out = _mig(device) or _built(device)
    gpus.register(device.name, out.spec)
    _RESOLVED[key] = out
    return out


def _family(name: str) -> str | None:
    """The model token of a GPU name ('v100' of 'Tesla V100S-PCIE-32GB', '3090' of 'RTX 3090 Ti'):
    its first model token holding a digit, trailing letters dropped."""
    for tok in gpus.model_tokens(name):
        m = re.match(r"[a-z]*\d+", tok)
        if m:
            return m.group(0)
    return None


def _board(device: Device) -> gpus.GPUSpec | None:
    """The table's board of the device's chip: same family, CC and SMs, memory closest."""
    family = _family(device.name)
    if family is None:
        return None
    same = [g for g in gpus.GPUS.values() if _family(g.name) == family and g.cc == device.cc and g.sms == device.sms]
    if not same:
        return None
    gib = device.memory_gib
    if gib is None:
        return same[0]
    return min(same, key=lambda g: abs(math.log((g.memory_gb or gib) / gib)))


def _mig(device: Device) -> Resolved | None:
    """A MIG slice ('NVIDIA A100-SXM4-40GB MIG 3g.20gb') of a GPU of the table: the GPU's clock,
    with FP32 rate, DRAM bandwidth and L2 in the share of its SMs the slice has."""
    parent_name, sep, _ = device.name.partition(" MIG ")
    if not sep or device.sms is None:
        return None
    try:
        parent = gpus.lookup(parent_name)
    except UnknownGPUError:
        return None
    if parent.cc != device.cc or device.sms >= parent.sms:
        return None
    share = device.sms / parent.sms
    spec = gpus.GPUSpec(
        slug=gpus.slug_for(device.name),
        name=device.name,
        cc=parent.cc,
        sms=device.sms,
        fp32_tflops=round(parent.fp32_tflops * share, 2),
        dram_gbs=round(parent.dram_gbs * share, 1),
        l2_mb=round(parent.l2_mb * share, 2),
        boost_mhz=parent.boost_mhz,
        source=f"a MIG slice of {parent.name}: {device.sms} of its {parent.sms} SMs",
    )
    note = (
        f"{device.name!r} taken as {device.sms} of the {parent.sms} SMs of {parent.name}, with that share of its "
        f"FP32 rate, DRAM bandwidth and L2 assumed ({spec.fp32_tflops:g} TFLOP/s, {spec.dram_gbs:g} GB/s, "
        f"{spec.l2_mb:g} MB)"
    )
    return Resolved(spec, note)


def occupancy_cc(cc: str) -> str:
    """The compute capability whose occupancy limits stand in for `cc`: itself where seer's
    occupancy model has it, else the nearest of the same major, else the nearest overall."""
    from seer.hardware.occupancy import ARCH

    if cc in ARCH:
        return cc
    major = cc.split(".")[0]
    same = [c for c in ARCH if c.split(".")[0] == major]
    return min(same or list(ARCH), key=lambda c: abs(float(c) - float(cc)))


def _built(device: Device) -> Resolved:
    assert device.cc is not None and device.sms is not None
    sms, cc = device.sms, occupancy_cc(device.cc)
    lanes = FP32_LANES.get(device.cc) or FP32_LANES[cc]
    family = _family(device.name)
    near = min(  # its family's chip first (an A10G from the A10), then the nearest SM count
        (g for g in gpus.GPUS.values() if g.cc == cc),
        key=lambda g: (_family(g.name) != family, abs(math.log(g.sms / sms)), g.sms),
    )
    tflops = sms * lanes * 2 * near.boost_mhz * 1e6 / 1e12
    spec = gpus.GPUSpec(
        slug=gpus.slug_for(device.name),
        name=device.name,
        cc=cc,
        sms=sms,
        fp32_tflops=round(tflops, 2),
        dram_gbs=near.dram_gbs,
        l2_mb=near.l2_mb,
        boost_mhz=near.boost_mhz,
        source=f"built from the trace's deviceProperties; clock, DRAM bandwidth and L2 of {near.name}",
    )
    as_cc = f", kernels and occupancy of CC {cc}" if cc != device.cc else ""
    note = (
        f"{device.name!r} is not in seer's table: built from its deviceProperties (CC {device.cc}, {device.sms} SMs, "
        f"{lanes} FP32 lanes per SM{as_cc}) with the clock ({near.boost_mhz:.0f} MHz), DRAM bandwidth "
        f"({near.dram_gbs:.0f} GB/s) and L2 ({near.l2_mb:g} MB) of {near.name} assumed: "
        f"{spec.fp32_tflops:g} TFLOP/s FP32"
    )
    return Resolved(spec, note)
