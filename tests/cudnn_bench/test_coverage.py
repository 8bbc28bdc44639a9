"""cudnn_bench.coverage: how many Test-set-II configurations lie within the fits' trust distance
of a training grid, in seer's own log2 configuration space."""

from __future__ import annotations

import numpy as np

from cudnn_bench import coverage as C
from cudnn_bench import suites as S
from cudnn_bench.configs import ConvConfig
from seer.models.options import FitOptions


def test_distances_are_seers_log2_space():
    a = ConvConfig(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1)
    b = ConvConfig(64, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1)  # twice the batch: one octave
    c = ConvConfig(32, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1)  # half the height and the width
    assert np.allclose(C.nearest([a], [a, b, c]), [0.0, 1.0, np.sqrt(2)])
    assert C.log_points([a]).shape == (1, 14)  # every axis: sizes, groups, stride, padding, dilation


def test_the_table_counts_what_the_grids_cover(tmp_path):
    out, test = C.rows(calls=(1,), data=None)
    trust = FitOptions().trust_distance
    within = {r.label: int((r.dist <= trust).sum()) for r in out}
    assert len(test) == len(S.test_set_ii()) == 201
    assert within["seer_grid, whole"] < 50  # batch 128, padding 0, groups 1 only
    assert within["conv_grid, whole"] >= 190 and within["conv_grid, core"] >= 180
    one = next(r for r in out if r.label.startswith("conv_grid, 1 call"))
    assert 0 < one.configs < len(S.conv_grid())
    assert within[one.label] > within["seer_grid, whole"]


def test_the_command_prints_the_table_and_refuses_a_bad_budget(capsys, tmp_path):
    assert C.main(["--calls", "1", "--data", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "seer_grid, whole" in text and "conv_grid, whole" in text and "n=128" in text
    assert "measured" in text and "0/67" in text  # an empty data folder: nothing measured
    assert C.main(["--budget", "500"]) == 2


def test_a_suite_committed_gzipped_counts_as_measured(tmp_path):
    import gzip

    cfg = ConvConfig(128, 64, 56, 56, 64, 3, 3, 1, 1, 0, 0)
    (tmp_path / "seer_grid.csv.gz").write_bytes(gzip.compress(f"config_key\n{cfg.key()}\n".encode()))
    assert C.measured(tmp_path, "seer_grid") == [cfg]
    assert C.measured(tmp_path, "conv_grid") == []


def _item(suite: str, cfg: ConvConfig, math: str = "fma"):
    from cudnn_bench.plan import PlanItem

    return PlanItem(suite, cfg, math, 1.0)


def test_a_run_measures_first_what_the_stored_data_leave_uncovered():
    from dataclasses import replace

    op = "conv_bwd_data"
    a = ConvConfig(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, op=op)
    near_a = replace(a, batch=64)  # one octave from a: within the trust distance (1.5)
    far = replace(a, c_in=512)  # three octaves
    near_far = replace(far, batch=64)
    items = [_item("conv_bwd_grid", c) for c in (near_a, far, near_far)]
    stored = [("conv_bwd_grid", a.key(), "fma")]
    first, rest = C.uncovered(items, stored)
    assert [i.config for i in first] == [far]  # near_far is near `far`, taken before it
    assert [i.config for i in rest] == [near_a, near_far]
    # only a configuration of the same direction, kind and math covers
    for other in (
        ("conv_bwd_grid", replace(a, op="conv_bwd_filter").key(), "fma"),
        ("conv_bwd_grid", a.key(), "tf32"),
        ("conv_bwd_grid", replace(a, groups=2).key(), "fma"),
    ):
        assert [i.config for i in C.uncovered(items, [other])[0]] == [near_a, far]
    assert C.uncovered(items, [])[0] == [items[0], items[1]]  # nothing stored: a spread of the plan order
    assert C.uncovered(items, stored, radius=5.0)[0] == []


def test_the_uncovered_part_of_every_suite_comes_before_the_rest_of_any():
    from dataclasses import replace

    a = ConvConfig(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1)
    fwd = [_item("seer_grid", c) for c in (a, replace(a, batch=64), replace(a, h_in=7, w_in=7))]
    bwd = [_item("conv_bwd_grid", replace(c.config, op="conv_bwd_data")) for c in fwd]
    order = C.measure_order(fwd + bwd, interleaved=True)
    assert {i.config.key() for i in order[:4]} == {
        fwd[0].config.key(),
        fwd[2].config.key(),
        bwd[0].config.key(),
        bwd[2].config.key(),
    }
    assert order[4:] in ([fwd[1], bwd[1]], [bwd[1], fwd[1]])
    assert C.measure_order(fwd + bwd) == [fwd[0], fwd[2], bwd[0], bwd[2], fwd[1], bwd[1]]
    # a suite's core tier before its tail, whatever order the items came in
    design = S.conv_grid_design()
    core = next(c for c in design.configs if design.tiers[c.key()] == 0)
    tail = replace(core, c_in=core.c_in * 16 + 1)
    assert S.conv_grid_tier(tail) == 1
    got = C.measure_order([_item("conv_grid", tail), _item("conv_grid", core)])
    assert [i.config for i in got] == [core, tail]


def test_within_trust_says_where_the_fits_would_interpolate():
    from dataclasses import replace

    a = ConvConfig(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1)
    items = [_item("conv_grid", c) for c in (a, replace(a, batch=64), replace(a, c_in=512))]
    assert list(C.within_trust(items, [("conv_grid", a.key(), "fma")])) == [True, True, False]
    assert not C.within_trust(items, []).any()
