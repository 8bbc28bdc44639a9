import numpy as np
import pandas as pd

from seer.models import chooser, knn
from seer.models.candidates import Rule


def _gemm(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "op": "bmm",
            "batch": rng.integers(1, 64, n),
            "m": rng.integers(16, 4096, n),
            "n": rng.integers(16, 4096, n),
            "k": rng.integers(16, 4096, n),
        }
    )


def test_chooser_learns_regions_and_round_trips():
    tr = _gemm(2000)
    keys = pd.Series(np.where(tr["m"] * tr["n"] < 2**20, "small", "large"))
    ch = chooser.fit_chooser(tr, "bmm", "", keys)
    assert len(ch.points) == len(tr) and ch.voters is not None and ch.voters < len(tr) / 2  # condensed voters
    test = _gemm(500, seed=1)
    truth = np.where(test["m"] * test["n"] < 2**20, "small", "large")
    got = (ch.choose(test) == truth).mean()
    assert got > 0.9
    full = chooser.Chooser(
        "bmm",
        "",
        ch.labels,
        np.log2(tr[["batch", "m", "n", "k"]].to_numpy(float)),
        keys.map({k: i for i, k in enumerate(ch.labels)}).to_numpy(),
    )
    assert got >= (full.choose(test) == truth).mean() - 0.02  # condensing loses next to nothing
    back = chooser.Chooser.from_dict(ch.to_dict())
    assert back.voters == ch.voters and (back.choose(test) == ch.choose(test)).all()
    old = ch.to_dict()
    old["points"] = knn.encode(ch.points[: ch.voters])  # a file of before voters: its points were the voters
    old["label_idx"] = ch.label_idx[: ch.voters].tolist()
    del old["voters"]
    before = chooser.Chooser.from_dict(old)
    assert before.voters is None and (before.choose(test) == ch.choose(test)).all()


def test_single_label_and_distance():
    tr = _gemm(100)
    ch = chooser.fit_chooser(tr, "bmm", "", pd.Series(["only"] * len(tr)))
    assert set(ch.choose(_gemm(10, 2))) == {"only"}
    far = pd.DataFrame({"op": ["bmm"], "batch": [10**6], "m": [1], "n": [1], "k": [1]})
    from seer.data import configs

    d, _ = ch.nearest(configs.log_config(far, "bmm"))
    assert d[0] > 5


def test_condense_keeps_boundaries():
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 10, (3000, 2))
    lab = (pts[:, 0] > 5).astype(int)
    keep = knn.condense(pts, lab)
    near = np.abs(pts[:, 0] - 5) < 0.1
    assert np.isin(np.flatnonzero(near), keep).mean() > 0.9
    assert len(keep) < len(pts) / 3
    assert np.allclose(knn.decode(knn.encode(pts[:5])), pts[:5].astype(np.float32))


def _convs(n, seed=0, groups=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "op": "conv_fwd",
            "batch": 128,
            "c_in": rng.choice([3, 16, 64, 128, 512, 1024], n),
            "h_in": rng.choice([10, 40, 80, 160], n),
            "w_in": 0,
            "c_out": rng.choice([3, 16, 64, 128, 512, 1024], n),
            "kh": rng.choice([1, 3, 5], n),
            "kw": 0,
            "stride_h": 1,
            "stride_w": 1,
            "pad_h": 0,
            "pad_w": 0,
            "dil_h": 1,
            "dil_w": 1,
            "groups": groups,
        }
    ).assign(w_in=lambda d: d["h_in"], kw=lambda d: d["kh"])


_TREES_1 = dict.fromkeys((False, True), Rule(True, 1))  # a tree of leaves of one row for each kind


def _explicit_from_128(df):
    return np.where(df["c_out"] >= 128, "explicit", "direct").astype(object)


