"""The peak figures the analytical predictors need, from the GPU table or given explicitly.

The predictors need a few peaks that `seer.hardware.gpus.GPUSpec` does not carry (L2 bandwidth, PCIe
bandwidth) and the DLRM paper's reproductions need that paper's own measured figures rather
than datasheet ones; `Peaks` holds them all in the units the DLRM seed uses (GB/s, GFLOP/s),
so a reproduction reads like the seed and no unit conversion hides in a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from statistics import median
from typing import Any

from seer.errors import SeerError, UnknownGPUError
from seer.hardware import gpus


@dataclass(frozen=True)
class Peaks:
    """Peak rates of one GPU. GB/s are 1e9 bytes per second; l2_bytes is the L2 size in bytes."""

    name: str
    sms: int
    fp32_gflops: float
    dram_gbs: float
    l2_gbs: float
    l2_bytes: int
    pcie_gbs: float
    source: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


# Measured peaks of the DLRM performance model's repository (docs/reference.md, GPU specifications):
# slug -> (FP32 GFLOP/s, DRAM GB/s, L2 GB/s, SMs, L2 MiB).
DLRM_MEASURED: dict[str, tuple[float, float, float, int, float]] = {
    "v100-sxm2": (15441.5, 804.5, 2847.5, 80, 6),
    "titan-xp": (10768.6, 438.7, 1406.5, 30, 3),
    "p100-pcie": (9343.7, 543.4, 1591.3, 56, 4),
    "a100-40gb": (12410.5, 1283.6, 1811.6, 108, 40),
}

# L2 bandwidth is not on datasheets. Where the DLRM repo measured none, it is estimated as
# this multiple of the DRAM bandwidth: the median L2/DRAM ratio of the four measured GPUs.
L2_TO_DRAM = median(v[2] / v[1] for v in DLRM_MEASURED.values())

# Host link: a x16 slot of the PCIe generation each architecture ships with (Pascal, Volta,
# Turing: gen3; Ampere, Ada: gen4; Hopper: gen5), theoretical rate per direction in GB/s.
_PCIE_GBS = {3: 15.75, 4: 31.5, 5: 63.0}


def _pcie_gen(cc: str) -> int:
    major = int(str(cc).split(".")[0])
    return 3 if major < 8 else 4 if major == 8 else 5


# The DLRM seed's own V100 figures (seed 000, cell 5): what its printed numbers were computed
# with. L2 is 6 * 1024 * 1024 * 4 bytes exactly as the seed sets it (4x the real 6 MiB).
SEED_V100 = Peaks(
    name="V100 (DLRM seed 000)",
    sms=80,
    fp32_gflops=12200.0,
    dram_gbs=809.0,
    l2_gbs=2888.0,
    l2_bytes=6 * 1024 * 1024 * 4,
    pcie_gbs=_PCIE_GBS[3],
    source="seed 000 (DLRM performance model)",
)

_OVERRIDES = {  # accepted override names -> Peaks field (the seed's argument names included)
    "sms": "sms",
    "num_sm": "sms",
    "num_SM": "sms",
    "fp32_gflops": "fp32_gflops",
    "peak_throughput": "fp32_gflops",
    "peak_gflops": "fp32_gflops",
    "dram_gbs": "dram_gbs",
    "peak_dram_bw": "dram_gbs",
    "l2_gbs": "l2_gbs",
    "peak_l2_bw": "l2_gbs",
    "l2_bytes": "l2_bytes",
    "L2_size": "l2_bytes",
    "l2_size": "l2_bytes",
    "pcie_gbs": "pcie_gbs",
    "peak_pcie_bw": "pcie_gbs",
}


def spec_of(gpu: str | gpus.GPUSpec) -> gpus.GPUSpec:
    """The table entry of `gpu`; an unknown name is an error that names the argument."""
    try:
        return gpus.lookup(gpu)
    except UnknownGPUError as exc:
        raise UnknownGPUError(f"argument gpu: {exc}") from None


def peaks_for(
    gpu: str | gpus.GPUSpec | None = None, peaks: Peaks | Mapping | None = None, *, measured: bool = False
) -> Peaks:
    """Peaks of `gpu` (a name, slug or GPUSpec) from the datasheet table, with `peaks` applied.

    `peaks` is either a complete `Peaks` (used as is; `gpu` may then be None) or a mapping of
    overrides such as {"peak_dram_bw": 809, "peak_l2_bw": 2888} (the seed's names work).
    `measured=True` starts from the DLRM repo's measured peaks where it has them.
    """
    if isinstance(peaks, Peaks):
        return peaks
    if gpu is None:
        raise SeerError("argument gpu: a GPU name (or peaks=Peaks(...)) is needed")
    spec = spec_of(gpu)
    base = Peaks(
        name=spec.name,
        sms=spec.sms,
        fp32_gflops=spec.fp32_tflops * 1000.0,
        dram_gbs=float(spec.dram_gbs),
        l2_gbs=L2_TO_DRAM * spec.dram_gbs,
        l2_bytes=spec.l2_bytes,
        pcie_gbs=_PCIE_GBS[_pcie_gen(spec.cc)],
        source=f"datasheet ({spec.source}); L2 bandwidth estimated as {L2_TO_DRAM:.3f} x DRAM",
    )
    dl = DLRM_MEASURED.get(spec.slug)
    if dl is not None:
        base = replace(base, l2_gbs=dl[2], source=f"datasheet ({spec.source}); L2 bandwidth measured by the DLRM repo")
        if measured:
            base = replace(
                base,
                fp32_gflops=dl[0],
                dram_gbs=dl[1],
                sms=dl[3],
                l2_bytes=int(dl[4] * 2**20),
                source="DLRM repo measured peaks",
            )
    elif measured:
        raise SeerError(
            f"argument gpu: the DLRM repo measured no peaks for {spec.name}; "
            f"measured peaks exist for {', '.join(DLRM_MEASURED)}"
        )
    if peaks:
        changes: dict[str, Any] = {}
        for key, val in dict(peaks).items():
            if key not in _OVERRIDES:
                raise SeerError(
                    f"argument peaks: unknown peak {key!r}; expected one of {', '.join(sorted(set(_OVERRIDES)))}"
                )
            try:
                num = float(val)
            except (TypeError, ValueError):
                raise SeerError(f"argument peaks[{key!r}]: expected a positive number, got {val!r}") from None
            if not num > 0 or num != num or num == float("inf"):
                raise SeerError(f"argument peaks[{key!r}]: expected a positive number, got {val!r}")
            field = _OVERRIDES[key]
            changes[field] = int(num) if field in ("sms", "l2_bytes") else num
        base = replace(base, source=base.source + "; overrides: " + ", ".join(sorted(changes)), **changes)
    return base
