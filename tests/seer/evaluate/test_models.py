"""--set models: each graph is timed by the fits of its own GPU (the folder names it), or by
another GPU's only when --gpu chose the graphs (and the output says so).

Bad input files (a graph's JSON, NeuSight's predictions beside the graphs) malformed or a FIFO:
one line and exit code 2, never a traceback, a hang or a comparison against wrong numbers."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from badfiles import WATCHDOG_S, unblocking

from seer import fitsfile
from seer.errors import SeerError
from seer.evaluate import __main__ as evaluate_cli
from seer.evaluate.models import default_graphs

V100 = fitsfile.FITS_DIR / "v100-pcie.json"


@pytest.fixture(scope="module")
def t4_graph(tmp_path_factory) -> Path:
    """Two T4 graphs of NeuSight's (.csv and .json each) in a folder of their own."""
    try:
        src = default_graphs() / "Tesla_T4"
    except SeerError as exc:
        pytest.skip(str(exc))
    if not src.is_dir() or not V100.exists():
        pytest.skip("no T4 graphs or no bundled v100-pcie fits")
    root = tmp_path_factory.mktemp("graphs")
    (root / "Tesla_T4").mkdir()
    for f in sorted(src.glob("bert_large-inf-512-*")):
        shutil.copy(f, root / "Tesla_T4" / f.name)
    return root