def test_a_tree_chooser_answers_within_the_data_and_the_nearest_beyond():
    from seer.data import configs

    tr = _convs(600)
    ch = chooser.fit_chooser(tr, "conv_fwd", "GEMM", pd.Series(_explicit_from_128(tr)), candidates=1, trees=_TREES_1)
    assert set(ch.trees) == {False}
    q = _convs(300, seed=1)
    assert (ch.choose(q) == _explicit_from_128(q)).all()
    cand, inside = ch.propose(configs.log_config(q, "conv_fwd"), radius=1.5)
    assert inside.mean() > 0.5  # (the random draws left some grid points out)
    assert (np.asarray(ch.labels, dtype=object)[cand[inside, 0]] == _explicit_from_128(q)[inside]).all()
    # batch 1: seven doublings from every training config; there the nearest config's variant
    # answers, and the tree's leaf label competes with it
    far = q.assign(batch=1)
    lfar = configs.log_config(far, "conv_fwd")
    cand, inside = ch.propose(lfar, radius=1.5)
    near = ch.nearest(lfar)[1]
    assert not inside.any() and (cand[:, :1] == near).all()
    assert (cand[:, 1] == ch.tree_candidates(lfar)[:, 0]).all()
    assert (cand[:, 0] != cand[:, 1]).any()  # (the leaf names what the nearest does not, somewhere)
    back = chooser.Chooser.from_dict(ch.to_dict())
    assert back.trees[False].min_leaf == 1 and (back.choose(q) == ch.choose(q)).all()
    assert "classification tree" in back.rule and "nearest" in back.rule
    plain = chooser.fit_chooser(tr, "conv_fwd", "GEMM", pd.Series(_explicit_from_128(tr))).rule
    assert "classification tree" not in plain and "beyond the trust distance, with a tree's leaf" in plain


def test_each_kind_has_its_tree_and_never_answers_the_other_kinds_variant():
    from seer.data import configs

    flat, grouped = _convs(300), _convs(300, seed=2, groups=2)
    tr = pd.concat([flat, grouped], ignore_index=True)
    keys = np.where(tr["groups"] > 1, "grouped_direct", _explicit_from_128(tr)).astype(object)
    ch = chooser.fit_chooser(tr, "conv_fwd", "GEMM", pd.Series(keys), candidates=1, trees=_TREES_1)
    assert set(ch.trees) == {False, True}
    q = pd.concat([_convs(100, seed=3), _convs(100, seed=4, groups=2)], ignore_index=True)
    got = ch.choose(q)
    assert (got[q["groups"].to_numpy() > 1] == "grouped_direct").all()
    assert "grouped_direct" not in set(got[q["groups"].to_numpy() == 1])
    sub = ch.of_kind(True)
    assert set(sub.trees) == {True}
    cand, _ = sub.propose(configs.log_config(q[q["groups"] > 1], "conv_fwd"), radius=1.5)
    assert {sub.labels[i] for i in cand.ravel()} == {"grouped_direct"}


def test_a_kind_without_a_tree_keeps_the_nearest_rule():
    # the grouped rows won their tree, the ungrouped did not (seer.models.candidates.tree_rules):
    # an ungrouped row inside the data gets the k nearest's variants, not a tree's
    from seer.data import configs

    flat, grouped = _convs(300), _convs(300, seed=2, groups=2)
    tr = pd.concat([flat, grouped], ignore_index=True)
    keys = np.where(tr["groups"] > 1, "grouped_direct", _explicit_from_128(tr)).astype(object)
    ch = chooser.fit_chooser(tr, "conv_fwd", "GEMM", pd.Series(keys), candidates=3, trees={True: Rule(True, 1)})
    assert set(ch.trees) == {True}
    q = _convs(100, seed=3)
    lq = configs.log_config(q, "conv_fwd")
    cand, inside = ch.propose(lq, radius=1.5)
    assert inside.any()
    assert (cand[:, :3] == ch.nearest(lq, k=3)[1]).all()
    assert "tree for grouped convolutions" in ch.rule and "for ungrouped ones the fastest of the 3" in ch.rule
    assert not ch.of_kind(False).trees and set(ch.of_kind(True).trees) == {True}


