import numpy as np
import pandas as pd
from synthetic import conv_records, gemm_records

from seer.models import geometry


def test_gemm_grid_rules_found():
    tr = gemm_records(300)
    g = geometry.fit_geometry(tr, "bmm")
    assert g.describe() == "ceil(n/128) x ceil(m/64) x batch"
    grid = g.grid(gemm_records(50, seed=9))
    fresh = gemm_records(50, seed=9)
    assert (grid["grid_x"] == fresh["grid_x"].to_numpy(float)).all()
    assert g.tiles() == (128.0, 64.0)


def test_conv_rules_and_constant_axis():
    rec = conv_records(200)
    wn = rec[(rec["algo"] == "WINOGRAD_NONFUSED") & (rec["status"] == "ok")]
    g = geometry.fit_geometry(wn, "conv_fwd")
    assert g.axes["grid_z"].kind == "const" and g.axes["grid_z"].value == 36
    assert g.axes["grid_y"].describe() == "ceil(K/64)"
    pre = rec[rec["algo"] == "IMPLICIT_PRECOMP_GEMM"]
    assert geometry.fit_geometry(pre, "conv_fwd").axes["grid_x"].describe() == "ceil(NPQ/128)"


def test_nearest_fallback_when_no_rule_fits():
    tr = gemm_records(400)
    # like cuBLAS's split-K: small outputs with a long reduction are split four ways
    tr["grid_z"] = np.where((tr["m"] * tr["n"] < 2**17) & (tr["k"] > 300), 4, 1)
    g = geometry.fit_geometry(tr, "bmm")
    assert g.axes["grid_z"].kind == "knn"
    back = geometry.Geometry.from_dict(g.to_dict())
    assert (back.grid(tr)["grid_z"] == g.grid(tr)["grid_z"]).all()
    # a training row is its own nearest neighbour
    assert (g.grid(tr)["grid_z"] == tr["grid_z"].to_numpy(float)).mean() > 0.9


def test_a_gemms_guessed_slices_are_those_its_library_picked():
    """Each shape timed twice, undivided and split 4 ways (cuBLASLt's heuristic's first): a query
    that gives no split-K count is guessed the library's (seer.models.geometry.library_picked),
    not the undivided call's grid_z = batch, which a closed form of every row finds."""
    one = gemm_records(200, op="gemm").assign(heuristic_rank=1)
    four = one.assign(grid_z=one["grid_z"] * 4, heuristic_rank=0)
    tr = pd.concat([one, four], ignore_index=True)
    g = geometry.fit_geometry(tr, "gemm")
    assert (g.grid(one)["grid_z"] == four["grid_z"].to_numpy(float)).all()
    assert geometry.library_picked(tr.assign(heuristic_rank=0), "gemm") is None  # all picked: every row
    assert geometry.library_picked(tr, "bmm").sum() == 200
    assert geometry.library_picked(conv_records(5), "conv_fwd") is None


def test_a_direct_kernels_grid_learnt_at_one_batch_scales_with_the_batch():
    # cuDNN's direct convolution: one thread per output element, 1024 to a block
    from seer.data import configs

    rec = conv_records(300)
    rec = rec.assign(batch=128)
    out = configs.shapes(rec)["NKPQ"]
    rec["grid_x"], rec["grid_y"], rec["grid_z"] = np.ceil(out / 1024), 1, 1
    g = geometry.fit_geometry(rec, "conv_fwd")
    assert g.axes["grid_x"].describe() == "ceil(NKPQ/1024)" and g.axes["grid_x"].match == 1.0
    one = rec.assign(batch=1)
    assert (g.grid(one)["grid_x"] == np.ceil(configs.shapes(one)["NKPQ"] / 1024)).all()
    # the thread tiles are for the output's elements only: a GEMM's axes keep tiles of at most 256
    assert max(r.tile for r in geometry.fit_geometry(gemm_records(300), "bmm").axes.values()) <= 256


def test_a_data_gradients_direct_kernel_covers_the_inputs_elements():
    # cuDNN's dgrad2d_grouped_direct: one thread per element of dx, 1024 to a block (every H100
    # and H200 call); without the input's elements among the sizes its grid was T4 x ceil(C/64),
    # right on 17% of the rows
    from seer.data import configs

    rec = conv_records(300).assign(op="conv_bwd_data", batch=128)
    inp = configs.shapes(rec)["NCHW"]
    assert (inp == rec["batch"] * rec["c_in"] * rec["h_in"] * rec["w_in"]).all()
    rec["grid_x"], rec["grid_y"], rec["grid_z"] = np.ceil(inp / 1024), 1, 1
    g = geometry.fit_geometry(rec, "conv_bwd_data")
    assert g.axes["grid_x"].describe() == "ceil(NCHW/1024)" and g.axes["grid_x"].match == 1.0
    one = rec.assign(batch=1)
    assert (g.grid(one)["grid_x"] == np.ceil(configs.shapes(one)["NCHW"] / 1024)).all()


