import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seer.errors import SeerError
from seer.hardware.occupancy import ARCH, b_max, blocks_per_sm, last_wave_fraction, occupancy, waves


# docs/reference.md, Occupancy: the check values
@pytest.mark.parametrize(
    "regs,smem,blocks,limiting,occ",
    [
        (40, 0, 12, "warps", 1.0),
        (54, 8192, 9, "registers", 0.75),
        (55, 16384, 5, "shared_memory", 5 * 4 / 48),
        (56, 9728, 9, "registers", 0.75),
    ],
)
def test_sm86_check_values(regs, smem, blocks, limiting, occ):
    o = occupancy("8.6", 128, regs, smem)
    assert o.blocks_per_sm == blocks
    assert limiting in o.limiting
    assert o.occupancy == pytest.approx(occ)


def test_sm86_limits_reported():
    o = occupancy("8.6", 128, 54, 8192)
    assert o.limits["registers"] == 9 and o.limits["shared_memory"] == 11
    assert occupancy("8.6", 128, 55, 16384).limits["shared_memory"] == 5


def test_sm90_big_smem_one_block():
    o = occupancy("9.0", 256, 248, 229680)
    assert o.blocks_per_sm == 1
    assert o.occupancy == pytest.approx(8 / 64)


def test_smem_over_block_maximum_cannot_launch():
    assert occupancy("7.5", 128, 32, 65 * 1024).blocks_per_sm == 0
    assert occupancy("9.0", 128, 300, 0).blocks_per_sm == 0  # > 255 registers


def test_titan_xp_bmax_matches_seer_table():
    # SEER's hand-made table: 256-thread sgemm 128x128 kernels at 60 blocks on 30 SMs = 2/SM
    # (128 regs x 256 threads use the whole register file per 2 blocks).
    assert b_max(blocks_per_sm("6.1", 256, 128, 0), 30) == 60


def test_waves_and_last_wave():
    assert waves(121, 60) == 3
    assert waves(120, 60) == 2
    assert last_wave_fraction(121, 60) == pytest.approx(1 / 60)
    assert np.isinf(waves(10, 0))


def test_vectorized_matches_scalar():
    regs = np.array([32, 64, 96, 128, 200])
    got = blocks_per_sm("8.0", 256, regs, 16384)
    assert list(got) == [occupancy("8.0", 256, r, 16384).blocks_per_sm for r in regs]


def test_bad_input():
    with pytest.raises(SeerError):
        occupancy("5.2", 128, 32)
    with pytest.raises(SeerError):
        occupancy("8.0", 2048, 32)


CCS = st.sampled_from(sorted(ARCH))


@settings(max_examples=300, deadline=None)
@given(
    cc=CCS,
    threads=st.integers(1, 1024),
    regs=st.integers(1, 255),
    extra=st.integers(1, 64),
    smem=st.integers(0, 96 * 1024),
)
def test_more_registers_never_raise_occupancy(cc, threads, regs, extra, smem):
    assert (
        occupancy(cc, threads, min(regs + extra, 255), smem).blocks_per_sm
        <= occupancy(cc, threads, regs, smem).blocks_per_sm
    )


@settings(max_examples=300, deadline=None)
@given(
    cc=CCS,
    threads=st.integers(1, 1024),
    regs=st.integers(1, 255),
    smem=st.integers(0, 200 * 1024),
    extra=st.integers(1, 64 * 1024),
)
def test_more_shared_memory_never_raises_occupancy(cc, threads, regs, smem, extra):
    assert occupancy(cc, threads, regs, smem + extra).blocks_per_sm <= occupancy(cc, threads, regs, smem).blocks_per_sm