def test_every_training_config_measures_the_trust_distance_and_voters_propose_its_variants():
    # condensing keeps a variant's boundary points and every 10th other: a config amid one
    # variant's rows is near training data though far from any kept point, and must be judged
    # inside (the H100's FFT chooser gave such a row a far boundary's variant, 16x too slow)
    from seer.data import configs
    from seer.models.support import shape_keys

    tr = _convs(600)
    tr.loc[tr.index[:3], ["dil_h", "dil_w"]] = 2  # a rare shape, deep inside one variant's region
    keys = pd.Series(_explicit_from_128(tr))
    ch = chooser.fit_chooser(tr, "conv_fwd", "GEMM", keys, candidates=3)
    pts = chooser.points_of(tr, "conv_fwd")
    assert set(shape_keys(ch.points)) == set(shape_keys(pts))  # Support reads them off the points
    assert ch.voters is not None and ch.voters < len(tr) / 2
    dropped = ch.points[ch.voters :]
    dist, lab = ch.nearest(dropped, k=3)
    assert (dist < 1e-6).all()  # every training config is its own nearest
    voters_only = chooser.Chooser("conv_fwd", "GEMM", ch.labels, ch.points[: ch.voters], ch.label_idx[: ch.voters], 3)
    assert (voters_only.nearest(dropped)[0] > 0.5).any()  # the distance as the voters alone gave it
    # the voters' variants: those of the nearest kept configs, as before
    assert (lab == voters_only.nearest(dropped, k=3)[1]).all()
    q = _convs(200, seed=5)
    got = ch.choose(q)
    assert (got == _explicit_from_128(q)).mean() > 0.9
    grouped = pd.concat([tr, _convs(300, seed=2, groups=2)], ignore_index=True)
    gkeys = pd.Series(np.where(grouped["groups"] > 1, "grouped_direct", _explicit_from_128(grouped)).astype(object))
    gch = chooser.fit_chooser(grouped, "conv_fwd", "GEMM", gkeys, candidates=3)
    flat = gch.of_kind(False)  # a kind's chooser keeps its own points' voters, renumbered
    assert len(flat.points) == len(tr) and flat.voters is not None
    assert {flat.labels[i] for i in flat.label_idx[: flat.voters]} <= {"explicit", "direct"}
    lq = configs.log_config(q, "conv_fwd")
    gv = np.flatnonzero(~chooser.kind_of(gch.points[: gch.voters], "conv_fwd"))
    d = ((lq[:, None, :] - gch.points[gv][None, :, :]) ** 2).sum(axis=2)
    nearest_voter = gch.label_idx[gv][d.argmin(axis=1)]
    assert (flat.nearest(lq)[1][:, 0] == nearest_voter).mean() > 0.95  # (ties may order otherwise)


def test_a_leaf_of_two_variants_lets_both_compete_within_the_data():
    from seer.data import configs

    tr = _convs(600)
    keys = _explicit_from_128(tr)
    odd = (tr["c_out"] == 64) & (tr["kh"] == 1)  # the library's choice turns on something the sizes do not show
    keys[odd.to_numpy() & (np.arange(len(tr)) % 2 == 0)] = "explicit"
    leaves_8 = dict.fromkeys((False, True), Rule(True, 8))
    ch = chooser.fit_chooser(tr, "conv_fwd", "GEMM", pd.Series(keys), candidates=1, trees=leaves_8)
    q = _convs(300, seed=1)
    q = q[(q["c_out"] == 64) & (q["kh"] == 1)]
    cand, inside = ch.propose(configs.log_config(q, "conv_fwd"), radius=1.5)
    assert inside.any()
    assert all({ch.labels[i] for i in row} == {"direct", "explicit"} for row in cand[inside])
    clean = q.assign(c_out=1024)  # a leaf of explicit rows only
    cand, inside = ch.propose(configs.log_config(clean, "conv_fwd"), radius=1.5)
    assert inside.any() and {ch.labels[i] for i in cand[inside].ravel()} == {"explicit"}


