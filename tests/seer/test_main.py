"""python -m seer (make run): one screen of progress lines ending with the headline; the full text
of every step, its JSON, the warnings and the headline's JSON under --report; -v prints the
full tables too. Run on small synthetic data (NeuSight's data hidden, so its steps are skipped)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from synthetic import conv_records, gemm_records

from seer import fitsfile
from seer.__main__ import compare_with_bundled, main
from seer.cli import run
from seer.data import records

SCREEN = 40  # lines of a terminal


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run(lambda: main(argv), "seer")
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same synthetic T4 data run quietly and with -v, each into its own folders."""
    d = tmp_path_factory.mktemp("seer")
    rec = pd.concat([conv_records(300), gemm_records(400)], ignore_index=True)
    records.write_csv(rec, d / "data.csv")
    got = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(records, "neusight_dir", lambda: None)  # analytical and whole models: not here
        for name, extra in (("quiet", []), ("verbose", ["-v"])):
            argv = [
                "--data",
                str(d / "data.csv"),
                "--out",
                str(d / name / "fits"),
                "--report",
                str(d / name / "report"),
            ]
            got[name] = (*_run(argv + extra), d / name / "report")
    return got


def test_one_screen_ending_with_the_headline(runs):
    rc, out, err, _ = runs["quiet"]
    assert rc == 0, err
    lines = out.rstrip("\n").splitlines()
    assert len(lines) <= SCREEN, out
    assert max(len(ln) for ln in lines if "/tmp" not in ln and "pytest-" not in ln) <= 120, out  # paths aside
    assert err == ""  # warnings are counted, not printed
    assert not [ln for ln in lines if ln.startswith("warning:")]
    head = next(i for i, ln in enumerate(lines) if ln.startswith("GPU "))
    assert "evaluation" in lines[head] and "target" in lines[head] and "anchor" in lines[head]
    table = lines[head + 1 :]
    assert all(ln.split()[0] == "t4" for ln in table), table  # one spelling of the GPU: its slug
    evaluations = [" ".join(ln.split()[1:4]) for ln in table]
    assert evaluations == [
        "Test-set-I bmm RMSPE",
        "Test-set-I conv RMSPE",
        "Test-set-II top-1 300",
        "Test-set-II within 10%",
        "Test-set-II mean slowdown",
    ]
    assert all(("met" in ln or "missed" in ln) and ("better" in ln or "worse" in ln) for ln in table)
    assert "SEER 14.7% (published)" in table[1] and "cuDNN heuristic" in table[4]
    assert [ln.split()[1] for ln in lines if ln.startswith("[")] == ["fit", "Test-set-I", "Test-set-II"]


def test_headline_figures_are_the_evaluations_own(runs):
    """headline.json carries the figures the evaluations wrote to their JSON, not a recomputation."""
    rc, _, _, report = runs["quiet"]
    assert rc == 0
    head = json.loads((report / "headline.json").read_text())
    one = json.loads((report / "test-set-i.json").read_text())
    two = json.loads((report / "test-set-ii.json").read_text())
    rows = {(r["gpu"], r["evaluation"]): r for r in head["rows"]}
    conv = rows[("t4", "Test-set-I conv RMSPE")]
    assert conv["value"] == one["op"]["Tesla T4/conv_fwd"]["rmspe"]
    assert conv["target"] == 0.12 and conv["anchor_value"] == 0.1471
    assert conv["target_met"] == (conv["value"] <= 0.12)
    top1 = rows[("t4", "Test-set-II top-1")]
    assert top1["value"] == two["by_gpu"]["Tesla T4"]["model"]["top1"]
    assert top1["anchor_value"] == two["by_gpu"]["Tesla T4"]["cudnn_heuristic"]["top1"]


def test_report_holds_every_steps_full_text(runs):
    _, out, _, report = runs["quiet"]
    for name in ("fit.txt", "test-set-i.txt", "test-set-ii.txt", "warnings.txt", "headline.json"):
        assert (report / name).is_file(), name
    assert "With the variant known" in (report / "test-set-i.txt").read_text()
    assert "by_batch:" in (report / "test-set-ii.txt").read_text()
    assert "With the variant known" not in out
    warned = (report / "warnings.txt").read_text().splitlines()
    if warned:
        assert f"{len(warned)} warnings" in out and str(report / "warnings.txt") in out
    assert json.loads((report / "headline.json").read_text())["warnings"] == len(warned)


def test_verbose_prints_the_full_tables_and_the_same_headline(runs):
    rc, out, _, _ = runs["verbose"]
    _, quiet, _, _ = runs["quiet"]
    assert rc == 0
    assert "With the variant known" in out and "by_batch:" in out
    assert len(out.splitlines()) > SCREEN
    tail = quiet[quiet.index("\nGPU ") :]
    assert out.endswith(tail)


def test_fits_of_other_data_are_not_compared_with_the_bundled_ones(runs):
    _, out, _, _ = runs["quiet"]
    if (fitsfile.FITS_DIR / "t4.json").is_file():
        assert "t4: not compared: the bundled fits are of other data" in out
        assert "fits of other data are expected to differ" in out


@pytest.fixture
def bundled_copy(tmp_path) -> Path:
    src = fitsfile.FITS_DIR / "t4.json"
    if not src.is_file():
        pytest.skip("no bundled t4 fits")
    out = tmp_path / "fits"
    out.mkdir()
    (out / "t4.json").write_text(src.read_text())
    return out


def test_a_refit_of_the_same_data_is_compared_and_gpus_alike_share_a_line(bundled_copy):
    (line,) = compare_with_bundled(bundled_copy)
    assert line.strip().startswith("t4: yes, same variants and choices")
    if (fitsfile.FITS_DIR / "p4.json").is_file():
        (bundled_copy / "p4.json").write_text((fitsfile.FITS_DIR / "p4.json").read_text())
        (line,) = compare_with_bundled(bundled_copy)
        assert line.strip().startswith("p4, t4: yes, same variants and choices")


def test_a_refit_that_differs_says_what_and_why(bundled_copy):
    doc = json.loads((bundled_copy / "t4.json").read_text())
    coef = next(
        v["compute"]["coef"] for v in doc["variants"].values() if v.get("compute") and any(v["compute"]["coef"])
    )
    i = next(i for i, c in enumerate(coef) if c)
    coef[i] *= 2
    (bundled_copy / "t4.json").write_text(json.dumps(doc))
    (line,) = compare_with_bundled(bundled_copy)
    assert "t4: no," in line and "coefficients differ by up to" in line and "made by seer" in line


def test_a_failing_step_stops_the_run_with_its_one_line(tmp_path, monkeypatch):
    records.write_csv(gemm_records(200), tmp_path / "gemm.csv")  # no convolutions: no Test-set-II
    monkeypatch.setattr(records, "neusight_dir", lambda: None)
    rc, out, err = _run(
        ["--data", str(tmp_path / "gemm.csv"), "--out", str(tmp_path / "f"), "--report", str(tmp_path / "r")]
    )
    assert rc == 2
    assert err.strip().splitlines() == [err.strip()] and "no convolution rows" in err and "Traceback" not in err
    assert "[2/3] Test-set-I" in out and "[3/3]" not in out
