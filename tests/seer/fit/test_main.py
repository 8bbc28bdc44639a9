import errno
import json
import os
import pathlib
import subprocess
import sys

import pandas as pd
import pytest
from synthetic import conv_records, gemm_records

from seer.data import records
from seer.fit import __main__ as fit_cli


def test_same_data_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    rec = pd.concat([conv_records(200), gemm_records(200)], ignore_index=True)
    records.write_csv(rec, tmp_path / "d.csv")
    assert fit_cli.main(["--data", str(tmp_path / "d.csv"), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    shuffled = rec.sample(frac=1, random_state=3)
    records.write_csv(shuffled, tmp_path / "d.csv")
    assert fit_cli.main(["--data", str(tmp_path / "d.csv"), "--out", str(tmp_path / "b"), "--quiet"]) == 0
    a, b = (tmp_path / "a" / "t4.json").read_bytes(), (tmp_path / "b" / "t4.json").read_bytes()
    assert a == b
    doc = json.loads(a)
    assert doc["schema"] == "seer.fits/2" and doc["date"] == "2026-01-01"
    assert doc["dataset"]["rows"] == len(rec) and len(doc["dataset"]["content_sha256"]) == 64
    v = doc["variants"]["bmm:default:sgemm_128x64_nn"]
    assert v["b_max"] == 80 and v["b_max_source"] == "wave staircase of training rows"
    assert len(v["compute"]["coef"]) == len(v["compute"]["se"]) == len(v["compute"]["features"])


def test_cli_table_and_warnings(tmp_path):
    rec = pd.concat([conv_records(100), gemm_records(12)], ignore_index=True)  # 9 bmm training rows
    records.write_csv(rec, tmp_path / "d.csv")
    r = subprocess.run(
        [sys.executable, "-m", "seer.fit", "--data", str(tmp_path / "d.csv"), "--out", str(tmp_path / "f")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "cv_rmspe%" in r.stdout and "conv_fwd:IMPLICIT_PRECOMP_GEMM" in r.stdout
    assert "warning: t4 bmm:default:sgemm_128x64_nn: only 9 training rows" in r.stderr


def test_cli_bad_input_exit_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,op,time_ms\nTesla T4,conv_fwd,-1\n")
    for args in (["--data", str(bad)], ["--data", str(tmp_path / "missing.csv")]):
        r = subprocess.run(
            [sys.executable, "-m", "seer.fit", *args, "--out", str(tmp_path)], capture_output=True, text=True
        )
        assert r.returncode == 2 and r.stderr.startswith("seer.fit: ") and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ nothing overwritten or lost
# python -m seer.fit never loses fits: a fit of other data does not replace a fits file (the
# bundled fits/ above all), a fit without any model is refused, and a failed write is one line
# that leaves the old file whole and no temporary file behind.
@pytest.fixture
def data(tmp_path, monkeypatch):
    """Two data sets of one GPU (the T4): conv and bmm rows ("full"), and bmm rows only."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    records.write_csv(pd.concat([conv_records(60), gemm_records(60)], ignore_index=True), tmp_path / "full.csv")
    records.write_csv(gemm_records(60, seed=5), tmp_path / "bmm.csv")
    return tmp_path


def fit(*args):
    return fit_cli.main([*map(str, args), "--quiet"])


def ops(path):
    doc = json.loads(path.read_text())
    return sorted({k.split(":")[0] for k in doc["variants"]}), doc["dataset"]["path"]


def one_line(capsys, *words):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


def test_a_fit_of_other_data_goes_beside_the_bundled_fits(data, monkeypatch, capsys):
    """`--data <one op's file>` with no --out replaced the bundled fits/t4.json whole: its conv,
    linear and memory-bound models were gone, exit 0."""
    bundled, trial = data / "fits", data / "build" / "fits"
    monkeypatch.setattr(fit_cli, "DEFAULT_OUT", bundled)
    monkeypatch.setattr(fit_cli, "TRIAL_OUT", trial)
    assert fit("--data", data / "full.csv") == 0  # no file there yet: the default folder
    before = (bundled / "t4.json").read_bytes()
    assert ops(bundled / "t4.json")[0] == ["bmm", "conv_fwd"]
    capsys.readouterr()

    assert fit("--data", data / "bmm.csv") == 0
    assert (bundled / "t4.json").read_bytes() == before
    moved = next(trial.glob("*/t4.json"))
    assert ops(moved)[0] == ["bmm"] and moved.parent.name.endswith("bmm")
    note = capsys.readouterr().err
    assert f"{bundled / 't4.json'}" in note and "conv_fwd" in note and str(moved.parent) in note

    os.utime(bundled / "t4.json", (0, 0))  # the data it was fitted from refreshes it, as before
    assert fit("--data", data / "full.csv") == 0
    assert (bundled / "t4.json").stat().st_mtime > 0 and (bundled / "t4.json").read_bytes() == before
    assert "note:" not in capsys.readouterr().err


def test_an_out_fitted_from_other_data_is_refused_unless_replace(data, monkeypatch, capsys):
    out = data / "out"
    assert fit("--data", data / "full.csv", "--out", out) == 0
    before = (out / "t4.json").read_bytes()
    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(fit_cli, "fit_all", lambda *a, **k: pytest.fail("fitted before refusing"))
        assert fit("--data", data / "bmm.csv", "--out", out) == 2
    one_line(capsys, "not replacing", "t4.json", "conv_fwd", "--replace")
    assert (out / "t4.json").read_bytes() == before
    assert fit("--data", data / "bmm.csv", "--out", out, "--replace") == 0
    assert ops(out / "t4.json") == (["bmm"], os.path.relpath(data / "bmm.csv", fit_cli.paths.REPO))


@pytest.mark.parametrize("rows", [1, 7])
def test_a_fit_without_any_model_is_refused(data, rows, capsys):
    """7 rows (or one per variant) gave a fits file without a model, exit 0."""
    records.write_csv(gemm_records(rows), data / "few.csv")
    assert fit("--data", data / "few.csv", "--out", data / "out") == 2
    one_line(capsys, "no model fitted", "nothing was written", f"{rows} rows", "needs 12")
    assert not list((data / "out").iterdir())


def test_a_fit_without_any_model_beside_the_bundled_fits_is_one_line(data, monkeypatch, capsys):
    """Not a note of where the fits go, then the refusal: only the refusal."""
    monkeypatch.setattr(fit_cli, "DEFAULT_OUT", data / "fits")
    monkeypatch.setattr(fit_cli, "TRIAL_OUT", data / "build" / "fits")
    assert fit("--data", data / "full.csv") == 0
    capsys.readouterr()
    records.write_csv(gemm_records(7), data / "few.csv")
    assert fit("--data", data / "few.csv") == 2
    one_line(capsys, "no model fitted")
    assert [p.name for p in (data / "fits").iterdir()] == ["t4.json"] and not list((data / "build").rglob("*.json"))


@pytest.mark.parametrize(
    "fail",
    [
        ("write_text", OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "No space left on device"),
        ("replace", PermissionError(errno.EACCES, os.strerror(errno.EACCES)), "Permission denied"),
    ],
    ids=["disk-full", "permission"],
)
def test_a_failed_write_is_one_line_and_leaves_the_old_file(data, monkeypatch, capsys, fail):
    out = data / "out"
    assert fit("--data", data / "full.csv", "--out", out) == 0
    before = (out / "t4.json").read_bytes()
    capsys.readouterr()
    what, exc, words = fail
    real_write = pathlib.Path.write_text

    def half_then_fail(self, text, *a, **k):
        real_write(self, text[: len(text) // 2], *a, **k)  # the disk fills up half-way
        raise exc

    def refuse(*a, **k):
        raise exc

    with monkeypatch.context() as m:
        if what == "write_text":
            m.setattr(pathlib.Path, "write_text", half_then_fail)
        else:
            m.setattr(os, "replace", refuse)
        assert fit("--data", data / "full.csv", "--out", out) == 2
    one_line(capsys, "seer.fit: ", f"{out / 't4.json'} cannot be written", words, "unchanged")
    assert (out / "t4.json").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["t4.json"]  # no temporary file left


def test_fits_traces_beside_harness_records(tmp_path):
    data = pathlib.Path(__file__).parents[3] / "data" / "h100-sxm"
    args = ["--data", str(data / "gemm_layers.csv"), "--data", str(data / "traces" / "gpt_b8.pt.trace.json.gz")]
    assert fit_cli.main([*args, "--out", str(tmp_path), "--quiet"]) == 0
    doc = json.loads((tmp_path / "h100-sxm.json").read_text())
    assert "gpt_b8.pt.trace.json.gz" in doc["dataset"]["sources"] and " + " in doc["dataset"]["path"]
    (launched,) = doc["launched"]
    assert launched["versions"]["torch_version"] == "2.11.0+cu130" and "gemm" in launched["choosers"]
    assert set(launched["choosers"]["gemm"]["labels"]) <= set(doc["variants"])


def test_the_variant_choice_of_each_family_is_said():
    from seer import fitsfile

    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    lines = fit_cli.choice_lines(doc)
    several = [k for k, d in doc["choosers"].items() if len(d["labels"]) > 1]
    assert len(lines) == len(several) and all(any(k in ln for ln in lines) for k in several)
    trees = [k for k, d in doc["choosers"].items() if "trees" in d]
    assert trees and all("classification tree" in next(ln for ln in lines if f"{k}:" in ln) for k in trees)
    assert fit_cli.choice_lines({"choosers": {}}) == []
