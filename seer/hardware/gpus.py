"""GPU specifications: the datasheet table of docs/reference.md (GPU specifications), name lookup, device JSON.

Datasheet peaks are never reached exactly; the analytical models fit effective values from
measurements and fall back to these numbers only where a GPU has none.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

from seer.errors import DataError, UnknownGPUError


@dataclass(frozen=True)
class GPUSpec:
    """One GPU model. Units: TFLOP/s, GB/s (1e9 bytes), MB of L2 (2**20 bytes), MHz, W, GB of
    board memory (1e9 bytes, as datasheets count it).

    The power fields (base_mhz, tdp_w, process, memory_type) are what every datasheet gives and
    the transfer's sustained-clock model reads; None / '' where a description did not give them.
    `fp16_tensor_tflops` is the dense FP16 tensor-core peak with FP32 accumulation (what
    PyTorch's half-precision matmuls use; half the FP16-accumulate figure on GeForce cards),
    None on GPUs without tensor cores. `aliases`: other names the driver gives the same board
    (memory sizes, board codes) that are this row, with its fits.
    """

    slug: str
    name: str
    cc: str
    sms: int
    fp32_tflops: float
    dram_gbs: float
    l2_mb: float
    boost_mhz: float
    source: str = "docs/reference.md, GPU specifications"
    base_mhz: float | None = None
    tdp_w: float | None = None
    process: str = ""  # foundry node as NVIDIA names it: 'TSMC 16FF', 'Samsung 8N', 'TSMC 4N'
    memory_type: str = ""  # 'GDDR6', 'HBM2e', ...
    memory_gb: float | None = None
    fp16_tensor_tflops: float | None = None
    aliases: tuple[str, ...] = ()

    @property
    def process_nm(self) -> float | None:
        """The node's number as named ('TSMC 12FFN' -> 12, 'TSMC 4N' -> 4); None where unknown."""
        m = re.search(r"(\d+(?:\.\d+)?)", self.process)
        return float(m.group(1)) if m else None

    @property
    def fp32_flops(self) -> float:
        return self.fp32_tflops * 1e12

    @property
    def dram_bytes_per_s(self) -> float:
        return self.dram_gbs * 1e9

    @property
    def l2_bytes(self) -> int:
        return int(self.l2_mb * 2**20)

    def to_dict(self) -> dict:
        return asdict(self)


# (slug, display name, CC, SMs, FP32 TFLOP/s, DRAM GB/s, L2 MB, boost MHz), docs/reference.md (GPU specifications).
_TABLE = [
    ("titan-xp", "NVIDIA TITAN Xp", "6.1", 30, 12.1, 548, 3, 1582),
    ("titan-v", "NVIDIA TITAN V", "7.0", 80, 14.9, 653, 4.5, 1455),
    ("p100-sxm2", "Tesla P100-SXM2-16GB", "6.0", 56, 10.6, 732, 4, 1480),
    ("p100-pcie", "Tesla P100-PCIE-16GB", "6.0", 56, 9.3, 732, 4, 1303),
    ("v100-sxm2", "Tesla V100-SXM2-16GB", "7.0", 80, 15.7, 900, 6, 1530),
    ("v100-pcie", "Tesla V100-PCIE-32GB", "7.0", 80, 14.1, 900, 6, 1380),
    ("t4", "Tesla T4", "7.5", 40, 8.1, 320, 4, 1590),
    ("a100-40gb", "NVIDIA A100-PCIE-40GB", "8.0", 108, 19.5, 1555, 40, 1410),
    ("a100-80gb-sxm", "NVIDIA A100-SXM4-80GB", "8.0", 108, 19.5, 2039, 40, 1410),
    ("a100-80gb-pcie", "NVIDIA A100 80GB PCIe", "8.0", 108, 19.5, 1935, 40, 1410),
    ("a10", "NVIDIA A10", "8.6", 72, 31.2, 600, 6, 1695),
    ("rtx-3090", "NVIDIA GeForce RTX 3090", "8.6", 82, 35.6, 936, 6, 1695),
    ("l4", "NVIDIA L4", "8.9", 58, 30.3, 300, 48, 2040),
    ("l40s", "NVIDIA L40S", "8.9", 142, 91.6, 864, 96, 2520),
    ("h100-sxm", "NVIDIA H100 80GB HBM3", "9.0", 132, 66.9, 3350, 50, 1980),
    ("h100-pcie", "NVIDIA H100 PCIe", "9.0", 114, 51.2, 2000, 50, 1755),
    ("h200", "NVIDIA H200", "9.0", 132, 66.9, 4800, 50, 1980),
]
# Not in that table but measured in ../shared/datasets/neusight: NVIDIA's Tesla P4 datasheet
# (2560 FP32 cores in 20 SMs, 5.5 TFLOP/s, 192 GB/s, 2 MB L2, 1114 MHz boost). The SM count is
# confirmed by the launch grids in that data set (launched blocks / "Blocks per SM" = 20).
# NVIDIA GeForce RTX 2080 Ti (TU102: 4352 FP32 cores in 68 SMs, 13.4 TFLOP/s at the reference
# 1545 MHz boost, 616 GB/s, 5.5 MB L2): the GPU of the PARAM traces in ../shared/datasets/traces.
_EXTRA = [
    ("p4", "Tesla P4", "6.1", 20, 5.5, 192, 2, 1114, "NVIDIA Tesla P4 datasheet"),
    ("rtx-2080-ti", "NVIDIA GeForce RTX 2080 Ti", "7.5", 68, 13.4, 616, 5.5, 1545, "NVIDIA RTX 2080 Ti specifications"),
]

# slug -> (base MHz, TDP W, process, memory type, memory GB, FP16 tensor TFLOP/s dense with FP32
# accumulation or None), from each GPU's datasheet / whitepaper (the `source` of its row).
_POWER: dict[str, tuple[float, float, str, str, float, float | None]] = {
    "titan-xp": (1405, 250, "TSMC 16FF", "GDDR5X", 12, None),
    "titan-v": (1200, 250, "TSMC 12FFN", "HBM2", 12, 110),
    "p100-sxm2": (1328, 300, "TSMC 16FF", "HBM2", 16, None),
    "p100-pcie": (1126, 250, "TSMC 16FF", "HBM2", 16, None),
    "v100-sxm2": (1290, 300, "TSMC 12FFN", "HBM2", 16, 125),
    "v100-pcie": (1245, 250, "TSMC 12FFN", "HBM2", 32, 112),
    "t4": (585, 70, "TSMC 12FFN", "GDDR6", 16, 65),
    "a100-40gb": (765, 250, "TSMC 7N", "HBM2", 40, 312),
    "a100-80gb-sxm": (1275, 400, "TSMC 7N", "HBM2e", 80, 312),
    "a100-80gb-pcie": (1065, 300, "TSMC 7N", "HBM2e", 80, 312),
    "a10": (885, 150, "Samsung 8N", "GDDR6", 24, 125),
    "rtx-3090": (1395, 350, "Samsung 8N", "GDDR6X", 24, 71),
    "l4": (795, 72, "TSMC 4N", "GDDR6", 24, 121),
    "l40s": (1110, 350, "TSMC 4N", "GDDR6", 48, 362),
    "h100-sxm": (1590, 700, "TSMC 4N", "HBM3", 80, 989),
    "h100-pcie": (1125, 350, "TSMC 4N", "HBM2e", 80, 756),
    "h200": (1590, 700, "TSMC 4N", "HBM3e", 141, 989),
    "p4": (810, 75, "TSMC 16FF", "GDDR5", 8, None),
    "rtx-2080-ti": (1350, 250, "TSMC 12FFN", "GDDR6", 11, 53.8),
}

GPUS: dict[str, GPUSpec] = {}
for _row in [*_TABLE, *_EXTRA]:
    _base, _tdp, _proc, _mem, _gb, _fp16 = _POWER[_row[0]]
    GPUS[_row[0]] = GPUSpec(*_row, base_mhz=_base, tdp_w=_tdp, process=_proc, memory_type=_mem, memory_gb=_gb,
                            fp16_tensor_tflops=_fp16)  # fmt: skip

_CORE = ("slug", "name", "cc", "sms", "fp32_tflops", "dram_gbs", "l2_mb", "boost_mhz")
_EXTRA_FIELDS = ("base_mhz", "tdp_w", "process", "memory_type", "memory_gb", "fp16_tensor_tflops")


def spec_from_dict(g: dict) -> GPUSpec:
    """A spec as a fits file stores it (GPUSpec.to_dict()). The stored figures are what the fits
    were made with and are kept; fields a file made before they existed lacks (TDP, base clock,
    process, memory) come from the table's row of that slug."""
    row = GPUS.get(str(g.get("slug", "")))
    extra = {k: g[k] for k in _EXTRA_FIELDS if g.get(k) is not None}
    if row is not None:
        extra = {**{k: getattr(row, k) for k in _EXTRA_FIELDS}, **extra}
    aliases = tuple(g.get("aliases") or (row.aliases if row is not None else ()))
    return GPUSpec(**{k: g[k] for k in _CORE}, source=g.get("source", ""), aliases=aliases, **extra)


# Tokens that describe memory size or form factor rather than the chip. They pick between
# entries of one model (A100 40GB vs 80GB PCIe) but never make a different model.
_FORM = {"pcie", "sxm", "sxm2", "sxm4", "sxm5", "hbm3", "hbm2", "hbm2e"}
_NOISE = {"nvidia", "tesla", "geforce", "quadro"}
_MEM = re.compile(r"^\d+gb$")

_REGISTERED: dict[str, GPUSpec] = {}


def _tokens(name: str) -> list[str]:
    toks = re.split(r"[^a-z0-9]+", name.lower())
    return [t for t in toks if t and t not in _NOISE]


def _model(toks: list[str]) -> tuple[str, ...]:
    return tuple(t for t in toks if t not in _FORM and not _MEM.match(t))


def model_tokens(name: str) -> tuple[str, ...]:
    """What names a GPU's model: the name's tokens without vendor words, form factor and memory
    size ('Tesla V100-SXM2-16GB' -> ('v100',))."""
    return _model(_tokens(name))


def register(name: str, spec: GPUSpec) -> None:
    """Make lookup() find `spec` by `name` and by its slug (a GPU described at run time)."""
    _REGISTERED[name.strip().lower()] = spec
    _REGISTERED[spec.slug] = spec


def _pick(model: tuple[str, ...], toks: list[str]) -> GPUSpec | None:
    cands = [g for g in GPUS.values() if _model(_tokens(g.slug)) == model]
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0]
    sxm = any(t.startswith("sxm") or t.startswith("hbm") for t in toks)
    pcie = "pcie" in toks
    mem = next((t for t in toks if _MEM.match(t)), None)

    def score(g: GPUSpec) -> tuple[int, int]:
        gt = _tokens(g.slug)
        s = 0
        if sxm and any(t.startswith("sxm") for t in gt):
            s += 2
        if pcie and "pcie" in gt:
            s += 2
        if mem is not None and mem in gt:
            s += 3
        if mem is not None and any(_MEM.match(t) and t != mem for t in gt):
            s -= 3
        return s, -cands.index(g)  # ties: the table's first (SXM) entry

    return max(cands, key=score)