def test_another_gpus_fits_do_not_time_the_graphs(t4_graph, capsys):
    assert evaluate_cli.main(["--set", "models", "--data", str(t4_graph), "--fits", str(V100)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds the fits of Tesla V100-PCIE-32GB (v100-pcie) but the data is Tesla T4's" in err[0]


@pytest.mark.filterwarnings("ignore::UserWarning")  # the V100's bounds on T4 times: expected here
def test_gpu_times_the_graphs_with_another_gpus_fits_and_says_so(t4_graph, capsys):
    assert evaluate_cli.main(["--set", "models", "--data", str(t4_graph), "--fits", str(V100), "--gpu", "t4"]) == 0
    out = capsys.readouterr().out
    assert out.count("note: Tesla T4 data (t4, --gpu t4) is scored with the fits of Tesla V100-PCIE-32GB") == 1


def test_each_model_once_and_per_gpu_figures_in_the_json(t4_graph, tmp_path, capsys):
    """A graph's result is printed once (it was also logged while timing it, under the GPU's other
    spelling), and the JSON holds per-GPU accuracy, seer's and NeuSight's (python -m seer's headline)."""
    out = tmp_path / "models.json"
    assert evaluate_cli.main(["--set", "models", "--data", str(t4_graph), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("bert_large-inf-512-8 ") == 1 and text.count("bert_large-inf-512-16 ") == 1
    doc = json.loads(out.read_text())
    (t4,) = [r for r in doc["by_gpu"] if r["gpu"] != "overall"]
    apes = sorted(m["ape"] for m in doc["models"])
    assert t4["gpu"] == "Tesla T4" and t4["n"] == 2 and t4["median_ape"] == pytest.approx(sum(apes) / 2)
    assert [r["gpu"] for r in doc["by_gpu"]] == ["Tesla T4", "overall"]


# ------------------------------------------------------------------ bad input files
BLOCK = "{'nn_module_stack': OrderedDict([('m.h.0', <class 'Block'>)])}"
GRAPH = f"""op,target,Name,input_shapes,output_shape,dtype,latency,meta
placeholder,x,x,[],"(2, 16)",torch.float32,0.0,{{}}
call_function,tanh,tanh,"[[2, 16]]","(2, 16)",torch.float32,0.1,"{BLOCK}"
output,output,output,"[[2, 16]]","(2, 16)",torch.float32,0.0,{{}}
"""


def _layout(root: Path, predictions: str | None = None) -> tuple[Path, Path]:
    """graphs/Tesla_T4/g.{csv,json} and, given its text, neusight-predictions/Tesla_T4/g.csv beside."""
    gpu = root / "graphs" / "Tesla_T4"
    gpu.mkdir(parents=True)
    (gpu / "g.csv").write_text(GRAPH)
    (gpu / "g.json").write_text(json.dumps({"num_layer": 2, "e2e_latency": 0.5}))
    ns = root / "neusight-predictions" / "Tesla_T4"
    ns.mkdir(parents=True)
    if predictions is not None:
        (ns / "g.csv").write_text(predictions)
    return root / "graphs", ns / "g.csv"


def _one_line(capsys, rc: int) -> str:
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "predictions,expected",
    [
        (
            "Name,fw_latency\nx,0\ntanh,-2\n",
            "g.csv, line 3, column 'fw_latency': expected a predicted time in ms >= 0, got -2",
        ),
        ("Name,fw_latency\nx,0\ntanh,soon\n", "column 'fw_latency': expected a predicted time in ms >= 0, got 'soon'"),
        ("Name,fw_latency\nx,0\nx,0.1\n", "g.csv, line 3, column 'Name': expected each node once, got 'x'"),
        ("Name,OpName\nx,add\n", "g.csv, column 'fw_latency': expected a column named 'fw_latency'"),
        ("\n", "g.csv: expected NeuSight's per-node predictions (CSV), got an empty file"),
    ],
)
def test_bad_neusight_predictions_are_one_line(tmp_path, capsys, predictions, expected):
    graphs, _ = _layout(tmp_path, predictions)
    err = _one_line(capsys, evaluate_cli.main(["--set", "models", "--data", str(graphs)]))
    assert "neusight-predictions" in err and expected in err, err


@pytest.mark.parametrize("which", ["graph json", "predictions"])
def test_fifo_graph_json_and_predictions_are_refused_before_opening(tmp_path, capsys, which):
    graphs, predictions = _layout(tmp_path)
    fifo = predictions if which == "predictions" else graphs / "Tesla_T4" / "g.json"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    start = time.monotonic()
    with unblocking(fifo):
        err = _one_line(capsys, evaluate_cli.main(["--set", "models", "--data", str(graphs)]))
    assert time.monotonic() - start < WATCHDOG_S
    assert err.endswith(f"{fifo}: expected a regular file or folder, not a FIFO, socket or device\n"), err


@pytest.fixture(scope="module")
def l4_graph(t4_graph, tmp_path_factory) -> Path:
    """One of the T4 graphs relabelled to an L4, a GPU of the table without fits of its own."""
    root = tmp_path_factory.mktemp("graphs_l4")
    (root / "NVIDIA_L4").mkdir()
    for f in sorted((t4_graph / "Tesla_T4").glob("bert_large-inf-512-8.*")):
        shutil.copy(f, root / "NVIDIA_L4" / f.name)
    return root


def test_a_gpu_without_fits_gets_transferred_fits_and_says_so(l4_graph, tmp_path, capsys):
    """Where --set models stopped with 'no fits for l4', it times the L4's graph with fits moved
    from the bundled GPUs, as seer.predict does, and prints and writes which."""
    assert not (fitsfile.FITS_DIR / "l4.json").exists()
    out = tmp_path / "models.json"
    assert evaluate_cli.main(["--set", "models", "--data", str(l4_graph), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "NVIDIA L4: no fits of its own: transferred from " in text
    (row,) = json.loads(out.read_text())["models"]
    assert row["gpu"] == "NVIDIA L4" and row["fits"].startswith("no fits of its own: transferred from")
    assert row["predicted_ms"] > 0


def test_a_described_gpu_times_its_graphs(t4_graph, tmp_path, capsys):
    """A folder named by a GPU the table lacks: --gpu-info (nvidia-smi's CSV) plus --gpu 'sms=..'
    describe it; the note says what was assumed, and the fits are transferred."""
    root = tmp_path / "graphs"
    (root / "NVIDIA_GeForce_RTX_4070").mkdir(parents=True)
    for f in sorted((t4_graph / "Tesla_T4").glob("bert_large-inf-512-8.*")):
        shutil.copy(f, root / "NVIDIA_GeForce_RTX_4070" / f.name)
    smi = tmp_path / "smi.csv"
    smi.write_text(
        "name, compute_cap, clocks.max.sm [MHz], power.default_limit [W], memory.total [MiB]\n"
        "NVIDIA GeForce RTX 4070, 8.9, 2475 MHz, 200.00 W, 12282 MiB\n"
    )
    args = ["--set", "models", "--data", str(root), "--gpu-info", str(smi), "--gpu", "sms=46,dram_gbs=504"]
    assert evaluate_cli.main(args) == 0
    cap = capsys.readouterr()
    assert (
        "'NVIDIA GeForce RTX 4070' is not in seer's table" in cap.err and "L2 (48 MB) of NVIDIA L4 assumed" in cap.err
    )
    assert "NVIDIA GeForce RTX 4070: no fits of its own: transferred from " in cap.out
