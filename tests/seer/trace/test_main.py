"""python -m seer.trace: the verbs from the command line, bad input as one line and exit code 2."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from seer.trace.__main__ import main


def test_summary_prints_the_table_and_writes_json_and_csv(h100, tmp_path, capsys):
    trace = str(h100 / "gpt_b1.pt.trace.json.gz")
    assert main(["summary", trace, "--top", "4", "--out", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "The 4 longest kernels" in out and "furthest" in out and "GPU time" in out
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["totals"]["gpu_ms"] > 0 and doc["kernels"][0]["total_ms"] > 0 and len(doc["furthest"]) == 4
    assert main(["summary", trace, "--out", str(tmp_path / "s.csv"), "--no-progress"]) == 0
    rows = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert len(rows) == len(doc["kernels"]) and "predicted_ms" in rows[0]


def test_augment_writes_gzip_where_the_name_says(h100, tmp_path, capsys):
    out = tmp_path / "t.json.gz"
    assert main(["augment", str(h100 / "gpt_b1.pt.trace.json.gz"), "--out", str(out)]) == 0
    assert "GPU events with seer_ args" in capsys.readouterr().out
    doc = json.loads(gzip.decompress(out.read_bytes()))
    assert any("seer_flops" in e.get("args", {}) for e in doc["traceEvents"])


def test_diff_writes_both_tables(h100, tmp_path, capsys):
    a, b = (str(h100 / f"gpt_b{n}.pt.trace.json.gz") for n in (1, 8))
    assert main(["diff", a, b, "--top", "3", "--out", str(tmp_path / "d.csv")]) == 0
    out = capsys.readouterr().out
    assert "ops whose time changed most" in out and "B - A" in out
    levels = {r["level"] for r in csv.DictReader((tmp_path / "d.csv").open())}
    assert levels == {"kernel", "op"}


def test_seer_trace_takes_the_verbs_and_stays_seer_predict_without(h100, capsys):
    from seer import command

    trace = str(h100 / "gpt_b1.pt.trace.json.gz")
    assert command.main(["trace", "summary", trace, "--top", "2"]) == 0
    assert "The 2 longest kernels" in capsys.readouterr().out
    assert command.main(["trace", trace, "--top", "2"]) == 0
    assert "predicted whole model" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["summary", "no-such.json"], "expected an existing trace file"),
        (["summary", "graph.csv"], "expected a profiler trace"),
        (["summary", "{bad}", "--out", "x.txt"], "--out must end in"),
        (["augment", "{bad}", "--out", "x.gz"], "--out must end in .json or .json.gz"),
        (["summary", "{bad}", "--top", "-1"], "--top must be >= 0"),
        (["summary", "{bad}"], "not valid JSON"),
        (["diff", "{bad}", "no-such.json"], "expected an existing trace file"),
        (["summary", "{bad}", "--gpu", "gtx-9999"], "gtx-9999"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, msg, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text('{"traceEvents": [')
    argv = [a.replace("{bad}", str(tmp_path / "bad.json")) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("seer.trace: ") and msg in err, err


def test_help_names_the_verbs(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(v in out for v in ("summary", "augment", "diff")) and "Perfetto" in out
