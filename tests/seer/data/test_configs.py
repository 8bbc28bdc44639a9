"""Sizes of a configuration that the geometry rules and features read (seer.data.configs)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seer.data import configs, records

REPO = Path(__file__).resolve().parents[3]


def test_the_fft_side_is_the_least_power_of_two_from_16_that_holds_the_padded_image():
    h = np.array([5.0, 16.0, 17.0, 14.0, 60.0, 80.0, 600.0])
    w = np.array([5.0, 16.0, 9.0, 24.0, 88.0, 160.0, 10.0])
    assert configs.fft_side(h, w).tolist() == [16, 16, 32, 32, 128, 256, 512]
    layer = dict(batch=8, c_in=64, h_in=7, w_in=7, c_out=128, kh=1, kw=1, stride_h=1, stride_w=1, pad_h=0, pad_w=0)
    conv = pd.DataFrame([dict(op="conv_fwd", dil_h=1, dil_w=1, groups=1, **layer)])
    view = configs.gemm_view(conv.assign(algo="FFT"))
    assert view["gbatch"][0] == 16 * 9 and view["gm"][0] == 8 and view["gn"][0] == 128 and view["gk"][0] == 64


@pytest.mark.skipif(not (REPO / "data" / "h100-sxm").is_dir(), reason="the H100's records are not here")
def test_the_fft_bins_are_the_complex_gemms_grid_on_the_h100():
    """The complex GEMM of cuDNN's FFT runs one block column per frequency bin (grid_z) on most
    of the H100's calls; the rest lay the bins on another axis."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = records.load(REPO / "data" / "h100-sxm")
    gemm = rec[(rec["algo"] == "FFT") & (rec["status"] == "ok") & rec["kernel"].fillna("").str.contains("gemm_cf32")]
    bins = configs.shapes(gemm)["FB"]
    assert len(gemm) > 100 and np.mean(bins == gemm["grid_z"].to_numpy(dtype=float)) > 0.9


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
def test_fft_tilings_gemm_runs_over_images_or_the_lines_of_1d_pieces(gpu):
    """One tile's complex GEMM per bin (configs.gemm_view of one_tile): over the images of a 2-D
    tile (N x K, 544 bins), over every line of a 1-D piece for filters of one row or column (N x
    lines x K, 17 or 129 bins), its tiles swapped between the grid's axes."""
    if not (REPO / "data" / gpu).is_dir():
        pytest.skip(f"the {gpu}'s records are not here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = records.load(REPO / "data" / gpu)
    gemm = rec[
        (rec["op"] == "conv_fwd")
        & (rec["algo"] == "FFT_TILING")
        & (rec["status"] == "ok")
        & rec["kernel"].fillna("").str.contains("gemm_cf32")
        & (pd.to_numeric(rec["groups"]) == 1)
    ]
    unit = configs.one_tile(gemm)
    view = configs.gemm_view(unit)
    tiles = gemm["kernel"].str.extract(r"tilesize(\d+)x(\d+)").astype(float).to_numpy()
    one_d = ((unit["kh"] == 1) | (unit["kw"] == 1)).to_numpy()
    first, second = np.where(one_d, view["gn"], view["gm"]), np.where(one_d, view["gm"], view["gn"])
    blocks = np.ceil(first / tiles[:, 0]) * np.ceil(second / tiles[:, 1]) * view["gbatch"]
    grid = gemm[["grid_x", "grid_y", "grid_z"]].to_numpy(dtype=float).prod(axis=1)
    assert len(gemm) > 300 and one_d.sum() > 100
    assert np.mean(blocks[one_d] == grid[one_d]) > 0.98 and np.mean(blocks[~one_d] == grid[~one_d]) > 0.98


def test_winograd_nonfused_runs_a_gemm_per_point_of_its_tile_and_the_filter_gradient_reduces_over_tiles():
    """The H100's Winograd GEMMs: grid_z 36 on 3x3 filters, 169 on 5x5 (9x9 tiles); the filter
    gradient's is K x C (VGG-16's layer 7: 8 x 4 tiles of 64) reducing over every image's tiles."""
    from seer.data.configs import gemm_view, winograd_tiles

    df = pd.DataFrame(dict(batch=[128, 128], c_in=[256, 64], h_in=[28, 27], w_in=[28, 27], c_out=[512, 192],
                           kh=[3, 5], kw=[3, 5], pad_h=[1, 2], pad_w=[1, 2], stride_h=1, stride_w=1, dil_h=1,
                           dil_w=1, groups=1, algo="WINOGRAD_NONFUSED"))
    points, tiles = winograd_tiles(configs.shapes(df.assign(op="conv_fwd")))
    assert points.tolist() == [36, 169] and tiles.tolist() == [128 * 7 * 7, 128 * 3 * 3]
    fwd, wgrad = (gemm_view(df.assign(op=op)) for op in ("conv_fwd", "conv_bwd_filter"))
    assert fwd["gk"].tolist() == [256, 64] and fwd["gbatch"].tolist() == [36, 169]
    assert (wgrad["gm"].tolist(), wgrad["gn"].tolist(), wgrad["gk"].tolist()) == ([512, 192], [256, 64], tiles.tolist())


def test_each_direction_of_the_fft_multiplies_its_own_spectra_per_bin():
    """The forward's Y (N x K) over C, the data gradient's dX (N x C) over K, the filter
    gradient's dW (K x C) over the images; FFT_TILING's tile GEMMs are keyed as the forward's but
    the data gradient's, dX's tile (N x C, each phase of a folded dy) over K."""
    layer = dict(batch=8, c_in=64, h_in=7, w_in=7, c_out=128, kh=3, kw=3, stride_h=1, stride_w=1, pad_h=1, pad_w=1)
    conv = pd.DataFrame([dict(dil_h=1, dil_w=1, groups=1, algo="FFT", **layer)])
    views = {op: configs.gemm_view(conv.assign(op=op)) for op in ("conv_fwd", "conv_bwd_data", "conv_bwd_filter")}
    mnk = {op: tuple(float(v[k][0]) for k in ("gm", "gn", "gk")) for op, v in views.items()}
    assert mnk == {"conv_fwd": (8, 128, 64), "conv_bwd_data": (8, 64, 128), "conv_bwd_filter": (128, 64, 8)}
    assert len({float(v["gbatch"][0]) for v in views.values()}) == 1  # the same bins
    tiling = {op: configs.gemm_view(conv.assign(op=op, algo="FFT_TILING")) for op in views}
    assert {op: float(v["gk"][0]) for op, v in tiling.items()} == {
        "conv_fwd": 64.0,
        "conv_bwd_data": 128.0,
        "conv_bwd_filter": 64.0,
    }
    strided = conv.assign(op="conv_bwd_data", algo="FFT_TILING", stride_h=2, stride_w=2)
    assert float(configs.gemm_view(strided)["gn"][0]) == 64 * 4  # 2 x 2 phases of dy under a 3x3 filter


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
def test_the_gradients_complex_gemms_tile_their_own_outputs(gpu):
    """The gradients' complex GEMM grids (tiles from the kernel name, either way round, a block
    column per bin) cover the data gradient's N x C and the filter gradient's K x C."""
    if not (REPO / "data" / gpu).is_dir():
        pytest.skip(f"the {gpu}'s records are not here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = records.load(REPO / "data" / gpu)
    for op, least in (("conv_bwd_data", 0.9), ("conv_bwd_filter", 0.99)):
        gemm = rec[
            (rec["op"] == op)
            & (rec["algo"] == "FFT")
            & (rec["status"] == "ok")
            & rec["kernel"].fillna("").str.contains("gemm_cf32")
            & (pd.to_numeric(rec["groups"]) == 1)
        ]
        v = configs.gemm_view(gemm)
        t = gemm["kernel"].str.extract(r"tilesize(\d+)x(\d+)").astype(float).to_numpy()
        grid = gemm[["grid_x", "grid_y", "grid_z"]].to_numpy(dtype=float).prod(axis=1)
        one = np.ceil(v["gm"] / t[:, 0]) * np.ceil(v["gn"] / t[:, 1]) * v["gbatch"]
        other = np.ceil(v["gn"] / t[:, 0]) * np.ceil(v["gm"] / t[:, 1]) * v["gbatch"]
        assert len(gemm) > 100 and np.mean((one == grid) | (other == grid)) > least, op
