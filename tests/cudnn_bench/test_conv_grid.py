"""The conv_grid suite (cudnn_bench.conv_grid): a training grid of valid configurations over
batch, padding, dilation and groups, never a Test-set-II configuration, the same on every run,
its core planned before its tail, and any prefix of its plan a spread; the one-shot call's grid
step measures it right after the redo, before the rest of the SEER grid."""
from __future__ import annotations

import collections

import pytest
from fakes import fake_env

from cudnn_bench import collect as K
from cudnn_bench import conv_grid as G
from cudnn_bench import suites as S
from cudnn_bench.cost import CostModel
from cudnn_bench.families import family_layers
from cudnn_bench.plan import Budget, Shard, make_plan
from seer.hardware import gpus

COST = CostModel.for_gpu(gpus.lookup("h100-sxm"))


def kind(c) -> str:
    return "dense" if c.groups == 1 else "depthwise" if c.groups == c.c_in == c.c_out else "grouped"


@pytest.fixture(scope="module")
def grid():
    return S.conv_grid()


@pytest.fixture(scope="module")
def plan():
    return make_plan(["conv_grid"], ["fma"], Budget(), COST)


def test_every_configuration_is_valid_and_the_axes_are_covered(grid):
    assert all(c.valid and min(c.out_hw) >= 1 for c in grid)
    assert all(c.c_in % c.groups == 0 and c.c_out % c.groups == 0 for c in grid)
    assert len({c.key() for c in grid}) == len(grid)
    assert {c.batch for c in grid} >= set(G.BATCHES)  # 1 to 256, and between
    assert min(c.batch for c in grid) == 1 and max(c.batch for c in grid) == 256
    assert {kind(c) for c in grid} == {"dense", "grouped", "depthwise"}
    assert any(c.groups == 32 and c.c_in // 32 in (4, 8) for c in grid)  # ResNeXt's
    assert {c.kh for c in grid} >= {1, 3, 5, 7} and {c.stride_h for c in grid} >= {1, 2}
    assert {(c.kh, c.kw) for c in grid} >= {(1, 3), (3, 1), (1, 7), (7, 1)}
    assert {c.dil_h for c in grid} >= {1, 2, 4}
    same = [c for c in grid if c.kh > 1 and c.pad_h == c.dil_h * (c.kh - 1) // 2]
    zero = [c for c in grid if c.kh > 1 and c.pad_h == 0]
    assert len(same) > 1000 and len(zero) > 100
    assert min(c.h_in for c in grid) <= 7 and max(c.h_in for c in grid) >= 800 and any(c.w_in > c.h_in for c in grid)
    assert min(c.c_in for c in grid) == 3 and max(c.c_in for c in grid) >= 2048


def test_no_test_set_ii_configuration_is_in_it(grid):
    held_out = {c.key() for c in S.test_set_ii()}
    assert not held_out & {c.key() for c in grid}
    # exact matches are excluded, near ones kept: ResNet-50's layers at other batch sizes
    assert any(c.name.startswith("resnet50.") and c.batch not in S.TEST_SET_II_BATCHES for c in grid)
    d = G.design()  # without the exclusion the families do produce some of them
    assert held_out & set(d.tiers)


def test_the_same_configurations_in_the_same_order_every_time(grid):
    again = G.design(exclude={c.key() for c in S.test_set_ii()})
    assert [c.key() for c in again.configs] == [c.key() for c in grid]
    assert [c.name for c in again.configs] == [c.name for c in grid]
    a = make_plan(["conv_grid"], ["fma"], Budget(seconds=300), COST)
    b = make_plan(["conv_grid"], ["fma"], Budget(seconds=300), COST)
    assert [(i.key, i.est_s) for i in a.items] == [(i.key, i.est_s) for i in b.items]


def test_the_core_is_planned_first_and_holds_every_real_layer_once(plan):
    tiers = [S.conv_grid_tier(i.config) for i in plan.items]
    first_tail = tiers.index(1)
    assert set(tiers[:first_tail]) == {0} and set(tiers[first_tail:]) == {1}
    d = S.conv_grid_design()
    core = [c for c in d.configs if d.tiers[c.key()] == 0]
    assert 1500 <= len(core) <= 3000
    assert sum(d.parts[c.key()] == "sobol" for c in core) == G.SOBOL_CORE
    layers = [c for c in core if d.parts[c.key()] == "layers"]
    shapes = {(c.c_in, c.h_in, c.w_in, c.c_out, c.kh, c.kw, c.stride_h, c.pad_h, c.pad_w, c.dil_h, c.groups)
              for c in layers}
    assert len(shapes) == len(layers)  # one batch size per distinct real layer
    assert len(shapes) == len({ly.shape() for _, _, ly in family_layers()})


def test_a_tenth_of_the_plan_spreads_over_batch_groups_filters_and_padding(plan):
    first = [i.config for i in plan.items[: len(plan.items) // 10]]
    assert len({c.batch for c in first}) >= 14 and {1, 256} <= {c.batch for c in first}
    kinds = collections.Counter(kind(c) for c in first)
    assert set(kinds) == {"dense", "grouped", "depthwise"} and min(kinds.values()) >= 0.05 * len(first)
    assert {c.kh for c in first} >= {1, 3, 5, 7} and {c.stride_h for c in first} >= {1, 2}
    assert {c.dil_h for c in first} >= {1, 2, 4}
    assert any(c.pad_h > 0 for c in first) and any(c.kh > 1 and c.pad_h == 0 for c in first)
    # a smaller prefix still spreads over the strata (filter, stride, grouped)
    strata = {(c.kh, c.stride_h, c.groups > 1) for c in (i.config for i in plan.items)}
    assert {(c.kh, c.stride_h, c.groups > 1) for c in first[: 4 * len(strata)]} == strata


def test_shards_split_the_core_and_the_tail(plan):
    parts = [make_plan(["conv_grid"], ["fma"], Budget(), COST, shard=Shard(i, 3)) for i in range(1, 4)]
    keys = [{it.key for it in p.items} for p in parts]
    assert sum(map(len, keys)) == len(plan.items) and set().union(*keys) == {it.key for it in plan.items}
    for p in parts:  # each shard measures its share of the core first
        tiers = [S.conv_grid_tier(i.config) for i in p.items]
        assert tiers == sorted(tiers) and tiers.count(0) > 0.25 * sum(
            S.conv_grid_tier(i.config) == 0 for i in plan.items)


def test_structures_cover_the_axes_and_weights_favour_real_layers():
    cats = G.structures()
    assert len(set(cats)) == len(cats)
    assert {c[5] for c in cats} == {"dense", "grouped", "depthwise"} and {c[4] for c in cats} == {1, 2, 4}
    d = S.conv_grid_design()
    sobol = [c for c in d.configs if d.parts[c.key()] == "sobol"]
    share = collections.Counter((c.kh, c.kw, c.stride_h) for c in sobol)
    # 1x1 and 3x3 stride 1, the commonest real structures, get more points than a uniform draw would
    assert share[(1, 1, 1)] > 2 * share[(7, 7, 2)] and share[(3, 3, 1)] > share[(7, 7, 2)]


def _grid_step_order(tmp_path, monkeypatch, limit: int, interleave: bool) -> list[str]:
    """The suite of each configuration `collect --suite conv_grid,seer_grid --redo unsplit`
    measures, in order, with 2 seer_grid configurations stored before and to be measured again."""
    opts = dict(out=tmp_path, progress=False, timing=K.TimingOptions(warmup=1, reps=2, min_reps=1),
                budget=Budget())
    K.run(K.Options(suites=["seer_grid"], limit=2, **opts), fake_env(), log=lambda s: None)
    monkeypatch.setattr(K, "calls_to_redo",
                        lambda path, reasons: dict.fromkeys(("seer_grid", k, "fma") for k in _stored(path))
                        if path.name == "seer_grid.csv" else {})
    order: list[str] = []
    real = K.measure
    monkeypatch.setattr(K, "measure", lambda env, item, o: order.append(item.suite) or real(env, item, o))
    suites = S.parse_suites("seer_grid,conv_grid")
    assert suites == ["conv_grid", "seer_grid"]
    K.run(K.Options(suites=suites, limit=limit, redo=["unsplit"], interleave=interleave, **opts), fake_env(),
          log=lambda s: None)
    return order


def test_the_grid_step_redoes_first_then_measures_conv_grid_then_seer_grid(tmp_path, monkeypatch):
    """Without --interleave: the stored configurations to measure again, then conv_grid, then seer_grid."""
    order = _grid_step_order(tmp_path, monkeypatch, limit=4, interleave=False)
    assert order == ["seer_grid"] * 2 + ["conv_grid"] * 4 + ["seer_grid"] * 2


def test_the_grid_step_interleaves_its_suites_after_the_redo(tmp_path, monkeypatch):
    """With --interleave (the one-shot call's grid step) the stored configurations to measure
    again still come first; then the suites take turns, so seer_grid is not left waiting until
    conv_grid is whole."""
    order = _grid_step_order(tmp_path, monkeypatch, limit=6, interleave=True)
    assert order[:2] == ["seer_grid"] * 2 and sorted(order[2:]) == ["conv_grid"] * 6 + ["seer_grid"] * 4
    new = order[2:]
    assert new.index("seer_grid") < len(new) - 1 - new[::-1].index("conv_grid")  # turns, not one suite then the other


def _stored(path) -> set[str]:
    import pandas as pd

    return set(pd.read_csv(path, usecols=["config_key"])["config_key"])


def test_the_first_design_points_are_pinned():
    """The design is the same on every machine: the GPU image's scipy must give these (unscrambled
    Sobol direction numbers are fixed; the shift and every snap are integer)."""
    d = S.conv_grid_design()
    sobol = [c.key() for c in d.configs if d.parts[c.key()] == "sobol"][:3]
    assert sobol == [
        "conv_fwd:n2:c512:h64:w64:k1536:r3:s3:u2:v2:p1:q1:d1:e1:g8:NCHW",
        "conv_fwd:n32:c896:h7:w7:k640:r1:s1:u1:v1:p0:q0:d1:e1:g1:NCHW",
        "conv_fwd:n8:c64:h224:w280:k20:r1:s1:u2:v2:p0:q0:d1:e1:g4:NCHW",
    ]
    assert len(d.configs) == 9152