def test_winograd_transform_grid_learnt_at_batch_128_scales_with_the_batch():
    # cuDNN's Winograd data transform: a block covers 16 images and 4x4 output tiles of 4x4
    # (the H100's and H200's records, every batch); learnt at batch 128, where ceil(N/16) is 8
    from seer.data import configs

    rec = conv_records(300).assign(batch=128, pad_h=1, pad_w=1)

    def grid(df):
        s = configs.shapes(df)
        return np.ceil(s["N"] / 16) * np.ceil(s["P"] / 16) * np.ceil(s["Q"] / 16)

    rec["grid_x"], rec["grid_y"], rec["grid_z"] = grid(rec), rec["c_in"], 1
    g = geometry.fit_geometry(rec, "conv_fwd")
    rule = g.axes["grid_x"]
    assert isinstance(rule, geometry.Product) and rule.match == 1.0, rule.describe()
    assert g.batch_tile() == 16
    for n in (1, 17, 256):
        other = rec.assign(batch=n)
        assert (g.grid(other)["grid_x"] == grid(other)).all()
    back = geometry.Geometry.from_dict(g.to_dict())
    assert back.describe() == g.describe() and back.batch_tile() == 16
    # a grid without a batch factor covers one image a block
    assert geometry.fit_geometry(conv_records(200)[lambda d: d["algo"] == "GEMM"], "conv_fwd").batch_tile() == 1


def test_two_blocks_to_a_tile_of_several_sizes():
    # cuDNN's 5x5 Winograd transform, F(9x9, 5x5): 2 blocks to 16 images and 27 x 27 outputs
    # (every H100 and H200 grid); no product of ceilings alone reproduces it (batch 24: 4 blocks)
    from seer.data import configs

    rec = conv_records(300).assign(kh=5, kw=5, pad_h=2, pad_w=2)
    rec["batch"] = np.resize([1, 2, 8, 16, 24, 48, 128, 256], len(rec))

    def grid(df):
        s = configs.shapes(df)
        return 2 * np.ceil(s["N"] / 16) * np.ceil(s["P"] / 27) * np.ceil(s["Q"] / 27)

    rec["grid_x"], rec["grid_y"], rec["grid_z"] = grid(rec), rec["c_in"], 1
    g = geometry.fit_geometry(rec, "conv_fwd")
    rule = g.axes["grid_x"]
    assert isinstance(rule, geometry.Product) and rule.times == 2 and rule.match == 1.0, rule.describe()
    assert rule.describe() == "2*ceil(N/16)*ceil(P/27)*ceil(Q/27)"
    back = geometry.Geometry.from_dict(g.to_dict())
    other = rec.assign(batch=3, h_in=100, w_in=60)
    assert (back.grid(other)["grid_x"] == grid(other)).all()
    # a product of one block a tile writes no multiple, and reads back so
    assert "times" not in geometry.Product(("N",), (16,), 1.0).to_dict()
    assert geometry.AxisRule.from_dict(geometry.Product(("N",), (16,), 1.0).to_dict()).times == 1


def test_a_tile_outside_the_usual_ones_is_found_where_it_reproduces_every_row():
    # cuDNN's im2col kernel on the H100: ceil(CRS/205) blocks along y (192 matched 86% of rows)
    from seer.data import configs

    rec = conv_records(300)
    rec["grid_y"] = np.ceil(configs.shapes(rec)["CRS"] / 205)
    rule = geometry.fit_geometry(rec, "conv_fwd").axes["grid_y"]
    assert rule.describe() == "ceil(CRS/205)" and rule.match == 1.0


def test_no_product_is_searched_on_too_few_rows():
    # a handful of rows is reproduced by some product of ceilings by chance
    from seer.data import configs

    rec = conv_records(300).assign(batch=128)
    s = configs.shapes(rec)
    rec["grid_x"] = np.ceil(s["N"] / 16) * np.ceil(s["P"] / 16) * np.ceil(s["Q"] / 16)
    few = rec.drop_duplicates(["c_in", "h_in", "w_in", "c_out", "kh", "stride_h", "pad_h"]).head(7)
    assert len(few) == 7 < geometry.PRODUCT_MIN_ROWS
    rule = geometry.fit_geometry(few, "conv_fwd").axes["grid_x"]
    assert not isinstance(rule, geometry.Product)


