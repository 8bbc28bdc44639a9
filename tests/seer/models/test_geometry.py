import numpy as np
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
