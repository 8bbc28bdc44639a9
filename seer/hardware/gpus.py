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
    source: str = ""
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


_REF = "docs/reference.md, GPU specifications"


def _gpu(
    slug: str,
    name: str,
    cc: str,
    sms: int,
    fp32: float,
    dram: float,
    l2: float,
    boost: float,
    base: float | None,
    tdp: float | None,
    process: str,
    mem: str,
    gb: float,
    fp16: float | None,
    source: str,
    *aliases: str,
) -> GPUSpec:
    return GPUSpec(slug, name, cc, sms, fp32, dram, l2, boost, source, base, tdp, process, mem, gb, fp16, aliases)


# One row per board: slug, the name the driver reports (nvidia-smi, torch.cuda.get_device_name),
# CC, SMs, FP32 TFLOP/s, DRAM GB/s, L2 MB, boost MHz, base MHz, TDP W, process, memory type, memory
# GB, dense FP16 tensor TFLOP/s (FP32 accumulate), source, then the other names of the same board.
# FP32 = SMs x FP32 lanes per SM x 2 x boost clock within 2% on every row
# (tests/seer/hardware/test_gpus.py); where the datasheet quotes no figure or one off that
# product, the row says "derived". The rows of docs/reference.md keep its figures exactly.
_ROWS = [
    # Pascal: TSMC 16FF, no tensor cores.
    _gpu(
        "titan-xp",
        "NVIDIA TITAN Xp",
        "6.1",
        30,
        12.1,
        548,
        3,
        1582,
        1405,
        250,
        "TSMC 16FF",
        "GDDR5X",
        12,
        None,
        _REF + "; NVIDIA TITAN Xp specifications (base clock, 250 W)",
    ),
    _gpu(
        "p100-sxm2",
        "Tesla P100-SXM2-16GB",
        "6.0",
        56,
        10.6,
        732,
        4,
        1480,
        1328,
        300,
        "TSMC 16FF",
        "HBM2",
        16,
        None,
        _REF + "; NVIDIA Tesla P100 datasheet, Pascal GP100 whitepaper (base clock, 300 W)",
    ),
    _gpu(
        "p100-pcie",
        "Tesla P100-PCIE-16GB",
        "6.0",
        56,
        9.3,
        732,
        4,
        1303,
        1126,
        250,
        "TSMC 16FF",
        "HBM2",
        16,
        None,
        _REF + "; NVIDIA Tesla P100 PCIe datasheet (base clock, 250 W)",
    ),
    _gpu(
        "p4",
        "Tesla P4",
        "6.1",
        20,
        5.5,
        192,
        2,
        1114,
        810,
        75,
        "TSMC 16FF",
        "GDDR5",
        8,
        None,
        "NVIDIA Tesla P4 datasheet (2560 cores, 5.5 TFLOP/s quoted at a clock below the 1114 MHz boost: 3.6% "
        "apart; 20 SMs confirmed by the launch grids of ../shared/datasets/neusight)",
    ),
    _gpu(
        "p40",
        "Tesla P40",
        "6.1",
        30,
        11.8,
        346,
        3,
        1531,
        1303,
        250,
        "TSMC 16FF",
        "GDDR5",
        24,
        None,
        "NVIDIA Tesla P40 datasheet (3840 cores, 24 GB, 346 GB/s, 250 W; it quotes 12 TFLOP/s, 11.8 derived = "
        "2 x 3840 x 1531 MHz)",
    ),
    # Volta: TSMC 12FFN.
    _gpu(
        "titan-v",
        "NVIDIA TITAN V",
        "7.0",
        80,
        14.9,
        653,
        4.5,
        1455,
        1200,
        250,
        "TSMC 12FFN",
        "HBM2",
        12,
        110,
        _REF + "; NVIDIA TITAN V specifications (base clock, 250 W, 110 tensor TFLOP/s)",
    ),
    _gpu(
        "v100-sxm2",
        "Tesla V100-SXM2-16GB",
        "7.0",
        80,
        15.7,
        900,
        6,
        1530,
        1312,
        300,
        "TSMC 12FFN",
        "HBM2",
        16,
        125,
        _REF + "; NVIDIA Tesla V100 datasheet, Volta whitepaper (300 W, 125 tensor TFLOP/s; base = the default "
        "application clock). The DGX Station's DGXS boards are this module (4 x 125 = its 500 tensor TFLOP/s)",
        "Tesla V100-SXM2-32GB",
        "Tesla V100-DGXS-16GB",
        "Tesla V100-DGXS-32GB",
    ),
    _gpu(
        "v100-pcie",
        "Tesla V100-PCIE-32GB",
        "7.0",
        80,
        14.1,
        900,
        6,
        1380,
        1245,
        250,
        "TSMC 12FFN",
        "HBM2",
        32,
        112,
        _REF + "; NVIDIA Tesla V100 PCIe product brief PB-08744 (250 W, 112 tensor TFLOP/s)",
        "Tesla V100-PCIE-16GB",
    ),
    _gpu(
        "v100s-pcie",
        "Tesla V100S-PCIE-32GB",
        "7.0",
        80,
        16.4,
        1134,
        6,
        1597,
        1245,
        250,
        "TSMC 12FFN",
        "HBM2",
        32,
        130,
        "NVIDIA Tesla V100S datasheet (16.4 TFLOP/s, 1134 GB/s, 250 W, 130 tensor TFLOP/s)",
    ),
    # Turing: TSMC 12FFN.
    _gpu(
        "t4",
        "Tesla T4",
        "7.5",
        40,
        8.1,
        320,
        4,
        1590,
        585,
        70,
        "TSMC 12FFN",
        "GDDR6",
        16,
        65,
        _REF + "; NVIDIA T4 datasheet (70 W, 65 FP16 tensor TFLOP/s)",
    ),
    _gpu(
        "rtx-2080-ti",
        "NVIDIA GeForce RTX 2080 Ti",
        "7.5",
        68,
        13.4,
        616,
        5.5,
        1545,
        1350,
        250,
        "TSMC 12FFN",
        "GDDR6",
        11,
        53.8,
        "NVIDIA RTX 2080 Ti specifications, Turing whitepaper (reference 1545 MHz boost, 250 W; FP16 "
        "tensor with FP32 accumulate is half rate on GeForce); the GPU of ../shared/datasets/traces",
    ),
    _gpu(
        "titan-rtx",
        "NVIDIA TITAN RTX",
        "7.5",
        72,
        16.3,
        672,
        6,
        1770,
        1350,
        280,
        "TSMC 12FFN",
        "GDDR6",
        24,
        130.5,
        "NVIDIA TITAN RTX specifications, Turing whitepaper (4608 cores, 280 W, full-rate FP32 accumulate)",
    ),
    _gpu(
        "quadro-rtx-8000",
        "Quadro RTX 8000",
        "7.5",
        72,
        16.3,
        672,
        6,
        1770,
        1395,
        295,
        "TSMC 12FFN",
        "GDDR6",
        48,
        130.5,
        "NVIDIA Quadro RTX 8000 / 6000 datasheets (4608 cores, 672 GB/s, 295 W; the 6000 is the 24 GB board)",
        "Quadro RTX 6000",
    ),
    # Ampere: GA100 on TSMC 7N, GA10x on Samsung 8N.
    _gpu(
        "a100-40gb",
        "NVIDIA A100-PCIE-40GB",
        "8.0",
        108,
        19.5,
        1555,
        40,
        1410,
        765,
        250,
        "TSMC 7N",
        "HBM2",
        40,
        312,
        _REF + "; NVIDIA A100 datasheet, Ampere GA100 whitepaper (PCIe 250 W, 312 tensor TFLOP/s)",
    ),
    _gpu(
        "a100-40gb-sxm",
        "NVIDIA A100-SXM4-40GB",
        "8.0",
        108,
        19.5,
        1555,
        40,
        1410,
        1095,
        400,
        "TSMC 7N",
        "HBM2",
        40,
        312,
        "NVIDIA A100 datasheet, Ampere GA100 whitepaper (SXM4 400 W); PG509-200 is this HGX board "
        "(deviceProperties: 108 SMs, 40 GB)",
        "NVIDIA A100-PG509-200",
    ),
    _gpu(
        "a100-80gb-sxm",
        "NVIDIA A100-SXM4-80GB",
        "8.0",
        108,
        19.5,
        2039,
        40,
        1410,
        1275,
        400,
        "TSMC 7N",
        "HBM2e",
        80,
        312,
        _REF + "; NVIDIA A100 80GB datasheet (SXM4 400 W)",
    ),
    _gpu(
        "a100-80gb-pcie",
        "NVIDIA A100 80GB PCIe",
        "8.0",
        108,
        19.5,
        1935,
        40,
        1410,
        1065,
        300,
        "TSMC 7N",
        "HBM2e",
        80,
        312,
        _REF + "; NVIDIA A100 80GB PCIe product brief (300 W)",
    ),
    _gpu(
        "a30",
        "NVIDIA A30",
        "8.0",
        56,
        10.3,
        933,
        24,
        1440,
        930,
        165,
        "TSMC 7N",
        "HBM2",
        24,
        165,
        "NVIDIA A30 datasheet (3584 cores, 10.3 TFLOP/s, 933 GB/s, 165 W, 165 tensor TFLOP/s)",
    ),
    _gpu(
        "a10",
        "NVIDIA A10",
        "8.6",
        72,
        31.2,
        600,
        6,
        1695,
        885,
        150,
        "Samsung 8N",
        "GDDR6",
        24,
        125,
        _REF + "; NVIDIA A10 datasheet (150 W, 125 tensor TFLOP/s; base clock)",
    ),
    _gpu(
        "a10g",
        "NVIDIA A10G",
        "8.6",
        80,
        35.0,
        600,
        6,
        1710,
        None,
        300,
        "Samsung 8N",
        "GDDR6",
        24,
        140,
        "AWS EC2 G5 (the A10G is AWS's GA102 board, no NVIDIA datasheet): nvidia-smi / deviceProperties give 80 SMs, "
        "1710 MHz max SM clock, 300 W power limit, 24 GB GDDR6 (600 GB/s, the A10's memory); FP32 and tensor "
        "derived at 1710 MHz from the A10's per-SM rates; base clock not published",
    ),
    _gpu(
        "a16",
        "NVIDIA A16",
        "8.6",
        10,
        4.5,
        200,
        2,
        1755,
        885,
        62.5,
        "Samsung 8N",
        "GDDR6",
        16,
        18,
        "NVIDIA A16 product brief PB-10518 (per GPU of the board's four: 1280 cores, 4.5 TFLOP/s, 16 GB, 200 GB/s; "
        "the board's 250 W shared by four); tensor derived (A10's per-SM rate at 1755 MHz)",
    ),
    _gpu(
        "a2",
        "NVIDIA A2",
        "8.6",
        10,
        4.5,
        200,
        2,
        1770,
        1440,
        60,
        "Samsung 8N",
        "GDDR6",
        16,
        18,
        "NVIDIA A2 datasheet (1280 cores, 4.5 TFLOP/s, 200 GB/s, 40-60 W configurable, 18 FP16 tensor TFLOP/s)",
    ),
    _gpu(
        "a40",
        "NVIDIA A40",
        "8.6",
        84,
        37.4,
        696,
        6,
        1740,
        1305,
        300,
        "Samsung 8N",
        "GDDR6",
        48,
        149.7,
        "NVIDIA A40 datasheet / product brief PB-09976 (10752 cores, 37.4 TFLOP/s, 696 GB/s, 300 W)",
    ),
    _gpu(
        "rtx-a6000",
        "NVIDIA RTX A6000",
        "8.6",
        84,
        38.7,
        768,
        6,
        1800,
        1410,
        300,
        "Samsung 8N",
        "GDDR6",
        48,
        154.8,
        "NVIDIA RTX A6000 datasheet (10752 cores, 38.7 TFLOP/s, 768 GB/s, 300 W)",
    ),
    _gpu(
        "rtx-a5000",
        "NVIDIA RTX A5000",
        "8.6",
        64,
        27.8,
        768,
        6,
        1695,
        1170,
        230,
        "Samsung 8N",
        "GDDR6",
        24,
        111.1,
        "NVIDIA RTX A5000 datasheet (8192 cores, 27.8 TFLOP/s, 768 GB/s, 230 W)",
    ),
    _gpu(
        "rtx-a4000",
        "NVIDIA RTX A4000",
        "8.6",
        48,
        19.2,
        448,
        4,
        1560,
        735,
        140,
        "Samsung 8N",
        "GDDR6",
        16,
        76.7,
        "NVIDIA RTX A4000 datasheet (6144 cores, 19.2 TFLOP/s, 448 GB/s, 140 W)",
    ),
    _gpu(
        "rtx-3080",
        "NVIDIA GeForce RTX 3080",
        "8.6",
        68,
        29.8,
        760,
        5,
        1710,
        1440,
        320,
        "Samsung 8N",
        "GDDR6X",
        10,
        59.5,
        "NVIDIA GeForce RTX 3080 specifications, Ampere GA102 whitepaper (8704 cores, 760 GB/s, 320 W)",
    ),
    _gpu(
        "rtx-3090",
        "NVIDIA GeForce RTX 3090",
        "8.6",
        82,
        35.6,
        936,
        6,
        1695,
        1395,
        350,
        "Samsung 8N",
        "GDDR6X",
        24,
        71,
        _REF + "; Ampere GA102 whitepaper (350 W; FP16 tensor with FP32 accumulate half rate on GeForce)",
    ),
    _gpu(
        "rtx-3090-ti",
        "NVIDIA GeForce RTX 3090 Ti",
        "8.6",
        84,
        40.0,
        1008,
        6,
        1860,
        1560,
        450,
        "Samsung 8N",
        "GDDR6X",
        24,
        80,
        "NVIDIA GeForce RTX 3090 Ti specifications (10752 cores, 1008 GB/s, 450 W); tensor derived",
    ),
    # Ada Lovelace: TSMC 4N.
    _gpu(
        "l4",
        "NVIDIA L4",
        "8.9",
        58,
        30.3,
        300,
        48,
        2040,
        795,
        72,
        "TSMC 4N",
        "GDDR6",
        24,
        121,
        _REF + "; NVIDIA L4 datasheet (72 W, 242 sparse FP16 tensor TFLOP/s)",
    ),
    _gpu(
        "l40",
        "NVIDIA L40",
        "8.9",
        142,
        90.5,
        864,
        96,
        2490,
        735,
        300,
        "TSMC 4N",
        "GDDR6",
        48,
        181,
        "NVIDIA L40 datasheet (18176 cores, 90.5 TFLOP/s, 864 GB/s, 300 W, 362 sparse FP16 tensor TFLOP/s)",
    ),
    _gpu(
        "l40s",
        "NVIDIA L40S",
        "8.9",
        142,
        91.6,
        864,
        96,
        2520,
        1110,
        350,
        "TSMC 4N",
        "GDDR6",
        48,
        362,
        _REF + "; NVIDIA L40S datasheet (350 W, 733 sparse FP16 tensor TFLOP/s)",
    ),
    _gpu(
        "rtx-6000-ada",
        "NVIDIA RTX 6000 Ada Generation",
        "8.9",
        142,
        91.1,
        960,
        96,
        2505,
        915,
        300,
        "TSMC 4N",
        "GDDR6",
        48,
        364.2,
        "NVIDIA RTX 6000 Ada datasheet (18176 cores, 91.1 TFLOP/s, 960 GB/s, 300 W)",
    ),
    _gpu(
        "rtx-4090",
        "NVIDIA GeForce RTX 4090",
        "8.9",
        128,
        82.6,
        1008,
        72,
        2520,
        2235,
        450,
        "TSMC 4N",
        "GDDR6X",
        24,
        165.2,
        "NVIDIA Ada Lovelace whitepaper (16384 cores, 82.6 TFLOP/s, 1008 GB/s, 72 MB L2, 450 W; FP16 tensor "
        "with FP32 accumulate half rate on GeForce)",
    ),
    # Hopper: TSMC 4N.
    _gpu(
        "h100-sxm",
        "NVIDIA H100 80GB HBM3",
        "9.0",
        132,
        66.9,
        3350,
        50,
        1980,
        1590,
        700,
        "TSMC 4N",
        "HBM3",
        80,
        989.4,
        _REF + "; NVIDIA H100 datasheet, Hopper whitepaper (SXM5 700 W)",
    ),
    _gpu(
        "h100-pcie",
        "NVIDIA H100 PCIe",
        "9.0",
        114,
        51.2,
        2000,
        50,
        1755,
        1125,
        350,
        "TSMC 4N",
        "HBM2e",
        80,
        756,
        _REF + "; NVIDIA H100 datasheet (PCIe 300-350 W)",
    ),
    _gpu(
        "h100-nvl",
        "NVIDIA H100 NVL",
        "9.0",
        132,
        60.3,
        3900,
        50,
        1785,
        None,
        400,
        "TSMC 4N",
        "HBM3",
        94,
        835.5,
        "NVIDIA H100 NVL datasheet (per GPU: 60 TFLOP/s, 94 GB, 3.9 TB/s, 350-400 W, 1671 sparse FP16 tensor "
        "TFLOP/s); boost derived = 60.3 / (2 x 132 x 128); base clock not published",
    ),
    _gpu(
        "h200",
        "NVIDIA H200",
        "9.0",
        132,
        66.9,
        4800,
        50,
        1980,
        None,
        700,
        "TSMC 4N",
        "HBM3e",
        141,
        989.4,
        _REF + "; NVIDIA H200 datasheet (SXM 700 W); base clock not published",
    ),
    _gpu(
        "h200-nvl",
        "NVIDIA H200 NVL",
        "9.0",
        132,
        60.3,
        4800,
        50,
        1785,
        None,
        600,
        "TSMC 4N",
        "HBM3e",
        141,
        835.5,
        "NVIDIA H200 datasheet (NVL: 60 TFLOP/s, 4.8 TB/s, up to 600 W); boost derived as the H100 NVL's",
    ),
    _gpu(
        "h20",
        "NVIDIA H20",
        "9.0",
        78,
        39.5,
        4000,
        60,
        1980,
        None,
        400,
        "TSMC 4N",
        "HBM3",
        96,
        148,
        "NVIDIA H20 as reported (no public datasheet): 96 GB HBM3, 4.0 TB/s, 60 MB L2, 400 W, 148 FP16 tensor "
        "TFLOP/s; 78 SMs from its deviceProperties; FP32 derived at the H100 SXM's 1980 MHz (reports quote 44)",
    ),
    _gpu(
        "gh200",
        "NVIDIA GH200 480GB",
        "9.0",
        132,
        66.9,
        4000,
        50,
        1980,
        None,
        1000,
        "TSMC 4N",
        "HBM3",
        96,
        989.4,
        "NVIDIA GH200 Grace Hopper datasheet (96 GB HBM3, 4 TB/s; 67 TFLOP/s; TDP the module's 1000 W maximum, "
        "Grace CPU and memory included); base clock not published",
    ),
    _gpu(
        "gh200-144g",
        "NVIDIA GH200 144G HBM3e",
        "9.0",
        132,
        66.9,
        4900,
        50,
        1980,
        None,
        1000,
        "TSMC 4N",
        "HBM3e",
        144,
        989.4,
        "NVIDIA GH200 Grace Hopper datasheet (144 GB HBM3e, 4.9 TB/s; TDP the module's 1000 W maximum); "
        "base clock not published",
    ),
    # Blackwell: TSMC 4NP (data center, CC 10.0), TSMC 4N (GeForce, CC 12.0).
    _gpu(
        "b200",
        "NVIDIA B200",
        "10.0",
        148,
        74.4,
        8000,
        126,
        1965,
        None,
        1000,
        "TSMC 4NP",
        "HBM3e",
        180,
        2250,
        "NVIDIA HGX B200 datasheet (per GPU: 180 GB HBM3e, 8 TB/s, 1000 W, 4.5 sparse FP16 tensor PFLOP/s; 600 "
        "FP32 TFLOP/s per 8 GPUs = 75); 148 SMs, 1965 MHz and 126 MB L2 from its deviceProperties as reported; "
        "FP32 derived",
    ),
    _gpu(
        "gb200",
        "NVIDIA GB200",
        "10.0",
        148,
        80.0,
        8000,
        126,
        2111,
        None,
        1200,
        "TSMC 4NP",
        "HBM3e",
        186,
        2500,
        "NVIDIA GB200 NVL72 datasheet (per GPU: 80 FP32 TFLOP/s = 5760 / 72, 186 GB HBM3e, 8 TB/s, 5 sparse FP16 "
        "tensor PFLOP/s, about 1200 W); boost derived = 80 / (2 x 148 x 128); SMs and L2 as the B200's",
    ),
    _gpu(
        "rtx-5090",
        "NVIDIA GeForce RTX 5090",
        "12.0",
        170,
        104.8,
        1792,
        96,
        2407,
        2017,
        575,
        "TSMC 4N",
        "GDDR7",
        32,
        209.5,
        "NVIDIA GeForce RTX 5090 specifications, Blackwell GB202 whitepaper (21760 cores, 104.8 TFLOP/s, "
        "1792 GB/s, 575 W); tensor derived (half the FP16-accumulate rate, as on GeForce)",
    ),
]

GPUS: dict[str, GPUSpec] = {g.slug: g for g in _ROWS}
# Exact names the driver gives (display name and aliases), lower case -> row.
_NAMES: dict[str, GPUSpec] = {n.lower(): g for g in _ROWS for n in (g.name, *g.aliases)}


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
    if key in _NAMES:
        return _NAMES[key]
    toks = _tokens(name)
    spec = _pick(_model(toks), toks)
    if spec is None:
        for reg in _REGISTERED.values():
            if _model(_tokens(reg.name)) == _model(toks):
                return reg
        known = ", ".join(sorted(GPUS))
        raise UnknownGPUError(
            f"unknown GPU {name!r}: it is not in seer's spec table ({known}); describe it "
            '(--gpu "name=...,cc=8.6,sms=84,boost_mhz=1695,dram_gbs=936", --gpu-info with nvidia-smi output or a '
            "device JSON; seer.hardware.describe.describe)"
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