def lookup(name: str | GPUSpec) -> GPUSpec:
    """Find a GPU by a slug ('h100-sxm') or the name CUDA reports ('NVIDIA H100 80GB HBM3')."""
    if isinstance(name, GPUSpec):
        return name
    if not isinstance(name, str) or not name.strip():
        raise UnknownGPUError(f"a GPU name is needed, got {name!r}")
    key = name.strip().lower()
    if key in _REGISTERED:
        return _REGISTERED[key]
    if key in GPUS:
        return GPUS[key]
    toks = _tokens(name)
    spec = _pick(_model(toks), toks)
    if spec is None:
        for reg in _REGISTERED.values():
            if _model(_tokens(reg.name)) == _model(toks):
                return reg
        known = ", ".join(sorted(GPUS))
        raise UnknownGPUError(
            f"unknown GPU {name!r}: it is not in seer's spec table ({known}); describe it in a "
            "device JSON and load it with seer.hardware.gpus.load_device_json(path)"
        )
    return spec


def slug_for(name: str) -> str:
    """File-name-safe identifier of a GPU: the table slug where known, else the name folded."""
    try:
        return lookup(name).slug
    except UnknownGPUError:
        return "-".join(_tokens(name)) or "unknown"


def rows_of(rec: pd.DataFrame, gpu: str | None) -> pd.DataFrame:
    """The records of one GPU, named as the user likes ('t4', 'Tesla T4'); all of them for None."""
    if not gpu:
        return rec
    want = slug_for(gpu)
    names = {g: slug_for(g) == want or g == gpu for g in rec["gpu"].unique()}
    return rec[rec["gpu"].map(names).to_numpy(dtype=bool)]