def test_a_kind_without_voters_lets_its_own_points_vote():
    from seer.data import configs

    flat, grouped = _convs(400), _convs(20, seed=2, groups=2)
    tr = pd.concat([flat, grouped], ignore_index=True)
    keys = np.where(tr["groups"] > 1, "grouped_direct", _explicit_from_128(tr)).astype(object)
    ch = chooser.fit_chooser(tr, "conv_fwd", "GEMM", pd.Series(keys), candidates=3)
    kinds = chooser.kind_of(ch.points, "conv_fwd")
    order = np.argsort(kinds, kind="stable")
    pts, lab = ch.points[order], ch.label_idx[order]
    voters = int((~kinds).sum())  # every grouped point after the voters
    moved = chooser.Chooser("conv_fwd", "GEMM", ch.labels, pts, lab, 3, {}, voters)
    sub = moved.of_kind(True)
    assert sub.voters is None and len(sub.points) == 20
    q = configs.log_config(_convs(30, seed=4, groups=2), "conv_fwd")
    assert {sub.labels[i] for i in sub.nearest(q, k=3)[1].ravel()} == {"grouped_direct"}


def test_a_filter_shape_that_decides_the_variant_gets_it_however_far_the_config():
    # cuDNN's Winograd non-fused runs F(4x4, 3x3) on 3x3 filters and F(9x9, 5x5) on 5x5: in the
    # training rows the filter shape alone decides the variant, and a 3x3 layer far from every
    # training config (batch 2: six doublings away) whose nearest configs are 5x5 ones is still
    # given the 3x3 transform. Where one shape ran two variants, the shape decides nothing.
    from seer.data import configs

    tr = _convs(400)
    tr = tr[tr["kh"] > 1].reset_index(drop=True)
    keys = pd.Series(np.where(tr["kh"] == 3, "wn_4x4", "wn_9x9"))
    q = tr[tr["kh"] == 3].head(50).assign(batch=2)
    lq = configs.log_config(q, "conv_fwd")
    for rule in ({}, _TREES_1):
        ch = chooser.fit_chooser(tr, "conv_fwd", "WINOGRAD_NONFUSED", keys, candidates=5, trees=rule)
        assert len(ch.filter_variants()) == 2
        cand, inside = ch.propose(lq, radius=1.5)
        assert not inside.any()
        assert {ch.labels[i] for i in ch.nearest(lq, k=5)[1].ravel()} == {"wn_4x4", "wn_9x9"}  # the nearest mix both
        assert {ch.labels[i] for i in cand.ravel()} == {"wn_4x4"}
        assert (ch.choose(q) == "wn_4x4").all()
        assert "; a filter shape that ran one variant, that variant" in ch.rule
    both = pd.concat([tr, tr[tr["kh"] == 5].head(5)], ignore_index=True)  # 5x5 ran both variants
    ch = chooser.fit_chooser(both, "conv_fwd", "WINOGRAD_NONFUSED", pd.concat([keys, pd.Series(["wn_4x4"] * 5)]))
    assert ch.filter_variants() == {} and "a filter shape that ran one variant" not in ch.rule
    assert (ch.propose(lq, radius=1.5)[0] == ch.nearest(lq, k=ch.k)[1]).all()


def _grouped(channels, groups, n_each=1):
    """Grouped convolutions of 14 x 14 3x3 layers at batch 64, c_in = c_out, one row per
    (channels, groups) pair (repeated n_each times)."""
    pairs = [(c, g) for c, g in zip(channels, groups, strict=True) for _ in range(n_each)]
    return pd.DataFrame(
        {
            "op": "conv_fwd",
            "batch": 64,
            "c_in": [c for c, _ in pairs],
            "h_in": 14,
            "w_in": 14,
            "c_out": [c for c, _ in pairs],
            "kh": 3,
            "kw": 3,
            "stride_h": 1,
            "stride_w": 1,
            "pad_h": 1,
            "pad_w": 1,
            "dil_h": 1,
            "dil_w": 1,
            "groups": [g for _, g in pairs],
        }
    )


