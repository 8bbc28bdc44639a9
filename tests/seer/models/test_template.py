import numpy as np
import pandas as pd
from synthetic import Always

from seer.data import configs
from seer.data.records.schema import CONV_DEFAULTS
from seer.models import chooser
from seer.models.template import Template, templates

GENERIC, DEPTHWISE_3, DEPTHWISE = (
    "conv_fwd:GEMM:grouped_direct_010000_0_0",
    "conv_fwd:GEMM:grouped_direct_010000_1_3",
    "conv_fwd:GEMM:grouped_direct_010000_1_0",
)


def _conv(c, k, g, r, n=1, op="conv_fwd"):
    return pd.DataFrame(
        {
            "op": op,
            "batch": 8,
            "c_in": c,
            "h_in": np.arange(20, 20 + n),
            "w_in": 20,
            "c_out": k,
            "kh": r,
            "kw": r,
            **CONV_DEFAULTS,
            "groups": g,
        }
    )


def test_a_template_names_the_channels_per_group_and_the_filter_it_runs():
    assert Template.of(DEPTHWISE_3) == Template(1, 3)
    assert Template.of("conv_bwd_data:ALGO_1:dgrad_grouped_direct_01_2_1") == Template(2, 1)
    assert Template.of("conv_fwd:GEMM:explicit_convolve_sgemm_128_6_7_3_3_5_0") is None
    assert Template.of("conv_bwd_filter:ALGO_1:wgrad_grouped_direct_01_") is None
    rows = pd.concat([_conv(64, 64, 64, 3), _conv(64, 64, 64, 5), _conv(96, 96, 4, 3), _conv(64, 64, 1, 3)])
    x = configs.log_config(rows, "conv_fwd")
    assert Template(1, 3).admits(x, "conv_fwd").tolist() == [True, False, False, False]
    assert Template(1, 0).admits(x, "conv_fwd").tolist() == [True, True, False, False]
    assert Template(0, 0).admits(x, "conv_fwd").all()
    # the data gradient's template counts the forward's output channels per group
    grad = configs.log_config(_conv(64, 128, 32, 1, op="conv_bwd_data"), "conv_bwd_data")
    assert Template(4, 1).admits(grad, "conv_bwd_data").all() and not Template(2, 1).admits(grad, "conv_bwd_data").any()
    assert templates([GENERIC, "conv_fwd:GEMM:im2col4d"], "conv_fwd") == {0: Template(0, 0)}
    assert templates(["conv_bwd_filter:ALGO_1:wgrad_grouped_direct_01_"], "conv_bwd_filter") == {}


def test_the_chooser_names_the_most_specialised_template_the_row_runs():
    train = pd.concat(
        [_conv(64, 64, 64, 3, 12), _conv(64, 64, 64, 5, 12), _conv(96, 96, 4, 3, 12), _conv(96, 96, 4, 7, 12)],
        ignore_index=True,
    )
    keys = pd.Series([DEPTHWISE_3] * 12 + [DEPTHWISE] * 12 + [GENERIC] * 24)
    ch = chooser.fit_chooser(train, "conv_fwd", "GEMM", keys, candidates=1)
    labels = np.asarray(ch.labels, dtype=object)
    idx = {k: i for i, k in enumerate(ch.labels)}
    rows = pd.concat([_conv(32, 32, 32, 5), _conv(96, 96, 4, 3), _conv(32, 32, 32, 3), _conv(32, 32, 32, 7)])
    x = configs.log_config(rows, "conv_fwd")
    cand = np.array([[idx[DEPTHWISE_3]], [idx[DEPTHWISE_3]], [idx[GENERIC]], [idx[DEPTHWISE_3]]])
    got = labels[ch.by_template(x, cand)[:, 0]].tolist()
    # a 5x5 depthwise layer cannot run the 3x3 template; a grouped one of 24 channels a group no
    # depthwise one; a 3x3 depthwise layer runs its own rather than the generic; a 7x7 depthwise
    # layer's filter no depthwise template ran: the generic, which ran 7x7 filters
    assert got == [DEPTHWISE, GENERIC, DEPTHWISE_3, GENERIC]
    assert (ch.by_template(x[:1], cand[:1][:, [0, 0]]) == idx[DEPTHWISE]).all()  # every column of a row
    one = chooser.fit_chooser(train.iloc[24:], "conv_fwd", "GEMM", keys.iloc[24:], candidates=1)
    same = np.zeros((4, 1), dtype=int)
    assert (one.by_template(x, same) == same).all()  # one template: nothing to choose


def test_the_template_the_gate_brings_is_kept_to_the_shapes_the_row_runs():
    explicit = "conv_fwd:GEMM:explicit_convolve_sgemm_128_6_7_3_3_5_0"
    # a 5x5 depthwise layer whose nearest configurations ran the explicit GEMM; the nearest that
    # ran a direct kernel ran the 3x3 template, the 5x5 template ran far off in channels
    train = pd.concat(
        [_conv(64, 64, 64, 5, 12), _conv(64, 64, 64, 3, 12), _conv(1024, 1024, 1024, 5, 12)], ignore_index=True
    )
    keys = pd.Series([explicit] * 12 + [DEPTHWISE_3] * 12 + [DEPTHWISE] * 12)
    ch = chooser.fit_chooser(train, "conv_fwd", "GEMM", keys, candidates=1, gate=Always())
    q = _conv(64, 64, 64, 5, 3)
    assert (ch.nearest(configs.log_config(q, "conv_fwd"))[1] == ch.labels.index(explicit)).all()
    # the gate brings the nearest direct configuration's template, which cannot run the row:
    # kept again to the templates the row runs, its own
    assert ch.choose(q).tolist() == [DEPTHWISE] * 3
    cand = np.asarray(ch.labels)[ch.propose(configs.log_config(q, "conv_fwd"), radius=1.5)[0]]
    # the gate's answer first; the explicit GEMM of the nearest competes (its answer is in doubt)
    assert (cand[:, 0] == DEPTHWISE).all() and not (cand == DEPTHWISE_3).any()


def test_a_shape_ruled_out_is_never_replaced_by_a_template_the_row_cannot_run():
    explicit = "conv_fwd:GEMM:explicit_convolve_sgemm_128_6_7_3_3_5_0"
    two_3 = "conv_fwd:GEMM:grouped_direct_010000_2_3"
    padded = {"pad_h": 1, "pad_w": 1}
    # the explicit GEMM never ran a padded layer of the many here; the 3x3 template of two
    # channels a group ran few layers, nearest the query; the generic one ran far off
    train = pd.concat(
        [_conv(56, 56, 8, 3, 40), _conv(512, 512, 8, 3, 40).assign(**padded), _conv(16, 16, 8, 3, 4)],
        ignore_index=True,
    )
    keys = pd.Series([explicit] * 40 + [GENERIC] * 40 + [two_3] * 4)
    ch = chooser.fit_chooser(train, "conv_fwd", "GEMM", keys, candidates=1)
    x = configs.log_config(_conv(56, 56, 8, 3).assign(**padded), "conv_fwd")  # 7 channels a group, padded
    others = np.flatnonzero(np.asarray(ch.labels)[ch.label_idx] != explicit)
    nearest = others[np.argmin(((ch.points[others] - x) ** 2).sum(axis=1))]
    assert ch.labels[ch.label_idx[nearest]] == two_3  # the replacement the nearest would give
    out = np.asarray(ch.labels)[ch.by_support(x, np.array([[ch.labels.index(explicit)]]))]
    assert out[0, 0] == GENERIC and two_3 not in out