def test_a_filter_gradients_reduction_is_split_over_the_blocks_beyond_its_output_tiles():
    """wgrad_alg0_engine on VGG-16's layer 3 (128 -> 128, 112x112, batch 128): 36 x 4 tiles of
    32 x 32 over dw (K x C*R*S), x 3200 = N x ceil(PQ/512) blocks each; a plain GEMM grid, 1."""
    from seer.models.features import reduction_split

    s = {"gm": np.array([128.0, 512.0]), "gn": np.array([1152.0, 256.0]), "gbatch": np.array([1.0, 1.0])}
    blocks = np.array([36 * 4 * 3200.0, 8 * 4.0])
    assert reduction_split(blocks, s, 32.0, 32.0).tolist() == [3200.0, 1.0]
    # the tiles counted either way round: a grid laid K-major or C-major splits nothing
    assert reduction_split(np.array([16.0 * 4]), {k: v[1:] for k, v in s.items()}, 32.0, 64.0).tolist() == [1.0]


def test_a_filter_gradients_reduction_is_split_where_its_grid_tiles_dw_though_an_axis_misses():
    """wgrad_alg0_engine<.., 6, 7, 3, 3, 5, ..> tiles dw 64 x 128 (C*R*S by K) and runs N x
    ceil(PQ/500) blocks on each tile; its y rule, ceil(K/128), misses 15% of the calls. Its blocks
    still reduce about 500 of N*P*Q positions each, not all of them. A depthwise kernel's grid,
    which tiles no C*R*S x K output, and inexact, splits nothing."""
    from seer.data import configs
    from seer.models.features import inputs, tiles_dw

    G = geometry
    alg0 = G.Geometry(
        "conv_bwd_filter",
        {
            "grid_x": G.Ceil("CRS", 64, 1.0),
            "grid_y": G.Ceil("K", 128, 0.85),
            "grid_z": G.Product(("N", "PQ"), (1, 500), 1.0),
        },
    )
    assert not alg0.exact() and tiles_dw(alg0)
    layer = conv_records(300).head(1).assign(
        op="conv_bwd_filter", algo="ALGO_0", batch=128, c_in=512, c_out=512, h_in=28, w_in=28,
        kh=3, kw=3, stride_h=1, stride_w=1, pad_h=1, pad_w=1, dil_h=1, dil_w=1, groups=1,
    )
    b = configs.ConfigBatch.of(layer, "conv_bwd_filter")
    assert b.sizes["gk"].tolist() == [128 * 784.0]
    assert inputs(b, alg0, "ALGO_0").kb.tolist() == [128 * 784 / (128 * 2)]  # 392 positions a block
    depthwise = G.Geometry(
        "conv_bwd_filter",
        {"grid_x": G.Product(("R", "S"), (3, 3), 1.0), "grid_y": G.Ceil("C", 64, 1.0), "grid_z": G.MulCeil("CRS", "RS", 4, 0.0)},
    )
    assert not tiles_dw(depthwise)
    assert inputs(b, depthwise, "ALGO_1").kb.tolist() == [128 * 784.0]


def _packed_geometry():
    """dgrad2d_alg1_1's grid learnt from synthetic records, and a 3-channel 7x7 layer."""
    rec = conv_records(300, seed=3)
    rec = rec[rec["algo"] == "GEMM"].assign(op="conv_bwd_data", algo="ALGO_1")
    rs = rec["kh"] * rec["kw"]
    rec["grid_x"] = np.ceil(rec["c_in"] / np.maximum(np.floor(64 / rs), 1))
    rec["grid_y"], rec["grid_z"] = rec["batch"], 1
    assert len(rec) >= geometry.PRODUCT_MIN_ROWS
    layer = rec.head(1).assign(batch=2, c_in=3, h_in=800, w_in=1088, c_out=64, kh=7, kw=7, stride_h=2, stride_w=2)
    return geometry.fit_geometry(rec, "conv_bwd_data"), layer


def test_a_grid_of_whole_channels_a_block_is_packed_and_its_blocks_take_the_calls_work():
    """cuDNN's backward-data ALGO_1 kernel (dgrad2d_alg1_1) gives a block the filter taps of
    floor(64 / (R*S)) input channels, one where a filter has more than 64 taps, and a block row
    per image: a 3-channel 7x7 layer runs 3 blocks an image, whatever its size."""
    from seer.data import configs
    from seer.models.features import inputs

    g, layer = _packed_geometry()
    rule = g.axes["grid_x"]
    assert isinstance(rule, geometry.Packed) and (rule.expr, rule.per, rule.div, rule.match) == ("C", "RS", 64, 1.0)
    assert geometry.Geometry.from_dict(g.to_dict()).describe() == g.describe() and g.packs()

    assert g.grid(layer)["grid_x"].tolist() == [3.0]  # the best ceiling, ceil(C*R*S / 64), says 3 too here
    # but on a 3x3 filter 7 channels share a block: 64 channels take 10 blocks, not ceil(576/64) = 9
    assert g.grid(layer.assign(c_in=64, kh=3, kw=3))["grid_x"].tolist() == [10.0]
    # its blocks tile no GEMM output: each does the call's multiply-adds over the blocks
    b = configs.ConfigBatch.of(layer, "conv_bwd_data").with_algo("ALGO_1")
    s = b.sizes
    x = inputs(b, g, "ALGO_1")
    assert np.allclose(x.kb, s["gm"] * s["gn"] * s["gk"] / 6 * 1e-6)