def test_per_group_channels_find_a_depthwise_layer_its_depthwise_neighbours():
    # cuDNN runs a depthwise kernel where each group has one channel and loops over the groups
    # where each has many. By C, K and G a depthwise layer of 96 channels lies nearer a 16-group
    # layer of 128 channels (8 per group) than a depthwise one of 512; by channels per group the
    # depthwise ones are nearest. Ungrouped rows are the same points either way.
    train = pd.concat([_grouped([512, 1024], [512, 1024], 3), _grouped([128], [16], 3), _convs(60)], ignore_index=True)
    keys = pd.Series(
        np.select([train["groups"] == train["c_in"], train["groups"] > 1], ["depthwise", "looped"], "flat")
    )
    q = _grouped([80, 96], [80, 96])
    flat_q = _convs(40, seed=5)
    raw = chooser.fit_chooser(train, "conv_fwd", "IMPLICIT_GEMM", keys, candidates=1)
    pg = chooser.fit_chooser(train, "conv_fwd", "IMPLICIT_GEMM", keys, candidates=1, per_group=True)
    assert (raw.choose(q) == "looped").all()
    assert (pg.choose(q) == "depthwise").all()
    assert (pg.choose(flat_q) == raw.choose(flat_q)).all()
    from seer.data import configs

    lq = configs.log_config(q, "conv_fwd")
    cand, _ = pg.of_kind(True).propose(lq, radius=1.5)
    assert {pg.labels[i] for i in cand.ravel()} == {"depthwise"}
    # the trust distance stays the sizes' own: only which neighbours propose changes
    for sub_pg, sub_raw in ((pg, raw), (pg.of_kind(True), raw.of_kind(True))):
        assert np.array_equal(sub_pg.nearest(lq)[0], sub_raw.nearest(lq)[0])
        for radius in (1.0, 2.0, 3.0):
            assert np.array_equal(sub_pg.within(lq, radius), sub_raw.within(lq, radius))
    back = chooser.Chooser.from_dict(pg.to_dict())
    assert back.per_group and (back.choose(q) == "depthwise").all()
    assert "per group" in pg.rule and "per group" not in raw.rule
    assert "per_group" not in raw.to_dict()


