"""The gate in front of a variant chooser: whether cuDNN runs its direct fallback kernel."""

import numpy as np
import pandas as pd
import pytest
from synthetic import DIRECT, EXPLICIT, Always
from synthetic import pointwise_convs as _convs
from synthetic import runs_direct as _runs_direct

from seer.data import census
from seer.data.configs import log_config
from seer.fit.gpu import _gate
from seer.models import FitOptions, chooser, gate


def test_a_gate_needs_enough_labels_of_both_kinds():
    df = _convs(gate.GATE_MIN)
    pts = log_config(df, "conv_fwd")
    assert gate.fit_gate(pts[:-1], _runs_direct(df)[:-1]) is None  # one short
    assert gate.fit_gate(pts, np.zeros(len(df), dtype=bool)) is None  # one kind only
    g = gate.fit_gate(pts, _runs_direct(df))
    test = _convs(500, seed=1)
    assert (g.predict(log_config(test, "conv_fwd")).astype(bool) == _runs_direct(test)).mean() > 0.97


def test_the_gate_keeps_each_rows_candidates_to_its_answer():
    tr = _convs(3000)
    keys = pd.Series(np.where(_runs_direct(tr), DIRECT, EXPLICIT))
    plain = chooser.fit_chooser(tr, "conv_fwd", "GEMM", keys, candidates=1)
    g = gate.fit_gate(log_config(tr, "conv_fwd"), _runs_direct(tr))
    gated = chooser.fit_chooser(tr, "conv_fwd", "GEMM", keys, candidates=1, gate=g)
    # queries beyond the data (batch 4096): the nearest configuration's variant is no guide there
    q = _convs(400, seed=2).assign(batch=4096)
    truth = np.where(_runs_direct(q), DIRECT, EXPLICIT)
    assert (gated.choose(q) == truth).mean() > 0.99 > (plain.choose(q) == truth).mean() + 0.03
    cand, _ = gated.propose(log_config(q, "conv_fwd"), radius=1.5)
    want = g.predict(log_config(q, "conv_fwd")).astype(bool)
    kind = gate.is_direct(np.asarray(gated.labels)[cand])
    assert (kind[:, 0] == want).all()  # the gate's answer first; the other kind only where in doubt
    assert 0.9 < (kind == want[:, None]).all(axis=1).mean() < 1
    back = chooser.Chooser.from_dict(gated.to_dict())
    assert back.gate is not None and (back.choose(q) == gated.choose(q)).all()
    assert "direct kernel" in back.rule and "direct kernel" not in plain.rule
    assert "gate" not in plain.to_dict()


def test_a_row_without_a_candidate_of_the_gates_answer_takes_the_nearest_that_ran_it():
    labels = ["a_" + EXPLICIT, "b_" + DIRECT]
    points = np.array([[0.0, 0.0], [0.0, 5.0], [5.0, 5.0]])
    label_idx = np.array([0, 1, 1])
    kinds = np.zeros(3, dtype=bool)

    cand = np.array([[0, 0], [0, 1]])
    q = np.array([[4.0, 5.0], [0.0, 0.0]])
    out = gate.gated(Always(), q, cand, labels, points, label_idx, kinds, np.zeros(2, dtype=bool))
    assert out.tolist() == [[1, 1], [1, 1]]  # no direct candidate: the nearest direct point's; else its own