# Keys of our own device JSON and of NeuSight's device_configs/*.json.
_OURS = {
    "name": "name",
    "cc": "cc",
    "sms": "sms",
    "fp32_tflops": "fp32_tflops",
    "dram_gbs": "dram_gbs",
    "l2_mb": "l2_mb",
    "boost_mhz": "boost_mhz",
}
_NEUSIGHT = {
    "Device": "name",
    "Num_Sm": "sms",
    "SingleFLOPs": "fp32_gflops",
    "Mem_Bw": "dram_gbs",
    "L2Cache": "l2_mb",
    "Freq": "boost_mhz",
}


def load_device_json(path: str | Path, register: bool = True) -> GPUSpec:
    """Read a GPU description for a GPU missing from the table, and make lookup() know it.

    Accepts seer's keys (name, cc, sms, fp32_tflops, dram_gbs, l2_mb, boost_mhz) or NeuSight's
    device_configs format (Device, Num_Sm, SingleFLOPs in GFLOP/s, Mem_Bw, L2Cache, Freq) plus
    a "cc" key; the compute capability may be left out only for a GPU the table knows.
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(str(path), None, None, "an existing device JSON file") from None
    except json.JSONDecodeError as exc:
        raise DataError(str(path), exc.lineno, None, f"valid JSON ({exc.msg})", where="line") from None
    if not isinstance(raw, dict):
        raise DataError(str(path), None, None, "a JSON object of GPU properties")
    keys = _NEUSIGHT if "Device" in raw else _OURS
    vals: dict = {}
    for src, dst in keys.items():
        if src in raw:
            vals[dst] = raw[src]
    for alias in ("cc", "compute_capability", "Compute_Capability"):
        if alias in raw:
            vals["cc"] = str(raw[alias])
    if "fp32_gflops" in vals:
        vals["fp32_tflops"] = float(vals.pop("fp32_gflops")) / 1000.0
    if "name" not in vals or not str(vals["name"]).strip():
        raise DataError(str(path), None, "name", "the GPU's name")
    if "cc" not in vals:
        try:
            vals["cc"] = lookup(str(vals["name"])).cc
        except UnknownGPUError:
            raise DataError(
                str(path), None, "cc", 'the compute capability (e.g. "8.6") of a GPU seer does not know'
            ) from None
    from seer.hardware.occupancy import ARCH  # the CCs occupancy supports

    if vals["cc"] not in ARCH:
        raise DataError(str(path), None, "cc", f"one of {', '.join(ARCH)}", vals["cc"])
    nums = {}
    for key in ("sms", "fp32_tflops", "dram_gbs", "l2_mb", "boost_mhz"):
        v = vals.get(key)
        try:
            if v is None:
                raise TypeError
            num = float(v)
        except (TypeError, ValueError):
            raise DataError(str(path), None, key, "a positive number", v) from None
        if not num > 0:
            raise DataError(str(path), None, key, "a positive number", v)
        nums[key] = num
    name = str(vals["name"]).strip()
    spec = GPUSpec(
        slug="-".join(_tokens(name)),
        name=name,
        cc=vals["cc"],
        sms=int(nums["sms"]),
        fp32_tflops=nums["fp32_tflops"],
        dram_gbs=nums["dram_gbs"],
        l2_mb=nums["l2_mb"],
        boost_mhz=nums["boost_mhz"],
        source=str(path),
    )
    if register:
        _REGISTERED[name.lower()] = spec
        _REGISTERED[spec.slug] = spec
    return spec
