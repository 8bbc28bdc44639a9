import json
import subprocess
import sys

import pandas as pd
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
    assert doc["schema"] == "seer.fits/1" and doc["date"] == "2026-01-01"
    assert doc["dataset"]["rows"] == len(rec) and len(doc["dataset"]["content_sha256"]) == 64
    v = doc["variants"]["bmm:default:sgemm_128x64_nn"]
    assert v["b_max"] == 80 and v["b_max_source"] == "wave staircase of training rows"
    assert len(v["compute"]["coef"]) == len(v["compute"]["se"]) == len(v["compute"]["features"])


def test_cli_table_and_warnings(tmp_path):
    rec = pd.concat([conv_records(100), gemm_records(12)], ignore_index=True)  # 9 bmm training rows
    records.write_csv(rec, tmp_path / "d.csv")
    r = subprocess.run([sys.executable, "-m", "seer.fit", "--data", str(tmp_path / "d.csv"), "--out",
                        str(tmp_path / "f")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "cv_rmspe%" in r.stdout and "conv_fwd:IMPLICIT_PRECOMP_GEMM" in r.stdout
    assert "warning: t4 bmm:default:sgemm_128x64_nn: only 9 training rows" in r.stderr


def test_cli_bad_input_exit_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,op,time_ms\nTesla T4,conv_fwd,-1\n")
    for args in (["--data", str(bad)], ["--data", str(tmp_path / "missing.csv")]):
        r = subprocess.run([sys.executable, "-m", "seer.fit", *args, "--out", str(tmp_path)],
                           capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith("seer.fit: ") and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
