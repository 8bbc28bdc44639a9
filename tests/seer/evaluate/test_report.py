"""What the evaluations share: the JSON they write follows one unit rule (seer.evaluate's
docstring): times in ms named *_ms, errors and shares as fractions, never percents or seconds."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from synthetic import conv_records, gemm_records

from seer.data import records
from seer.evaluate import __main__ as evaluate_cli
from seer.fit import __main__ as fit_cli

SHARES = ("within_10pct", "within_5pct", "top1", "unmodelled_share", "attributed")
ERRORS = ("rmspe", "mape", "median_ape", "p90_ape", "gmae", "ape", "median_dev", "p90_dev", "p99_dev")


def _numbers(doc, key=""):
    """(key, value) of every number in a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numbers(v, k)
    elif isinstance(doc, list):
        for v in doc:
            yield from _numbers(v, key)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield key, doc


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    d = tmp_path_factory.mktemp("units")
    rec = pd.concat([conv_records(300), gemm_records(400)], ignore_index=True)
    records.write_csv(rec, d / "data.csv")
    assert fit_cli.main(["--data", str(d / "data.csv"), "--out", str(d / "fits"), "--quiet"]) == 0
    return d


@pytest.mark.parametrize("which", ["I", "noise"])
def test_json_times_in_ms_and_ratios_as_fractions(fitted, which, capsys):
    out = fitted / f"{which}.json"
    args = ["--set", which, "--data", str(fitted / "data.csv"), "--fits", str(fitted / "fits"), "--out", str(out)]
    assert evaluate_cli.main(args) == 0
    found = list(_numbers(json.loads(out.read_text())))
    assert found
    for key, v in found:
        assert not key.endswith(("_s", "_sec", "_seconds", "_us", "_ns", "_percent")), key
        assert not (key.endswith("_pct") and key not in SHARES), key  # within_10pct: a share of rows
        if key in SHARES:
            assert 0 <= v <= 1, (key, v)
    if which == "I":  # learnable synthetic laws: most rows within 10%, errors of a few hundredths
        doc = json.loads(out.read_text())["overall"]
        assert 0.5 < doc["within_10pct"] <= 1 and 0 <= doc["median_ape"] < 0.1
        assert all(0 <= v < 1 for k, v in found if k in ERRORS)


def test_a_gpu_without_fits_in_the_folder_is_said_and_left_out(tmp_path):
    from seer.evaluate.report import fitted_gpus

    (tmp_path / "t4.json").write_text("{}")
    said = []
    names = ["Tesla T4", "NVIDIA H200"]
    assert fitted_gpus(names, tmp_path, said.append) == ["Tesla T4"]
    assert len(said) == 1 and "NVIDIA H200 (h200) has no fits" in said[0]
    assert fitted_gpus(["NVIDIA H200"], tmp_path, said.append) == ["NVIDIA H200"]  # none: fits_for refuses it
    assert fitted_gpus(names, tmp_path / "t4.json", said.append) == names  # one file scores them all
    assert len(said) == 1