def test_where_most_of_its_nearest_configurations_ran_the_other_kernel_both_kinds_compete():
    labels = ["a_" + EXPLICIT, "b_" + DIRECT]
    explicit = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, 0.5]]
    direct = [[9.0, 9.0], [9.0, 8.0], [8.0, 9.0], [8.0, 8.0], [8.5, 8.5]]
    points = np.array(explicit + direct)
    label_idx = np.array([0] * 5 + [1] * 5)
    kinds = np.zeros(10, dtype=bool)

    q = np.array([[0.2, 0.3], [8.6, 8.7], [0.4, 0.4]])
    cand = np.array([[1], [1], [0]])
    out = gate.gated(Always(), q, cand, labels, points, label_idx, kinds, np.zeros(3, dtype=bool))
    assert (out[:, 0] == 1).all()  # the gate's answer first: what Chooser.choose names
    assert set(out[0]) == {0, 1}  # its 5 nearest ran the explicit GEMM: that competes too
    assert set(out[1]) == {1}  # its nearest ran the direct kernel too: the answer binds
    assert set(out[2]) == {0, 1}  # its own explicit candidate stays beside the nearest direct

    def between(lo):  # a row amid points[lo:7]: 7 - lo - 2 explicit points, 2 direct
        one, pts = np.array([[4.0, 4.0]]), points[lo:7]
        return set(gate.gated(Always(), one, cand[2:], labels, pts, label_idx[lo:7], kinds[lo:7], kinds[:1])[0])

    assert between(2) == {0, 1}  # 3 of its 5 nearest ran the explicit GEMM: a majority
    assert between(3) == {1}  # 2 of its 4 (all the points): no majority, the answer binds


