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