def test_a_packed_data_gradient_block_walks_dy_in_its_templates_pixel_tiles():
    """dgrad2d_alg1_1<float, 0, 6, 7, ...> takes dy 128 pixels at a time (<.., 6, 6, ..>: 64),
    each tile costing K output channels' multiply-adds and about a tile's worth of channels more:
    a block's work is whole tiles of its image's dy, whatever the filter's taps."""
    from seer.data import configs
    from seer.models.features import inputs, pixel_tile

    k128 = "void cudnn::detail::dgrad2d_alg1_1<float, 0, 6, 7, 5, 4, 5, false, true>(int, int, int, float const*)"
    assert pixel_tile(k128) == 128
    assert pixel_tile(k128.replace("6, 7, 5, 4, 5", "6, 6, 5, 4, 4")) == 64
    assert pixel_tile("void cudnn::detail::dgrad_engine<float, 128, 6, 8, 3, 3, 5, false>(int)") is None

    g, layer = _packed_geometry()
    rows = layer.assign(h_in=[20], w_in=[20], pad_h=0, pad_w=0)
    rows = rows.loc[rows.index.repeat(3)].assign(c_out=[64, 128, 64], kh=[7, 7, 3], kw=[7, 7, 3])
    b = configs.ConfigBatch.of(rows, "conv_bwd_data").with_algo("ALGO_1")
    pq = b.sizes["PQ"]
    assert pq.tolist() == [49.0, 49.0, 81.0]  # 7 x 7 and 9 x 9 of dy: one tile of 128 each
    kb = inputs(b, g, "ALGO_1", kernel=k128).kb
    assert np.allclose(kb, 128 * (np.array([64, 128, 64]) + 128) * 1e-6)
    # the 64-pixel tile: 9 x 9 pixels take two
    kb64 = inputs(b, g, "ALGO_1", kernel=k128.replace("6, 7, 5, 4, 5", "6, 6, 5, 4, 4")).kb
    assert np.allclose(kb64, np.array([1, 1, 2]) * 64 * (np.array([64, 128, 64]) + 64) * 1e-6)


def _factors_row_by_row(s, names, y):
    """_factors as first written: every tile judged on every row."""
    tiles = np.arange(1, geometry.PRODUCT_TILE + 1, dtype=float)
    out = []
    for e in names:
        if e == "batch" and "N" in names:
            continue
        cols = np.ceil(s[e][None, :] / tiles[:, None])
        ok = np.flatnonzero((np.mod(y[None, :], cols) == 0).all(axis=1) & (cols > 1).any(axis=1))
        _, first = np.unique(cols[ok], axis=0, return_index=True)
        out += [(e, int(tiles[i]), cols[i]) for i in ok[np.sort(first)]]
    return out


def test_factors_judged_on_distinct_sizes_are_those_of_every_row():
    rng = np.random.default_rng(3)
    n = 400
    s = {
        "K": rng.choice([16.0, 48, 64, 96, 256, 1000], n),
        "PQ": rng.choice([49.0, 196, 784, 3136], n),
        "N": rng.choice([1.0, 8, 32], n),
        "batch": rng.choice([1.0, 8, 32], n),
    }
    names = list(s)
    products = {
        "a product": np.ceil(s["K"] / 32) * np.ceil(s["PQ"] / 64) * s["N"],
        "one ceiling": np.ceil(s["PQ"] / 128),
        "no rule": rng.integers(1, 50, n).astype(float),
        "not whole": np.ceil(s["K"] / 32) + 0.5,
    }
    for what, y in products.items():
        got, want = geometry._factors(s, names, y), _factors_row_by_row(s, names, y)
        assert [(e, t) for e, t, _ in got] == [(e, t) for e, t, _ in want], what
        assert all(np.array_equal(g, w) for (_, _, g), (_, _, w) in zip(got, want)), what
    found = {(e, t) for e, t, _ in geometry._factors(s, names, products["a product"])}
    assert {("K", 32), ("PQ", 64), ("N", 1)} <= found and not any(e == "batch" for e, _ in found)
    assert geometry._factors(s, names, products["no rule"]) == []