def test_where_the_gates_leaf_learnt_both_kinds_both_compete():
    labels = ["a_" + EXPLICIT, "b_" + DIRECT]
    points = np.array([[9.0, 9.0], [9.0, 8.0], [8.0, 9.0], [8.0, 8.0], [8.5, 8.5], [0.0, 0.0]])
    label_idx = np.array([1, 1, 1, 1, 1, 0])
    kinds = np.zeros(6, dtype=bool)
    q, cand = np.array([[8.6, 8.7]]), np.array([[1]])
    args = (q, cand, labels, points, label_idx, kinds, np.zeros(1, dtype=bool))
    assert set(gate.gated(Always(), *args)[0]) == {1}  # a pure leaf, its nearest agree: it binds
    assert set(gate.gated(Always(mixed=True), *args)[0]) == {0, 1}  # a leaf of both kinds: in doubt
    twice = log_config(_convs(gate.GATE_MIN // 2), "conv_fwd").repeat(2, axis=0)  # each ran both kinds
    grown = gate.fit_gate(twice, np.arange(len(twice)) % 2 == 0)
    sure = gate.fit_gate(twice, _runs_direct(_convs(gate.GATE_MIN // 2)).repeat(2))
    asked = log_config(_convs(50, seed=3), "conv_fwd")
    assert gate.leaf_answer(grown, asked)[1].all() and not gate.leaf_answer(sure, asked)[1].any()


def _family(n, seed, split="train"):
    df = _convs(n, seed)
    direct = _runs_direct(df)
    return df.assign(
        algo="GEMM",
        split=split,
        call_id=[f"{split}{seed}-{i}" for i in range(n)],
        key=np.where(direct, DIRECT, EXPLICIT),
        workspace_bytes=np.where(direct, 0, 4096),
    )


def _asked(df):
    direct = _runs_direct(df)
    return df.assign(algo="GEMM", math="fma", status="ok", workspace_bytes=np.where(direct, 0, 4096))


def test_the_fit_grows_a_gate_from_timed_calls_and_the_census_where_the_workspace_tells():
    few = _family(500, 0)
    held = _family(200, 1, split="test")
    assert _gate(pd.concat([few, held]), "conv_fwd", "GEMM", None) is None  # 500 calls: too few
    asked = _asked(_convs(3000, seed=3))
    g = _gate(pd.concat([few, held]), "conv_fwd", "GEMM", asked)
    assert g is not None
    # a census row of a timed configuration, held out or not, is left out: its calls label it
    clash = _asked(pd.concat([few, held]).drop(columns=["algo", "split", "call_id", "key", "workspace_bytes"]))
    clash["workspace_bytes"] = np.where(_runs_direct(clash), 4096, 0)  # the opposite of the calls
    g2 = _gate(pd.concat([few, held]), "conv_fwd", "GEMM", pd.concat([asked, clash]))
    pts = log_config(pd.concat([few, held]), "conv_fwd")
    assert np.array_equal(g2.predict(pts), g.predict(pts))
    # where the timed calls' workspace does not tell, no gate
    blind = few.assign(workspace_bytes=0)
    assert _gate(pd.concat([blind, held]), "conv_fwd", "GEMM", asked) is None


def test_the_census_folder_of_a_gpu(tmp_path):
    assert census.folder_of(tmp_path, "h100-sxm") is None
    folder = tmp_path / "h100-sxm" / "census"
    folder.mkdir(parents=True)
    assert census.folder_of(tmp_path, "h100-sxm") is None  # no parts yet
    _asked(_convs(5)).assign(op="conv_fwd").to_csv(folder / "census-000000.csv.gz", index=False)
    assert census.folder_of(tmp_path, "h100-sxm") == folder
    assert census.folder_of(tmp_path / "h100-sxm", "h100-sxm") == folder
    assert len(census.read(folder)) == 5


@pytest.mark.parametrize("direct", [True, False])
def test_workspace_coding_needs_both_kernels(direct):
    calls = pd.DataFrame({"workspace_bytes": [0, 0], "direct": [direct, direct]})
    assert not gate.workspace_coded(calls)


def _captured(df):
    """Census rows of captured calls: the kernels name the choice, the workspace says nothing
    (every call asks for some, as IMPLICIT_PRECOMP_GEMM's often do)."""
    direct = _runs_direct(df)
    kernels = [
        ("void cudnn::cnn::conv2d_grouped_direct_kernel<float>(float*)",) if d else ("sm90_xmma_fprop",) for d in direct
    ]
    return _asked(df).assign(workspace_bytes=4096, capture="ok", launches=1, kernels=kernels)


def test_captured_calls_label_the_census_whatever_their_workspace():
    rows = pd.concat([_captured(_convs(40, seed=4)), _asked(_convs(30, seed=5)).assign(capture=np.nan)])
    rows["op"] = "conv_fwd"
    got = gate.census_labels(rows, "conv_fwd", "GEMM", workspace=False)  # the uncaptured rows say nothing
    assert len(got) == 40 and np.array_equal(got["direct"].to_numpy(), _runs_direct(_convs(40, seed=4)))
    both = gate.census_labels(rows, "conv_fwd", "GEMM")  # where the workspace tells: those too, by it
    assert len(both) == 70 and np.array_equal(both["direct"].to_numpy()[40:], _runs_direct(_convs(30, seed=5)))
    assert gate.captured_any(rows, "conv_fwd", "GEMM") and not gate.captured_any(rows, "conv_fwd", "FFT")


def test_with_gates_captured_a_family_whose_workspace_does_not_tell_gets_one_from_its_captures():
    blind = pd.concat([_family(500, 0), _family(200, 1, split="test")]).assign(workspace_bytes=4096)
    census_rows = _captured(_convs(3000, seed=3)).assign(op="conv_fwd")
    assert _gate(blind, "conv_fwd", "GEMM", census_rows, gates="workspace") is None  # the workspace must tell
    g = _gate(blind, "conv_fwd", "GEMM", census_rows)  # the default: "captured"
    test = _convs(500, seed=6)
    assert (g.predict(log_config(test, "conv_fwd")).astype(bool) == _runs_direct(test)).mean() > 0.97
    assert (
        _gate(blind, "conv_fwd", "GEMM", _asked(_convs(3000, seed=3)).assign(op="conv_fwd"), gates="captured") is None
    )
    with pytest.raises(Exception, match="gates"):
        FitOptions(gates="every")


def test_one_census_serves_every_gpu_of_an_architecture(tmp_path):
    folder = tmp_path / "h100-sxm" / "census"
    folder.mkdir(parents=True)
    _asked(_convs(5)).assign(op="conv_fwd").to_csv(folder / "census-000000.csv.gz", index=False)
    assert census.folder_of(tmp_path, "h200") == folder  # sm_90 both: the H100's census labels the H200
    assert census.folder_of(tmp_path / "h200", "h200") == folder
    assert census.folder_of(tmp_path, "l4") is None  # sm_89: its own, none yet
    assert census.shared(tmp_path, "l4") == tmp_path / "l4" / "census"
    own = tmp_path / "h200" / "census"
    own.mkdir(parents=True)
    _asked(_convs(3)).assign(op="conv_fwd").to_csv(own / "census-000000.csv.gz", index=False)
    assert census.folder_of(tmp_path, "h200") == own  # a GPU's own census first
