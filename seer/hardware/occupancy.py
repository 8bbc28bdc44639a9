"""Resident blocks per SM, B_max and waves, as CUDA's occupancy calculator computes them.

SEER's time models count waves W = ceil(B / B_max) with B_max = resident blocks per SM x SMs;
this module gives B_max for compute capability 6.0 to 9.0 (docs/reference.md, Occupancy). All
functions take numpy arrays as well as scalars, so a whole data set is done in one call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seer.errors import SeerError


@dataclass(frozen=True)
class Arch:
    """Per-SM limits of one compute capability."""

    max_threads: int
    max_warps: int
    max_blocks: int
    regs: int
    carveouts_kb: tuple[int, ...]
    max_smem_block: int  # bytes a block may ask for (static + dynamic)
    reserved_smem: int  # bytes the driver reserves per block
    smem_unit: int
    subpartitions: int
    reg_unit: int = 256  # registers are allocated per warp in units of 256
    max_regs_thread: int = 255


ARCH: dict[str, Arch] = {
    "6.0": Arch(2048, 64, 32, 65536, (64,), 48 * 1024, 0, 256, 2),
    "6.1": Arch(2048, 64, 32, 65536, (96,), 48 * 1024, 0, 256, 4),
    "7.0": Arch(2048, 64, 32, 65536, (0, 8, 16, 32, 64, 96), 96 * 1024, 0, 256, 4),
    "7.5": Arch(1024, 32, 16, 65536, (32, 64), 64 * 1024, 0, 256, 4),
    "8.0": Arch(2048, 64, 32, 65536, (0, 8, 16, 32, 64, 100, 132, 164), 163 * 1024, 1024, 128, 4),
    "8.6": Arch(1536, 48, 16, 65536, (0, 8, 16, 32, 64, 100), 99 * 1024, 1024, 128, 4),
    "8.9": Arch(1536, 48, 24, 65536, (0, 8, 16, 32, 64, 100), 99 * 1024, 1024, 128, 4),
    "9.0": Arch(2048, 64, 32, 65536, (0, 8, 16, 32, 64, 100, 132, 164, 196, 228), 227 * 1024, 1024, 128, 4),
}

LIMITS = ("warps", "blocks", "registers", "shared_memory")


def arch(cc: str | float) -> Arch:
    """Per-SM limits of `cc`. A CC newer than the model's (Blackwell's 10.0, 12.0: the table has
    such GPUs) takes the newest major's limits it has, as seer.hardware.device.occupancy_cc does."""
    key = f"{float(cc):.1f}" if not isinstance(cc, str) else cc
    newest = max(ARCH, key=float)
    if key not in ARCH and _is_cc(key) and float(key) > float(newest):
        return ARCH[newest]
    if key not in ARCH:
        raise SeerError(
            f"compute capability {cc} is not supported by the occupancy model (supported: {', '.join(ARCH)})"
        )
    return ARCH[key]


def _is_cc(key: str) -> bool:
    try:
        float(key)
    except ValueError:
        return False
    return True


def _ceil_to(x, unit):
    return -(-x // unit) * unit


def limits(cc: str | float, threads_per_block, regs_per_thread, smem_bytes=0) -> dict[str, np.ndarray]:
    """Blocks per SM allowed by each resource: warps, blocks, registers, shared memory.

    smem_bytes is static + dynamic shared memory per block. The shared-memory carve-out is the
    smallest supported one that holds as many blocks as the other limits allow (what the driver
    picks for the default preference); ncu's launch__occupancy_limit_shared_mem is authoritative
    where it was measured.
    """
    a = arch(cc)
    threads, regs, smem = np.broadcast_arrays(
        np.asarray(threads_per_block, dtype=np.int64),
        np.asarray(regs_per_thread, dtype=np.int64),
        np.asarray(smem_bytes, dtype=np.int64),
    )
    if np.any(threads < 1) or np.any(threads > 1024):
        raise SeerError("threads per block must be between 1 and 1024")
    if np.any(regs < 0) or np.any(smem < 0):
        raise SeerError("registers per thread and shared memory must not be negative")
    warps = -(-threads // 32)
    lim_w = a.max_warps // warps
    lim_b = np.full(lim_w.shape, a.max_blocks, dtype=np.int64)
    reg_warp = _ceil_to(np.maximum(regs, 1) * 32, a.reg_unit)
    per_sub = a.regs // a.subpartitions
    lim_r = (per_sub // reg_warp) * a.subpartitions // warps
    lim_r = np.where(regs > a.max_regs_thread, 0, np.where(regs == 0, a.max_blocks, lim_r))
    other = np.minimum(np.minimum(lim_w, lim_b), lim_r)
    need = _ceil_to(smem + a.reserved_smem, a.smem_unit)
    carve = np.array(a.carveouts_kb, dtype=np.int64) * 1024
    # smallest carve-out that holds `other` blocks, else the largest one
    want = other * need
    idx = np.searchsorted(carve, want, side="left")
    chosen = carve[np.minimum(idx, len(carve) - 1)]
    lim_s = np.where(need > 0, chosen // np.maximum(need, 1), a.max_blocks).astype(np.int64)
    lim_s = np.where(smem > a.max_smem_block, 0, lim_s)
    return {"warps": lim_w, "blocks": lim_b, "registers": lim_r, "shared_memory": lim_s}


def blocks_per_sm(cc, threads_per_block, regs_per_thread, smem_bytes=0) -> np.ndarray:
    lim = limits(cc, threads_per_block, regs_per_thread, smem_bytes)
    return np.minimum.reduce([lim[k] for k in LIMITS])


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    limiting: tuple[str, ...]  # every resource at the minimum
    limits: dict[str, int]
    warps_per_block: int
    occupancy: float  # theoretical: resident warps / max warps per SM


def occupancy(cc, threads_per_block: int, regs_per_thread: int, smem_bytes: int = 0) -> Occupancy:
    """Occupancy of one launch configuration, with the resource(s) that limit it."""
    lim = {k: int(v) for k, v in limits(cc, threads_per_block, regs_per_thread, smem_bytes).items()}
    blocks = min(lim.values())
    warps = -(-int(threads_per_block) // 32)
    return Occupancy(
        blocks, tuple(k for k in LIMITS if lim[k] == blocks), lim, warps, blocks * warps / arch(cc).max_warps
    )


def b_max(blocks_per_sm_, sms):
    """Resident blocks per full wave on the whole GPU."""
    return np.asarray(blocks_per_sm_) * np.asarray(sms)


def waves(grid_blocks, b_max_):
    """Number of waves ceil(B / B_max); 0 resident blocks (cannot launch) gives inf."""
    g = np.asarray(grid_blocks, dtype=np.float64)
    b = np.asarray(b_max_, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, np.ceil(g / np.where(b > 0, b, 1)), np.inf)


def last_wave_fraction(grid_blocks, b_max_):
    """epsilon of the SEER memory-bound model: share of the last wave that is occupied."""
    g = np.asarray(grid_blocks, dtype=np.float64)
    b = np.asarray(b_max_, dtype=np.float64)
    w = waves(g, b)
    return (g - (w - 1) * b) / b
