"""Bad input to the seer commands: one line on stderr, exit code 2 (130 for Ctrl-C), checked
before any long work, and nothing half-written."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from synthetic import conv_records, gemm_records

from seer import fit
from seer.__main__ import main as seer_main
from seer.data import records
from seer.evaluate import __main__ as evaluate_cli
from seer.fit import __main__ as fit_cli


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    records.write_csv(pd.concat([conv_records(60), gemm_records(60)], ignore_index=True), d / "d.csv")
    records.write_csv(gemm_records(60), d / "gemm.csv")
    (d / "header_only.csv").write_text(",".join(records.COLUMNS) + "\n")
    (d / "a_file").write_text("not a folder\n")
    return d


def one_line_error(capsys, *words):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


def test_empty_data_argument_is_refused(capsys):
    """An empty --data used to fit the default data set silently."""
    for main in (fit_cli.main, lambda a: evaluate_cli.main(["--set", "I", *a])):
        with pytest.raises(SystemExit) as e:
            main(["--data", ""])
        assert e.value.code == 2
        assert "--data: is empty" in capsys.readouterr().err


def test_fit_checks_out_before_fitting(data, capsys, monkeypatch):
    monkeypatch.setattr(fit, "fit_all", lambda *a, **k: pytest.fail("fitted before checking --out"))
    assert fit_cli.main(["--data", str(data / "d.csv"), "--out", str(data / "a_file"), "--quiet"]) == 2
    one_line_error(capsys, "--out", "a_file", "is a file, not a folder")
    assert fit_cli.main(["--data", str(data / "d.csv"), "--out", str(data / "a_file" / "sub")]) == 2
    one_line_error(capsys, "--out", "cannot be written")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_fit_read_only_out(data, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert fit_cli.main(["--data", str(data / "d.csv"), "--out", str(ro), "--quiet"]) == 2
        one_line_error(capsys, "cannot be written")
    finally:
        ro.chmod(0o755)


def test_main_job_checks_out_first(data, capsys):
    from seer.cli import run

    assert run(lambda: seer_main(["--out", str(data / "a_file")]), "seer") == 2
    one_line_error(capsys, "seer: --out", "is a file")


def test_evaluate_outputs_checked_first(data, capsys):
    base = ["--set", "I", "--data", str(data / "d.csv")]
    assert evaluate_cli.main([*base, "--plots", str(data / "a_file" / "plots")]) == 2
    one_line_error(capsys, "--plots", "cannot be written")
    assert evaluate_cli.main([*base, "--out", str(data / "a_file" / "x.json")]) == 2
    one_line_error(capsys, "the folder of --out", "is a file")
    assert evaluate_cli.main([*base, "--out", str(data / "x.txt")]) == 2
    one_line_error(capsys, "--out must end in .json or .csv")


def test_evaluate_sets_without_their_rows(data, capsys):
    assert evaluate_cli.main(["--set", "II", "--data", str(data / "gemm.csv")]) == 2
    one_line_error(capsys, "no convolution rows", "gemm.csv")
    assert evaluate_cli.main(["--set", "noise", "--data", str(data / "header_only.csv")]) == 2
    one_line_error(capsys, "header_only.csv", "noise floor")
    assert evaluate_cli.main(["--set", "I", "--data", str(data / "header_only.csv")]) == 2
    one_line_error(capsys, "header_only.csv", "Test-set-I")


def test_ctrl_c_during_fit_is_one_line(neusight_path, tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while GPUs are being
    fitted in worker processes: exit 130, one line, no traceback, no temporary files left."""
    out = tmp_path / "fits"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "seer.fit",
            "--data",
            str(neusight_path / "bmm"),
            "--out",
            str(out),
            "--quiet",
            "--jobs",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # as from a terminal: pytest run as a background job (`... &`) passes SIGINT on ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    line = p.stdout.readline()  # "fitting <gpu>: ..." once the data is loaded
    assert line.startswith("fitting"), line
    time.sleep(1.5)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and err.strip() == "seer.fit: interrupted; nothing half-written is left behind"
    assert not out.exists() or not [f for f in out.iterdir() if f.name.startswith(".")]
