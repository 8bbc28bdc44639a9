"""The fast paths of ranking give what the straightforward computations give, bit for bit:
searches in a sorted order, the search that only asks whether a point lies within a radius,
sizes computed and sliced on first use, the checks of valid configs, and each variant's
design and time."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy.spatial import cKDTree

import seer
from seer.data import configs
from seer.data.configs import ConfigBatch
from seer.data.records import CONV_OPS, conv_output_hw
from seer.errors import SeerError
from seer.models import features, geometry
from seer.models.chooser import Chooser, sq_distances
from seer.models.features import Design, design, inputs
from seer.models.keys import FeatureSet
from seer.models.knn import locality_order
from seer.predict.variants import _rows_of_labels

GPUS = ("t4", "h100-sxm", "v100-pcie", "a100-40gb")


def _convs(n: int, seed: int) -> pd.DataFrame:
    """Convolutions of every kind the checks let through: kernels, strides, padding, dilation,
    groups, dtypes, some on the training grids' powers of two."""
    rng = np.random.default_rng(seed)
    k = rng.choice([1, 3, 5, 7], n)
    g = np.where(rng.random(n) < 0.1, rng.choice([2, 4], n), 1)
    dil = rng.choice([1, 1, 2], n)
    hw = rng.integers(0, 260, n) + (k - 1) * dil + 1  # an output of at least 1x1
    two = rng.random(n) < 0.3
    return pd.DataFrame(
        dict(
            op="conv_fwd",
            batch=np.where(two, 2 ** rng.integers(0, 8, n), rng.integers(1, 300, n)),
            c_in=np.where(two, 2 ** rng.integers(2, 11, n), rng.integers(1, 1500, n)) * g,
            h_in=hw,
            w_in=np.where(rng.random(n) < 0.8, hw, rng.integers(8, 260, n)),  # kw dilation 1
            c_out=np.where(two, 2 ** rng.integers(2, 11, n), rng.integers(1, 1500, n)) * g,
            kh=k,
            kw=k,
            pad_h=rng.integers(0, 3, n),
            pad_w=rng.integers(0, 3, n),
            stride_h=rng.choice([1, 1, 2], n),
            stride_w=rng.choice([1, 1, 2], n),
            dil_h=dil,
            dil_w=1,
            groups=g,
            dtype=rng.choice(["float32", "float16"], n),
        )
    )


def _checked(df: pd.DataFrame) -> pd.DataFrame:
    from seer.predict.inputs import frame

    return frame(df, {})[0]


