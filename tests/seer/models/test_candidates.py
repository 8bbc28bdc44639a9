"""How many nearest configurations' variants compete: chosen per convolution algorithm by
leave-one-out, the fastest of their models taken."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seer import fitsfile
from seer.errors import SeerError
from seer.fitsfile.check import check
from seer.models import candidates


def test_leave_one_out_prefers_more_candidates_where_the_nearest_misleads():
    # a 1-D grid of alternating variants: a row's nearest other row is always of the other variant,
    # whose model is 3x too slow for it; among its 2 nearest, its own variant's neighbour comes back
    x = np.arange(40, dtype=float)[:, None]
    labels = np.array(["a", "b"] * 20, dtype=object)
    labels[::4] = "c"  # a third variant so that k=2 is not the whole answer
    times = np.ones(40)

    def predict(lab, rows):
        return np.where(labels[rows] == lab, 1.0, 3.0)

    scores = candidates.loo_rmspe(x, labels, times, predict)
    assert scores[1] == pytest.approx(2.0)  # every row predicted by the wrong variant
    assert scores[3] < scores[1]
    assert candidates.choose(scores) == min(k for k, v in scores.items() if v <= min(scores.values()) * 1.05)


def test_a_tie_keeps_the_simpler_rule():
    assert candidates.choose({1: 0.100, 2: 0.104, 3: 0.100}) == 1
    assert candidates.choose({1: 0.2, 2: 0.1, 3: 0.104}) == 2
    assert candidates.choose({}) is None


def test_bundled_conv_choosers_carry_their_count_and_a_bad_one_is_refused(tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    conv = {k: v for k, v in doc["choosers"].items() if v["op"] == "conv_fwd" and len(v["labels"]) > 1}
    assert conv and all(v.get("candidates") in candidates.CHOICES for v in conv.values())
    assert all("candidates" not in v for v in doc["choosers"].values() if v["op"] != "conv_fwd")
    key = next(iter(conv))
    doc["choosers"][key]["candidates"] = 0
    with pytest.raises(SeerError, match="candidates"):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


def test_a_copy_with_other_candidates_keeps_them_in_its_per_kind_choosers():
    import dataclasses

    import seer

    ch = seer.load("t4").choosers["conv_fwd:IMPLICIT_PRECOMP_GEMM"]
    assert ch.of_kind(False).candidates == ch.candidates
    one = dataclasses.replace(ch, candidates=1)  # what a transfer does (transfer.nearest_variant)
    assert one.of_kind(False).candidates == 1 and ch.of_kind(False).candidates == ch.candidates
