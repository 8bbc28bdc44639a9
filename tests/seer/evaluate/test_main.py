import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from synthetic import conv_records, gemm_records

from seer import fitsfile
from seer.data import records
from seer.evaluate import __main__ as evaluate_cli
from seer.evaluate.metrics import ACCURACY_KEYS
from seer.fit import __main__ as fit_cli


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    d = tmp_path_factory.mktemp("ev")
    rec = pd.concat([conv_records(300), gemm_records(400)], ignore_index=True)
    records.write_csv(rec, d / "data.csv")
    assert fit_cli.main(["--data", str(d / "data.csv"), "--out", str(d / "fits"), "--quiet"]) == 0
    return d


def test_set_one_json_and_plots(fitted, capsys):
    out = fitted / "set1.json"
    rc = evaluate_cli.main(
        [
            "--set",
            "I",
            "--data",
            str(fitted / "data.csv"),
            "--fits",
            str(fitted / "fits"),
            "--by",
            "variant",
            "--out",
            str(out),
            "--plots",
            str(fitted / "plots"),
        ]
    )
    assert rc == 0
    doc = json.loads(out.read_text())
    assert set(doc["overall"]) == set(ACCURACY_KEYS)
    assert doc["overall"]["median_ape"] < 0.03  # the synthetic laws are learnable to the noise
    assert "Tesla T4/bmm" in doc["op"] and "overall" in doc["variant"]
    for png in ("set1_predicted_vs_measured.png", "set1_error_histogram.png"):
        assert (fitted / "plots" / png).stat().st_size > 1000
    assert "per variant" in capsys.readouterr().out


def test_set_one_by_algo_says_where_the_error_lies(fitted, capsys):
    out = fitted / "set1_algo.json"
    args = ["--set", "I", "--data", str(fitted / "data.csv"), "--fits", str(fitted / "fits"), "--by", "algo"]
    assert evaluate_cli.main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Where the error lies, per algorithm" in printed and "Where the rows lie, per algorithm" in printed
    naming = json.loads(out.read_text())["algo_naming"]
    over, algo = naming["overall"], naming["Tesla T4/conv_fwd/IMPLICIT_GEMM"]
    assert over["n"] == json.loads(out.read_text())["overall"]["n"]
    assert 0.5 < algo["named_right"] <= 1 and algo["rmspe_named_right"] <= algo["rmspe"] + 1e-12
    coverage = json.loads(out.read_text())["algo_coverage"]
    assert coverage["overall"]["n"] == over["n"]
    assert 0 <= coverage["overall"]["beyond"] < 1  # some test row lies near training rows