# ------------------------------------------------------------------ nearest neighbours
def _unrolled(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Squared distances written out as scipy's k-d tree sums them: four running sums over
    the columns, then the leftover columns."""
    d = q.shape[1]
    acc = [np.zeros(len(q)) for _ in range(4)]
    j = 0
    while j + 4 <= d:
        for a in range(4):
            acc[a] = acc[a] + (q[:, j + a] - p[j + a]) * (q[:, j + a] - p[j + a])
        j += 4
    s = acc[0] + acc[1] + acc[2] + acc[3]
    for i in range(j, d):
        s = s + (q[:, i] - p[i]) * (q[:, i] - p[i])
    return s


@pytest.mark.parametrize("dims", [1, 2, 3, 4, 5, 8, 9, 12])
def test_distances_sum_as_the_tree_sums_them(dims):
    rng = np.random.default_rng(dims)
    pts = rng.uniform(0, 10, (300, dims))
    q = rng.uniform(-2, 12, (3000, dims))
    dist, idx = cKDTree(pts, leafsize=32, balanced_tree=False, compact_nodes=False).query(q)
    got = np.array([sq_distances(q[i : i + 1], pts[idx[i]])[0] for i in range(len(q))])
    np.testing.assert_array_equal(np.sqrt(got), dist)
    if dims >= 4:
        np.testing.assert_array_equal(sq_distances(q, pts[0]), _unrolled(q, pts[0]))


def _chooser(points: int, labels: int, seed: int, dims: int = 4) -> tuple[Chooser, np.ndarray]:
    """A chooser over integer log-sizes (ties happen) with two sizes constant over its points,
    and queries: random ones, its own points and points between two of them."""
    rng = np.random.default_rng(seed)
    pts = np.column_stack(
        [rng.integers(0, 9, points).astype(float) for _ in range(dims)] + [np.full(points, 1.5), np.zeros(points)]
    )
    ch = Chooser("conv_fwd", "X", [f"v{i}" for i in range(labels)], pts, rng.integers(0, labels, points))
    q = np.column_stack([rng.uniform(-2, 11, 6000) for _ in range(dims)] + [rng.choice([1.5, 0.0, 2.0], (6000, 2))])
    a, b = rng.integers(0, points, (2, 500))
    return ch, np.vstack([q, pts, (pts[a] + pts[b]) / 2])


@pytest.mark.parametrize("points,labels", [(3, 1), (8, 1), (9, 1), (200, 1), (20, 2), (700, 5)])
def test_a_search_in_sorted_order_answers_each_query_as_alone(points, labels):
    ch, q = _chooser(points, labels, seed=points)
    order = locality_order(q)
    assert order is not None and np.array_equal(np.sort(order), np.arange(len(q)))
    for k in (1, 5):
        d0, l0 = ch.nearest(q, k)
        d1, l1 = ch.nearest(q, k, order)
        np.testing.assert_array_equal(d1, d0)
        np.testing.assert_array_equal(l1, l0)


@pytest.mark.parametrize("points,labels", [(3, 1), (8, 1), (9, 1), (200, 1), (20, 2), (700, 5)])
def test_within_a_radius_is_the_nearest_distance_compared(points, labels):
    ch, q = _chooser(points, labels, seed=points + 1)
    dist, lab = ch.nearest(q)
    radii = [0.5, 1.5, float(np.median(dist))] + [float(d) for d in dist[:: len(dist) // 5]]  # some exactly met
    for radius in radii:
        for order in (None, locality_order(q)):
            np.testing.assert_array_equal(ch.within(q, radius, order), dist <= radius)
            got_lab, inside = ch.nearest_within(q, radius, 1, order)
            np.testing.assert_array_equal(got_lab, lab)
            np.testing.assert_array_equal(inside, dist <= radius)


def test_few_queries_are_not_sorted():
    assert locality_order(np.zeros((100, 3))) is None


def test_rows_of_each_label_as_unique_and_flatnonzero_give_them():
    rng = np.random.default_rng(5)
    for k, labels in ((1, 7), (1, 1), (5, 4), (1, 40000)):
        cand = rng.integers(0, labels, (5000, k))
        got = _rows_of_labels(cand, labels)
        want = [(int(lab), np.flatnonzero((cand == lab).any(axis=1))) for lab in np.unique(cand)]
        assert [g[0] for g in got] == [w[0] for w in want]
        for (_, g), (_, w) in zip(got, want):
            np.testing.assert_array_equal(g, w)


# ------------------------------------------------------------------ sizes and checks
@pytest.mark.parametrize("op", ["conv_fwd", "bmm", "linear"])
def test_batch_sizes_on_first_use_are_the_frame_functions(op):
    if op == "conv_fwd":
        df = _checked(_convs(400, seed=2))
    else:
        rng = np.random.default_rng(3)
        df = pd.DataFrame(
            dict(
                op=op,
                batch=rng.integers(1, 9, 400),
                m=rng.integers(1, 999, 400),
                n=rng.integers(1, 999, 400),
                k=rng.integers(1, 999, 400),
                dtype=rng.choice(["float32", "float16", "bfloat16"], 400),
            )
        )
    batch = ConfigBatch.of(df, op)
    want = configs.sizes(df)
    assert list(batch.sizes) == list(want)
    for name, v in want.items():
        np.testing.assert_array_equal(batch.sizes[name], v, err_msg=name)
    for name, v in configs.traffic(df).items():
        np.testing.assert_array_equal(batch.traffic[name], v, err_msg=name)
    np.testing.assert_array_equal(batch.logcfg, configs.log_config(df, op))
    one = df.assign(dtype="float16")
    np.testing.assert_array_equal(ConfigBatch.of(one, op).el, np.full(len(df), 2.0))
    rows = np.arange(1, len(df), 7)
    part = batch.take(rows)
    assert part.logcfg.shape == (len(rows), batch.logcfg.shape[1])
    np.testing.assert_array_equal(part.logcfg, batch.logcfg[rows])
    for name, v in configs.sizes(df.iloc[rows]).items():
        np.testing.assert_array_equal(part.sizes[name], v, err_msg=name)


def _slow_check(df: pd.DataFrame, op: str, monkeypatch) -> str | None:
    """What check_configs says with its fast test of valid frames turned off."""
    with monkeypatch.context() as m:
        m.setattr(configs, "_valid", lambda df, op: False)
        try:
            configs.check_configs(df, op)
        except SeerError as e:
            return str(e)
    return None


@pytest.mark.filterwarnings("ignore:divide by zero")  # the rules' own output formula at stride 0
def test_the_fast_test_of_valid_configs_keeps_every_rule(monkeypatch):
    base = _convs(300, seed=4)
    cases = [base, base.astype({c: float for c in ("batch", "c_in", "pad_h")})]
    bad = {
        "batch": [0, -1, 2.5, np.nan, np.inf],
        "pad_h": [-1, 0.5],
        "c_in": [3],  # groups 2 or 4 do not divide it
        "kh": [400],  # larger than the padded input
        "stride_w": [0],
        "dtype": ["int8", None],
    }
    for c, values in bad.items():
        for v in values:
            df = base.copy()
            if isinstance(v, float) and df[c].dtype.kind == "i":
                df[c] = df[c].astype(float)
            if c == "dtype":
                df[c] = df[c].astype(object)
            df.loc[17, c] = v
            if c == "c_in":
                df.loc[17, "groups"] = 2
            cases.append(df)
    cases.append(base.assign(groups=True))
    cases.append(base.astype({"batch": "Int64"}))
    cases.append(base.astype({"batch": object}))
    for df in cases:
        slow = _slow_check(df, "conv_fwd", monkeypatch)
        if configs._valid(df, "conv_fwd"):  # the fast test lets nothing through that a rule names
            assert slow is None, slow
        elif df is base:
            pytest.fail("plain valid configs take the slow way")
        if slow is None:
            configs.check_configs(df, "conv_fwd")
        else:
            with pytest.raises(SeerError) as e:
                configs.check_configs(df, "conv_fwd")
            assert str(e.value) == slow
    gemm = pd.DataFrame(dict(op="bmm", batch=[1, 2], m=[3, 0], n=[4, 5], k=[6, 7]))
    assert not configs._valid(gemm, "bmm")
    assert configs._valid(gemm.iloc[:1], "bmm")


# ------------------------------------------------------------------ a variant's time
def _plain_sizes(df: pd.DataFrame, op: str, algo: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The sizes a variant reads and the log-configuration, written out from the frame."""
    c = {k: df[k].to_numpy(dtype=float) for k in df if k not in ("op", "dtype", "algo")}
    s = {"one": np.ones(len(df)), "batch": c["batch"]}
    if op in configs.GEMM_OPS:
        s.update(m=c["m"], n=c["n"], k=c["k"], gm=c["m"], gn=c["n"], gk=c["k"], gbatch=c["batch"])
        cols = [c["batch"], c["m"], c["n"], c["k"]]
    else:
        P, Q = conv_output_hw(df)
        N, C, K, R, S, G = c["batch"], c["c_in"], c["c_out"], c["kh"], c["kw"], c["groups"]
        s.update(
            N=N,
            C=C,
            K=K,
            H=c["h_in"],
            W=c["w_in"],
            P=P,
            Q=Q,
            R=R,
            S=S,
            G=G,
            NPQ=N * P * Q,
            PQ=P * Q,
            NK=N * K,
            CRS=C * R * S / G,
            T4=N * np.ceil(P / 4) * np.ceil(Q / 4),
            T2=N * np.ceil(P / 2) * np.ceil(Q / 2),
            F=configs.fft_side(c["h_in"] + 2 * c["pad_h"], c["w_in"] + 2 * c["pad_w"]),
            NKPQ=N * P * Q * K,
            NCHW=N * C * c["h_in"] * c["w_in"],
            # a strided data gradient's FFT_TILING folds dy into a phase per stride step where the filter is larger
            PH=np.where(R > c["stride_h"], c["stride_h"], 1) * np.where(S > c["stride_w"], c["stride_w"], 1),
        )
        # Winograd non-fused: F(4x4, 3x3) of 36 points, F(9x9, 5x5) of 169; the filter gradient
        # multiplies K x C over the tiles
        side = np.where(R >= 5, 9.0, 4.0)
        s["WT"], s["WP"] = N * np.ceil(P / side) * np.ceil(Q / side), (side + R - 1) ** 2
        wino = (K, C, s["WT"]) if op == "conv_bwd_filter" else (s["WT"], K, C)
        view = {"WINOGRAD_NONFUSED": wino, "WINOGRAD": (N * np.ceil(P / 2) * np.ceil(Q / 2), K, C * 4.0)}
        # FFT_TILING's tile: its images, or every line of a 1-D piece (down the height for k x 1)
        pieces, down = (R == 1) | (S == 1), (S == 1) & (R > 1)
        lines, length = np.where(down, c["w_in"], c["h_in"]), np.where(down, c["h_in"], c["w_in"])
        view.update(FFT=(N, K, C), FFT_TILING=(np.where(pieces, N * lines, N), K, C))
        # the FFT's GEMM per bin, each direction's own: dX (N x C) over K, dW (K x C) over N
        view.update({"conv_bwd_data": {"FFT": (N, C, K)}, "conv_bwd_filter": {"FFT": (K, C, N)}}.get(op, {}))
        if op == "conv_bwd_data":  # FFT_TILING's tile: dX (its images or lines x C, every phase) over K
            view["FFT_TILING"] = (np.where(pieces, N * lines, N), C * s["PH"], K)
        if op == "conv_bwd_data":  # the direct algorithms: dx (N H W x C) over K R S
            view.update(dict.fromkeys(("ALGO_0", "ALGO_1"), (N * c["h_in"] * c["w_in"], C, K * R * S / G)))
        if op == "conv_bwd_filter":  # dw (K x C R S / G) over N P Q
            view.update(dict.fromkeys(("ALGO_0", "ALGO_1", "ALGO_3"), (K, s["CRS"], s["NPQ"])))
        gm, gn, gk = view.get(algo, (s["NPQ"], K, s["CRS"]))
        s["FB"] = s["F"] * (s["F"] / 2 + 1)
        s["RS"] = R * S  # a filter's taps
        # Winograd non-fused: a GEMM per point; FFT: one complex GEMM per frequency bin, FFT_TILING per tile's bin
        tile_bins = np.where(pieces, np.floor(length / 2) + 1, 32 * 17)
        gbatch = {"WINOGRAD_NONFUSED": s["WP"], "FFT": s["FB"], "FFT_TILING": tile_bins}.get(algo, np.ones(len(df)))
        s.update(gm=gm, gn=gn, gk=gk, gbatch=gbatch)
        cols = [
            N,
            C,
            K,
            c["h_in"],
            c["w_in"],
            R,
            S,
            G,
            c["stride_h"],
            c["stride_w"],
            c["pad_h"] + 1,
            c["pad_w"] + 1,
            c["dil_h"],
            c["dil_w"],
        ]
    s.update(configs.traffic(df))
    return s, np.log2(np.column_stack(cols))


def _reference_design(df: pd.DataFrame, fit, fs: FeatureSet | None = None, together=1.0, tiles=1.0) -> Design:
    """A variant's design as the features are defined, written out plainly (`together`: that
    many launches of it at once, each block's work the same; `tiles`: a tiled variant's tiles of
    the calls whose one tile `df` holds)."""
    geom, algo, fs = fit.geometry, fit.algo, fs or fit.feature_set
    s, logcfg = _plain_sizes(df, fit.op, algo)
    grid = {a: np.maximum(r(s, logcfg), 1.0) for a, r in geom.axes.items()}
    blocks = np.prod(np.stack(list(grid.values())), axis=0)
    el = np.where(df["dtype"].to_numpy(dtype=object) == "float16", 2.0, 4.0) * features.MB
    kb = s["gk"]
    if geom.op in configs.GEMM_OPS:
        split = np.maximum(np.round(grid.get("grid_z", s["gbatch"]) / s["gbatch"]), 1.0)
        kb = kb / split
        extra = np.where(split > 1, 1.0, 0.0)
        h = [el * extra * split * s["gm"] * s["gn"] * s["gbatch"], extra]
    else:
        h = [el * s["N"] * s["C"] * s["H"] * s["W"], el * s["NPQ"] * s["K"]]
        if algo == "WINOGRAD_NONFUSED":  # transformed tensors of whole tiles of images
            t = geom.batch_tile()
            pad = np.ceil(s["N"] / t) * t / s["N"]
            wp, wt = s["WP"], s["WT"]
            h += [wp * el * s["C"] * wt * pad, wp * el * s["K"] * wt * pad, wp * el * s["K"] * s["C"]]
            if "winograd" in fit.kernel.lower():  # keyed by a transform: its GEMMs' multiply-adds beside it
                h += [1e-9 * (wp * wt * s["C"] / s["G"] * s["K"]) * pad]
        elif algo == "GEMM":
            h += [el * s["NPQ"] * s["CRS"], 1e-9 * s["NKPQ"] * s["C"] / s["G"]]
        elif algo in ("FFT", "FFT_TILING"):  # the filters' spectra: K x C/G complex values a bin, a phase
            spectra = 2 * el * s["K"] * s["C"] / s["G"] * s["gbatch"] * (s["PH"] if fit.op == "conv_bwd_data" else 1)
            t = geom.batch_tile()
            # a tiled call's GEMM reads them once a row of its blocks along the batch
            h += [spectra * (np.ceil(s["N"] / t) if fit.tiled and t > 1 else 1)]
            if algo == "FFT_TILING" and fit.op == "conv_bwd_data":  # a folded call's dy and dx, read and written again
                h += [2 * (h[0] + h[1]) * (s["PH"] > 1)]
            if fit.tiled:  # and transforms them, and pays its fixed costs, once a call: a tile's share
                h += [spectra / tiles, np.ones(len(spectra)) / tiles]
        else:
            h += [el * s["K"] * s["CRS"]]
            if fit.op == "conv_fwd" and "grouped_direct" in fit.kernel:  # the direct kernel, per input channel
                h += [1e-9 * s["NKPQ"] * s["C"] / s["G"]]
    if any(isinstance(r, geometry.Packed) for r in geom.axes.values()):  # whole channels a block: no GEMM tile
        kb = s["gm"] * s["gn"] * s["gk"] / blocks * features.MB
        tile = re.search(r"dgrad2d_alg1_1<float, \d+, \d+, (\d+),", fit.kernel)
        if tile:  # dy's pixels in whole tiles of 2^(the template's 4th), each over K/G channels and a tile more
            t = 2.0 ** int(tile.group(1))
            kb = np.ceil(s["PQ"] / t) * t * (s["K"] / s["G"] + t) * features.MB
    tiled = {e for r in geom.axes.values() for e, div in r.factors if div > 1}
    col2im = fit.op == "conv_bwd_data" and {"CRS", "PQ"} <= tiled  # dx's unrolled columns, each over K
    if col2im:
        kb = s["K"] / s["G"]
    tm, tn = geom.tiles()
    tiles_dw = {e for r in geom.axes.values() for e, div in r.factors if div > 1} >= {"CRS", "K"}
    if fit.op == "conv_bwd_filter" and tm > 1 and tn > 1 and (all(r.match >= 1 for r in geom.axes.values()) or tiles_dw):
        # blocks beyond the output's tiles (either way round) split the reduction, where the
        # grid is known or tiles dw (C/G x R x S by K)
        tiles = (
            np.maximum(np.ceil(s["gm"] / tm) * np.ceil(s["gn"] / tn), np.ceil(s["gm"] / tn) * np.ceil(s["gn"] / tm))
            * s["gbatch"]
        )
        kb = kb / np.maximum(np.round(blocks / tiles), 1.0)
    read, write = s["read_bytes"] * features.MB, s["write_bytes"] * features.MB
    reads = tm + tn
    crs = [div for r in geom.axes.values() for e, div in r.factors if e == "CRS"]
    if fit.op == "conv_bwd_filter" and crs and crs[0] > 1:  # the columns' side: the channels they span
        taps = s["R"] * s["S"]
        reads = tm + tn - crs[0] + np.minimum(crs[0], np.ceil(crs[0] / taps) + (taps > 1))
    tile = el * blocks * kb * reads
    ceils = all(r.factors or isinstance(r, geometry.Const) for r in geom.axes.values())
    if fs.loops and geom.op not in configs.GEMM_OPS and ceils and not col2im:  # output tiles a block computes in turn
        covered = blocks * np.prod([div for r in geom.axes.values() for _, div in r.factors])
        loops = np.maximum(s["gm"] * s["gn"] * s["gbatch"] / covered, 1.0)
        kb, tile = kb * loops, tile * loops
    blocks, read, write, tile = blocks * together, read * together, write * together, tile * together
    h = [v * together for v in h]
    bps, sms = fit.blocks_per_sm, fit.sms
    W = np.ceil(blocks / (bps * sms))
    S = np.ceil(blocks / sms)
    if re.search(r"conv2d_grouped_direct_kernel<(\w+, ){6}0,", fit.kernel):  # its thread's channels, once a round
        h += [s["C"] / s["G"] * S]
    one = np.ones(len(W))
    under = None
    if fs.seer_terms:
        comp, mem = [W * kb, W, one], [read + write, one]
        if fs.typed:
            under = np.column_stack([read, write, W * kb, one])
    else:
        comp, mem = [W * kb, W, S * kb, S, one], [read + write, tile, W, one]
    helpers = np.column_stack(h) if fs.helpers else np.zeros((len(W), 0))
    return Design(np.column_stack(comp), np.column_stack(mem), helpers, {}, under, logcfg)


@pytest.mark.parametrize("gpu", GPUS)
def test_every_variant_predicts_what_its_design_written_out_gives(gpu):
    fits = seer.load(gpu)
    rng = np.random.default_rng(8)
    convs = _checked(_convs(3000, seed=6))
    frames = {op: (convs.assign(op=op), ConfigBatch.of(convs.assign(op=op), op)) for op in CONV_OPS}
    for op in ("bmm", "linear", "gemm"):
        df = _checked(
            pd.DataFrame(
                dict(
                    op=op,
                    batch=rng.integers(1, 64, 2000),
                    m=rng.integers(1, 4097, 2000),
                    n=rng.integers(1, 4097, 2000),
                    k=rng.integers(1, 4097, 2000),
                    dtype=rng.choice(["float32", "float16"], 2000),
                )
            )
        )
        frames[op] = (df, ConfigBatch.of(df, op))
    for key, fit in fits.variants.items():
        df, batch = frames[fit.op]
        rows = np.flatnonzero(rng.random(len(batch)) < 0.4)
        part = batch.with_algo(fit.algo).take(rows)
        want = _reference_design(df.iloc[rows].reset_index(drop=True), fit)
        x = inputs(part, fit.geometry, fit.algo, logcfg=True, kernel=fit.kernel)
        got = design(x, fit.blocks_per_sm, fit.sms, fit.feature_set)
        for kind in ("compute", "memory", "helpers"):
            np.testing.assert_array_equal(getattr(got, kind), getattr(want, kind), err_msg=f"{key} {kind}")
            assert getattr(got, kind).flags["C_CONTIGUOUS"]
        np.testing.assert_array_equal(fit.law.time(got), fit.law.time(want), err_msg=key)
        # times the correction its training rows nearby make (seer.models.local, tested there)
        near = fit.local.factor(part.logcfg) if fit.local is not None else 1.0
        if fit.key.per_group or fit.tiled or fit.binned:  # G calls of one group's convolution, of one tile's
            frame, reps, together = df.iloc[rows].reset_index(drop=True), np.ones(len(rows)), 1.0
            if fit.unfolded:  # a strided data gradient timed as the unstrided one of its dx
                frame = frame.assign(stride_h=1.0, stride_w=1.0)
            if fit.key.per_group:  # G launches, `overlap` of them at once
                g, frame = configs.groups(frame), configs.one_group(frame)
                reps = g if fit.overlap == 1 else np.ceil(g / fit.overlap)
                together = 1.0 if fit.overlap == 1 else np.minimum(g, fit.overlap)
            tiles = 1.0
            if fit.tiled:
                tiles = configs.fft_tiles(frame)
                reps, frame = reps * tiles, configs.one_tile(frame)
            if fit.binned:  # F x (F/2 + 1) launches, F the least power of two from 16 holding the padded image
                need = np.maximum(frame["h_in"] + 2 * frame["pad_h"], frame["w_in"] + 2 * frame["pad_w"])
                side = np.array([next((f for f in (16, 32, 64, 128, 256) if f >= v), 512) for v in need])
                reps = reps * side * (side // 2 + 1)
            one = _reference_design(frame, fit, together=together, tiles=tiles)
            np.testing.assert_allclose(fit.predict(part), near * reps * fit.law.time(one), rtol=1e-12, err_msg=key)
        else:
            np.testing.assert_allclose(fit.predict(part), near * fit.law.time(want), rtol=1e-12, err_msg=key)


def test_every_feature_set_designs_as_written_out():
    fits = seer.load("t4")
    df = _checked(_convs(2000, seed=12))
    rows = np.arange(3, 2000, 2)
    for fit in list(fits.variants.values())[:20]:
        if fit.op != "conv_fwd":
            continue
        x = inputs(ConfigBatch.of(df, "conv_fwd").take(rows), fit.geometry, fit.algo, logcfg=True, kernel=fit.kernel)
        for fs in FeatureSet.candidates(helpers=True, types=True, loops=True):
            got = design(x, fit.blocks_per_sm, fit.sms, fs)
            want = _reference_design(df.iloc[rows].reset_index(drop=True), fit, fs)
            for kind in ("compute", "memory", "helpers", "under"):
                np.testing.assert_array_equal(getattr(got, kind), getattr(want, kind), err_msg=f"{fs} {kind}")
            assert got.names["helpers"] == (
                features.helper_names("conv_fwd", fit.algo, fit.kernel) if fs.helpers else []
            )
        part = x.take(np.arange(0, len(rows), 3))
        np.testing.assert_array_equal(part.tile_mb, x.tile_mb[::3])
        assert list(part.helpers) == list(x.helpers)


@pytest.mark.parametrize("gpu", ["t4", "h100-sxm"])
def test_ranking_equals_each_algorithm_predicted_alone(gpu):
    fits = seer.load(gpu)
    df = _convs(6000, seed=9).assign(dtype="float32")  # the bundled fits learnt float32 only
    df = df[df["groups"] == 1].reset_index(drop=True)  # the bundled fits have no model of grouped ones
    ranked = fits.rank_algorithms(df)
    for algo, g in ranked.groupby("algo"):
        ran = g["time_ms"].notna().to_numpy()  # NaN: a filter shape the algorithm never ran (Support)
        alone = fits.predict(df[ran].assign(algo=algo))
        np.testing.assert_array_equal(g["time_ms"].to_numpy()[ran], alone, err_msg=algo)
        vp = fits.variant_predictor
        keys = vp.choose(_checked(df[ran].assign(algo=algo)), "conv_fwd")
        np.testing.assert_array_equal(g["variant"].to_numpy()[ran].astype(str), keys.astype(str), err_msg=algo)
        if not ran.all():
            with pytest.raises(SeerError, match="does not run a"):
                fits.predict(df[~ran].head(1).assign(algo=algo))