def test_a_variant_is_not_proposed_for_a_shape_its_algorithm_ran_often_without_it():
    # cuDNN's filter-gradient depthwise kernel runs one channel a group, 3x3 and 5x5 filters; a
    # 7x7 depthwise layer and layers of 2 channels a group run other kernels. A 7x7 depthwise
    # query on 56 x 56 lies nearest the 5x5 depthwise training layers there (the 7x7 ones ran on
    # 14 x 14), yet is not given their kernel; a layer of 2 channels a group is never given it.
    # A rare variant is not ruled out by the few configurations it missed, a shape no training
    # configuration had (9x9) rules nothing out, and rows of shapes the kernel ran keep the
    # nearest's variant.
    from seer.data import configs
    from seer.models.variant_support import VariantSupport

    def grouped(channels, per_group, k, h, n_each):
        return _grouped([c for c in channels], [c // per_group for c in channels], n_each).assign(
            kh=k, kw=k, h_in=h, w_in=h, pad_h=k // 2, pad_w=k // 2
        )

    sizes = [32, 64, 128, 256, 512, 1024]
    dw = pd.concat([grouped(sizes, 1, k, h, 2) for k in (3, 5) for h in (14, 56)], ignore_index=True)
    direct = grouped(sizes, 1, 7, 14, 3)
    looped = pd.concat([grouped(sizes[1:], 2, 3, h, 2) for h in (14, 56)], ignore_index=True)
    rare = grouped([48], 1, 3, 14, 2)
    train = pd.concat([dw, direct, looped, rare], ignore_index=True)
    keys = pd.Series(["dw"] * len(dw) + ["direct"] * len(direct) + ["looped"] * len(looped) + ["rare"] * len(rare))
    ch = chooser.fit_chooser(train, "conv_fwd", "ALGO_1", keys, candidates=1)
    lab = {name: ch.labels.index(name) for name in ("dw", "direct", "looped", "rare")}

    seven = grouped([96, 192], 1, 7, 56, 1)
    two_a_group = grouped([96, 192], 2, 5, 56, 1)
    three = grouped([96, 192], 1, 3, 56, 1)
    nine = grouped([96, 192], 1, 9, 56, 1)
    q = pd.concat([seven, two_a_group, three, nine], ignore_index=True)
    lq = configs.log_config(q, "conv_fwd")
    nearest = ch.nearest(lq)[1][:, 0]
    assert (nearest[:2] == lab["dw"]).all()  # the nearest rule alone gives the 7x7 layers the depthwise kernel

    support = VariantSupport.of(ch.points, ch.label_idx, chooser.kind_of(ch.points, "conv_fwd"), len(ch.labels))
    ruled = support.ruled_out(lq, chooser.kind_of(lq, "conv_fwd"))
    assert ruled[:4, lab["dw"]].all() and not ruled[4:, lab["dw"]].any()
    assert not ruled[:, lab["rare"]].any()  # 2 of 88 configurations: its absence from 18 is chance
    cand, _ = ch.propose(lq, radius=1.5)
    assert (cand[:2] == lab["direct"]).all()  # the 5 nearest it allows all ran the direct kernel
    assert not (cand[2:4] == lab["dw"]).any()
    assert (cand[4:6] == nearest[4:6, None]).all()
    assert (cand[6:, 0] == nearest[6:]).all()  # (the 9x9 layers, beyond the data, hear the reach tree too)
    assert (ch.choose(q)[:2] == "direct").all() and not (ch.choose(q)[2:4] == "dw").any()
    ungrouped = _convs(20, seed=3)  # no grouped variant is ruled in or out for them
    assert (
        ch.propose(configs.log_config(ungrouped, "conv_fwd"), radius=1.5)[0][:, 0]
        == ch.nearest(configs.log_config(ungrouped, "conv_fwd"))[1][:, 0]
    ).all()


def test_a_kernel_run_only_unpadded_is_not_proposed_for_a_padded_layer():
    # cuDNN's forward IMPLICIT_PRECOMP_GEMM ran its direct kernel only on unpadded 7x7 stride-2
    # layers (44 of the H100's 3,190 ungrouped training calls, none of the 648 padded): a padded
    # 7x7 stride-2 layer nearest them is not given it, an unpadded one still is.
    from seer.data import configs
    from seer.models.variant_support import VariantSupport

    direct = _convs(12, seed=5).assign(kh=7, kw=7, stride_h=2, stride_w=2)
    plain = _convs(300, seed=6)
    padded = pd.concat(  # the other kernel runs padded layers, 7x7 stride-2 ones among them (at batch 4)
        [_convs(500, seed=7), _convs(100, seed=8).assign(batch=4, kh=7, kw=7, stride_h=2, stride_w=2)]
    ).assign(pad_h=1, pad_w=1)
    train = pd.concat([direct, plain, padded], ignore_index=True)
    keys = pd.Series(["direct"] * len(direct) + ["xmma"] * (len(plain) + len(padded)))
    ch = chooser.fit_chooser(train, "conv_fwd", "IMPLICIT_PRECOMP_GEMM", keys, candidates=1)
    lab = {name: ch.labels.index(name) for name in ("direct", "xmma")}

    q = pd.concat([direct.head(3).assign(pad_h=1, pad_w=1), direct.head(3)], ignore_index=True)
    lq = configs.log_config(q, "conv_fwd")
    assert (ch.nearest(lq)[1][:, 0] == lab["direct"]).all()  # the nearest rule alone gives all six the direct kernel
    support = VariantSupport.of(ch.points, ch.label_idx, chooser.kind_of(ch.points, "conv_fwd"), len(ch.labels))
    ruled = support.ruled_out(lq, chooser.kind_of(lq, "conv_fwd"))
    assert ruled[:3, lab["direct"]].all() and not ruled[3:, lab["direct"]].any()
    assert list(ch.choose(q)) == ["xmma"] * 3 + ["direct"] * 3
    fewer = pd.concat([direct, plain, padded.tail(200)], ignore_index=True)  # (1 - 12/512)^200 = 0.9%: chance
    few = chooser.fit_chooser(fewer, "conv_fwd", "IMPLICIT_PRECOMP_GEMM", keys.head(len(fewer)), candidates=1)
    assert list(few.choose(q)) == ["direct"] * 6


def test_a_leaf_that_answers_the_direct_kernel_lets_the_nearest_configurations_variants_compete():
    from seer.data import configs

    tr = _convs(600)
    keys = np.where(_explicit_from_128(tr) == "direct", "grouped_direct_010000_0_0", "explicit_sgemm")
    ch = chooser.fit_chooser(tr, "conv_fwd", "GEMM", pd.Series(keys), candidates=3, trees=_TREES_1)
    labels = np.asarray(ch.labels)
    q = configs.log_config(_convs(300, seed=1), "conv_fwd")
    cand, inside = ch.propose(q, radius=1.5)
    leaf = ch.tree_candidates(q)[:, 0]
    direct = inside & (labels[leaf] == "grouped_direct_010000_0_0")
    near = ch.nearest(q, 3)[1]
    mixed = direct & (labels[near] == "explicit_sgemm").any(axis=1)
    assert mixed.any() and direct.sum() > mixed.sum()  # (some direct leaves amid explicit neighbours)
    # the leaf's answer first, then the nearest's variants: the fastest predicted is taken
    assert (cand[direct, 0] == leaf[direct]).all()
    assert all(set(near[i]) <= set(cand[i]) for i in np.flatnonzero(direct))
    assert (labels[cand[mixed]] == "explicit_sgemm").any(axis=1).all()
    # a leaf of the other kernel answers alone, as before
    other = inside & ~direct
    assert other.any() and (labels[cand[other]] == "explicit_sgemm").all()


def test_beyond_the_trust_distance_a_kind_whose_tree_was_not_kept_gets_its_reach_trees_leaf():
    # the H100's backward-filter ALGO_3 kept no grouped tree (the nearest rule won within the
    # data), and a 64-group 1x1 layer took its nearest's per-group loop (3x3 layers) where the
    # direct kernel ran; a tree grown for reach alone proposes its leaf's variant beyond the
    # trust distance, never within it
    from seer.data import configs

    flat, grouped = _convs(300), _convs(300, seed=2, groups=2)
    tr = pd.concat([flat, grouped], ignore_index=True)
    keys = np.where(tr["groups"] > 1, np.where(tr["c_out"] >= 128, "grouped_direct", "looped"), _explicit_from_128(tr))
    ch = chooser.fit_chooser(
        tr, "conv_fwd", "GEMM", pd.Series(keys.astype(object)), candidates=1, trees={False: Rule(True, 1)}
    )
    assert set(ch.trees) == {False} and set(ch.reach) == {True}  # a kind with a kept tree needs none
    assert ch.reach[True].min_leaf == chooser.REACH_LEAF
    sub = ch.of_kind(True)
    assert set(sub.reach) == {True} and not sub.trees and not ch.of_kind(False).reach
    q = _convs(300, seed=4, groups=2)
    near_q = configs.log_config(q, "conv_fwd")
    cand, inside = sub.propose(near_q, radius=1.5)
    assert inside.any() and (cand[inside] == cand[inside, :1]).all()  # within the data: the nearest's alone
    far_q = configs.log_config(q.assign(batch=1), "conv_fwd")
    cand, inside = sub.propose(far_q, radius=1.5)
    assert not inside.any() and (cand[:, 0] == sub.nearest(far_q)[1][:, 0]).all()
    leaf = ch.reach[True].candidates(far_q)[:, 0]
    assert (cand[:, -1] == leaf).all() and (cand[:, 0] != leaf).any()
    # without `inside_too` the reach still needs the trust distance: the same candidates
    assert np.array_equal(sub.propose(far_q, radius=1.5, inside_too=False)[0], cand)
    back = chooser.Chooser.from_dict(ch.to_dict())
    assert set(back.reach) == {True} and np.array_equal(back.of_kind(True).propose(far_q, radius=1.5)[0], cand)
    assert "beyond the trust distance, with a tree's leaf of >= 8 rows for grouped convolutions" in ch.rule
    gemm = _gemm(300)
    small = pd.Series(np.where(gemm["m"] * gemm["n"] < 2**20, "small", "large"))
    assert not chooser.fit_chooser(gemm, "bmm", "", small).reach  # a GEMM has no kinds of row: no reach
