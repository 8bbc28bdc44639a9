"""The headline's rows come from the evaluations' JSON: one spelling per GPU (its slug), each
figure beside its target and its anchor, with verdicts that follow the metric's direction."""

from __future__ import annotations

import math

from seer.evaluate import headline

SEL = {"n": 10.0, "top1": 0.8, "within_10pct": 0.9, "slowdown_mean": 0.05}
HEUR = {"n": 10.0, "top1": 0.85, "within_10pct": 0.7, "slowdown_mean": 0.2}


def test_set_one_rows_per_gpu_and_op_with_the_published_bar():
    doc = {
        "op": {
            "NVIDIA H100 80GB HBM3/conv_fwd": {"n": 5, "rmspe": 0.10},
            "NVIDIA H100 80GB HBM3/gemm": {"n": 3, "rmspe": 0.30},
            "overall/overall": {"n": 8, "rmspe": 0.2},
            "overall": {"n": 8, "rmspe": 0.2},
        }
    }
    conv, gemm = headline.set_one_rows(doc)
    assert (conv.gpu, conv.n, conv.value, conv.target_met, conv.anchor_value, conv.beats_anchor) == (
        "h100-sxm",
        5,
        0.10,
        True,
        0.1471,
        True,
    )
    assert gemm.evaluation == "Test-set-I GEMM RMSPE" and gemm.target_met is False and gemm.beats_anchor is False


def test_set_two_rows_follow_each_metrics_direction():
    top1, w10, slow = headline.set_two_rows({"by_gpu": {"Tesla T4": {"model": SEL, "cudnn_heuristic": HEUR}}})
    assert top1.beats_anchor is False and top1.target_met is False  # 80% < 85%, < 95%
    assert w10.beats_anchor is True and w10.anchor_value == 0.7
    assert slow.beats_anchor is True and slow.target_met is False  # lower is better: 5% vs 20%, > 1%
    assert {r.gpu for r in (top1, w10, slow)} == {"t4"}


def test_agreement_on_neusight_data_has_no_bar():
    (row,) = headline.set_two_rows({"by_gpu": {"Tesla P4": {"n": 7, "agreement": 0.5}}})
    assert row.target is None and row.anchor_value is None and row.beats_anchor is None
    line = headline.format_rows([row]).splitlines()[1]
    assert line.split() == ["p4", "Test-set-II", "agreement", "with", "autotuner", "7", "50.0%"]


def test_models_rows_skip_the_overall_row_and_pair_neusight_by_gpu():
    doc = {
        "by_gpu": [{"gpu": "Tesla T4", "n": 4, "median_ape": 0.03}, {"gpu": "overall", "n": 4, "median_ape": 0.03}],
        "neusight_by_gpu": [{"gpu": "Tesla T4", "n": 4, "median_ape": 0.02}],
    }
    (row,) = headline.models_rows(doc)
    assert (row.gpu, row.value, row.target_met, row.anchor_value, row.beats_anchor) == ("t4", 0.03, True, 0.02, False)
    assert headline.models_rows({"by_gpu": doc["by_gpu"]})[0].anchor_value is None  # no NeuSight beside the graphs
    (step,) = headline.models_rows(doc, headline.TRAINING)  # training steps: their own row
    assert step.evaluation == "training steps median APE" and step.anchor_source == "same steps"


def test_table_shows_targets_verdicts_and_anchors():
    rows = headline.set_two_rows({"by_gpu": {"Tesla T4": {"model": SEL, "cudnn_heuristic": HEUR}}})
    text = headline.format_rows(rows)
    head, top1, w10, slow = text.splitlines()
    assert head.split() == ["GPU", "evaluation", "n", "seer", "target", "anchor"]
    assert ">= 95%  missed" in top1 and "cuDNN heuristic 85.0% (same layers)" in top1 and top1.endswith("worse")
    assert ">= 99%" in w10 and w10.endswith("better")
    assert "<= 1%   missed" in slow and "5.0%" in slow
    assert all(not math.isnan(r["value"]) for r in headline.as_json(rows))