def test_set_one_csv(fitted):
    out = fitted / "set1.csv"
    assert (
        evaluate_cli.main(
            ["--set", "I", "--data", str(fitted / "data.csv"), "--fits", str(fitted / "fits"), "--out", str(out)]
        )
        == 0
    )
    t = pd.read_csv(out)
    assert {"table", "median_ape", "rmspe"} <= set(t.columns) and "op_known_variant" in set(t["table"])


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--set", "I", "--fits", "/nonexistent"], "no fits for t4"),
        (["--set", "I", "--out", "x.txt"], "must end in .json or .csv"),
        (["--set", "III"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_exit_2(fitted, args, msg):
    base = ["--data", str(fitted / "data.csv"), "--fits", str(fitted / "fits")]
    r = subprocess.run([sys.executable, "-m", "seer.evaluate", *base, *args], capture_output=True, text=True)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr


def test_noise_set(fitted, capsys):
    assert evaluate_cli.main(["--set", "noise", "--data", str(fitted / "data.csv")]) == 0
    assert "median_dev" in capsys.readouterr().out


V100 = fitsfile.FITS_DIR / "v100-pcie.json"
needs_v100 = pytest.mark.skipif(not V100.exists(), reason="no bundled v100-pcie fits")


@needs_v100
def test_fits_of_another_gpu_do_not_score_the_data(fitted, capsys):
    rc = evaluate_cli.main(["--set", "I", "--data", str(fitted / "data.csv"), "--fits", str(V100)])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "holds the fits of Tesla V100-PCIE-32GB (v100-pcie) but the data is Tesla T4's (t4)" in err[0]


@needs_v100
@pytest.mark.filterwarnings("ignore::UserWarning")  # the V100's bounds on T4 times: expected here
def test_gpu_scores_another_gpus_data_on_purpose_and_says_so(fitted, capsys):
    rc = evaluate_cli.main(["--set", "I", "--data", str(fitted / "data.csv"), "--fits", str(V100), "--gpu", "t4"])
    assert rc == 0
    out = capsys.readouterr().out
    assert out.count("note: Tesla T4 data (t4, --gpu t4) is scored with the fits of Tesla V100-PCIE-32GB") == 1


@pytest.mark.parametrize("name", ["fits.json", "fits"])  # a file's name, or a folder's
def test_a_fifo_as_fits_is_refused_without_blocking(fitted, tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    r = subprocess.run(
        [sys.executable, "-m", "seer.evaluate", "--set", "I", "--data", str(fitted / "data.csv"), "--fits", str(fifo)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .endswith(f"{fifo}: expected a regular file or folder, not a FIFO, socket or device")
    )


@pytest.mark.parametrize("limit", ["-5", "nan", "lots"])
def test_a_negative_workspace_limit_is_refused(limit, capsys):
    with pytest.raises(SystemExit) as info:
        evaluate_cli.main(["--set", "II", "--workspace-limit", limit])
    assert info.value.code == 2 and "--workspace-limit: expected a number of bytes >= 0" in capsys.readouterr().err


def test_an_unknown_gpu_lists_the_known_ones(capsys):
    """--gpu rtx4090 used to say only that there were no rows of it; the known GPUs are listed."""
    assert evaluate_cli.main(["--set", "I", "--gpu", "rtx4090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown GPU 'rtx4090': seer knows a10," in err and "bundled fits: " in err


def test_set_one_leaves_out_rows_of_a_filter_shape_their_algorithm_never_trained_on(fitted):
    """A shape whose every row of an algorithm fell in Test-set-I: predict refuses it (the fits
    say the algorithm never ran it), so Test-set-I leaves those rows out instead of stopping."""
    from seer.evaluate import set_one
    from seer.predict import load

    fits = load(fitted / "fits" / "t4.json")
    rows = conv_records(20, seed=9)
    rows = rows[(rows["algo"] == "WINOGRAD_NONFUSED")].assign(status="ok")
    one = rows.assign(kh=1, kw=1, pad_h=0, pad_w=0, stride_h=1, stride_w=1)  # Winograd never ran 1x1 here
    three = rows.assign(kh=3, kw=3, pad_h=1, pad_w=1, stride_h=1, stride_w=1)
    both = pd.concat([one, three], ignore_index=True)
    unseen = set_one._unseen_shapes(fits, "conv_fwd", both)
    assert unseen[: len(one)].all() and not unseen[len(one) :].any()


def test_set_one_scores_the_other_rows_where_some_shapes_are_unseen(fitted, monkeypatch):
    from seer.evaluate import set_one

    rec = records.load(fitted / "data.csv")
    whole = set_one.test_set_one(rec, fitted / "fits", log=lambda s: None)
    notes = []
    monkeypatch.setattr(set_one, "_unseen_shapes", lambda f, op, sub: (sub["algo"] == "GEMM").to_numpy())
    part = set_one.test_set_one(rec, fitted / "fits", log=notes.append)
    conv = part["op"] == "conv_fwd"
    assert part.loc[conv & (part["algo"] == "GEMM"), "pred_config"].isna().all()
    assert part.loc[conv & (part["algo"] != "GEMM"), "pred_config"].notna().all()
    assert part["pred_config"].notna().sum() < whole["pred_config"].notna().sum()
    assert any("filter shape in no training row" in n for n in notes)
