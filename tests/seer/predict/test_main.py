"""python -m seer.predict on bad inputs: every problem is one line on stderr and exit code 2, and a
FIFO (or device) given as a graph, its JSON, a trace or an execution trace is refused before it is
opened: reading one would block forever."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest
from badfiles import WATCHDOG_S, unblocking

from seer.predict.__main__ import main

REPO = Path(__file__).resolve().parents[3]
H100 = REPO / "data" / "h100-sxm" / "traces"
BLOCK = "{'nn_module_stack': OrderedDict([('m.h.0', <class 'Block'>)])}"
GRAPH = f"""op,target,Name,input_shapes,output_shape,dtype,latency,meta
placeholder,x,x,[],"(2, 16)",torch.float32,0.0,{{}}
call_function,tanh,tanh,"[[2, 16]]","(2, 16)",torch.float32,0.1,"{BLOCK}"
output,output,output,"[[2, 16]]","(2, 16)",torch.float32,0.0,{{}}
"""


def _graph(folder: Path, meta: dict | None = None) -> Path:
    gpu = folder / "Tesla_T4"
    gpu.mkdir(parents=True, exist_ok=True)
    (gpu / "g.csv").write_text(GRAPH)
    if meta is not None:
        (gpu / "g.json").write_text(json.dumps(meta))
    return gpu / "g.csv"


def _one_line_error(capsys, rc: int) -> str:
    cap = capsys.readouterr()
    assert rc == 2 and cap.err.count("\n") == 1 and "Traceback" not in cap.err, cap.err
    return cap.err


def test_fifo_inputs_are_refused_before_opening(tmp_path, capsys):
    fifo_trace, fifo_graph, fifo_et = tmp_path / "t.json", tmp_path / "g.csv", tmp_path / "et.json"
    graph = _graph(tmp_path / "graphs")  # a good graph whose JSON is a FIFO
    fifo_meta = graph.with_suffix(".json")
    trace = tmp_path / "ok.json.gz"
    trace.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode()))
    for fifo in (fifo_trace, fifo_graph, fifo_et, fifo_meta):
        os.mkfifo(fifo)
    for fifo, argv in (
        (fifo_trace, [str(fifo_trace)]),
        (fifo_graph, [str(fifo_graph)]),
        (fifo_meta, [str(graph)]),
        (fifo_et, [str(trace), "--et", str(fifo_et)]),
    ):
        start = time.monotonic()
        with unblocking(fifo):
            err = _one_line_error(capsys, main(argv))
        assert time.monotonic() - start < WATCHDOG_S
        assert err.endswith(f"{fifo}: expected a regular file or folder, not a FIFO, socket or device\n"), err


def test_bad_graph_and_trace_values_are_one_line(tmp_path, capsys):
    err = _one_line_error(capsys, main([str(_graph(tmp_path / "a", {"num_layer": "abc"}))]))
    assert "g.json, column 'num_layer': expected a whole number of layers from 1 to 10000, got 'abc'" in err
    err = _one_line_error(capsys, main([str(_graph(tmp_path / "b"))]))
    assert "g.json: expected the graph's JSON beside g.csv with num_layer" in err  # not one layer, silently
    if not (H100 / "gpt_b1.pt.trace.json.gz").exists():
        pytest.skip("no bundled H100 traces")
    doc = json.loads(gzip.decompress((H100 / "gpt_b1.pt.trace.json.gz").read_bytes()))
    i = next(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel")
    doc["traceEvents"][i]["dur"] = -5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    err = _one_line_error(capsys, main([str(bad)]))
    assert f"bad.json, event {i}, column 'dur': expected a duration in us, a finite number >= 0" in err
    other_model = ["--et", str(H100 / "resnet_b1.et.json.gz")]
    err = _one_line_error(capsys, main([str(H100 / "gpt_b1.pt.trace.json.gz"), *other_model]))
    assert "resnet_b1.et.json.gz: expected the execution trace of the run profiled in gpt_b1.pt.trace.json.gz" in err


# ---- --out: CSV, JSON, stdout -------------------------------------------------------------------------------

TRACE = H100 / "gpt_b8.pt.trace.json.gz"


def test_out_json_holds_the_totals_and_the_ops_with_their_sites(tmp_path, capsys):
    assert main([str(TRACE), "--top", "2", "--out", str(tmp_path / "ops.json")]) == 0
    assert "wrote" in capsys.readouterr().out
    doc = json.loads((tmp_path / "ops.json").read_text())
    assert doc["gpu"] == "NVIDIA H100 80GB HBM3" and doc["totals"]["predicted_ms"] > 0
    ops = doc["ops"]
    assert {"name", "site", "shapes", "measured_ms", "predicted_ms"} <= set(ops[0])
    addmm = [o for o in ops if o["name"] == "addmm"]
    assert len(addmm) == 16 and len({o["site"] for o in addmm}) == 16


def test_out_dash_writes_the_table_to_stdout_and_the_report_to_stderr(capsys):
    import pandas as pd

    assert main([str(TRACE), "--out", "-"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["ops"] and "predicted whole model" in cap.err
    assert main([str(TRACE), "--out", "-", "--format", "csv"]) == 0
    from io import StringIO

    table = pd.read_csv(StringIO(capsys.readouterr().out))
    assert list(table.columns[:3]) == ["name", "site", "shapes"] and len(table) > 50


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--out", "x.txt"], "--out must end in .json or .csv"),
        (["--format", "csv"], "give --out FILE or --out -"),
        (["--out", "x.json", "--format", "csv"], "--out must end in .csv"),
    ],
)
def test_bad_out_is_one_line_before_the_work(args, msg, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert msg in _one_line_error(capsys, main([str(TRACE), *args]))


def test_trace_mode_refuses_a_graph(tmp_path, capsys):
    from seer.predict.__main__ import trace_main

    err = _one_line_error(capsys, trace_main([str(_graph(tmp_path))]))
    assert err.startswith("seer.trace: ") and "expected a profiler trace" in err


def test_hf_config_is_predicted_from_the_command_line(tmp_path, capsys):
    pytest.importorskip("transformers")
    config = tmp_path / "tiny.json"
    config.write_text('{"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 256}')
    out = tmp_path / "ops.json"
    assert main(["--hf", str(config), "--batch", "2", "--seq", "16", "--train", "--gpu", "t4", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {op["direction"] for op in doc["ops"]} == {"forward", "backward", "optimizer"}
    assert doc["totals"]["predicted_ms"] > 0
    assert main(["--hf", str(config), "model.csv"]) == 2  # a file and a live model: one model only
    assert "give one model" in capsys.readouterr().err
