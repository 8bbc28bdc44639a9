"""python -m cudnn_bench.torch_traces: one sentence and exit 2 without torch, without a GPU and
on bad arguments; the --batches forms; and, where torch is installed, a tiny CPU recording whose
Kineto trace has ProfilerStep# ranges and shaped cpu_op events and is listed in traces.json."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_bench import torch_traces as T

ROOT = Path(__file__).resolve().parents[2]


def _exit_code(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        T.main(argv)
    return info.value.code


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_module_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; import cudnn_bench.torch_traces as t; "
            "assert 'torch' not in [m for m, v in sys.modules.items() if v is not None]")
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def test_no_torch_is_one_sentence_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    assert _exit_code(["--out", str(tmp_path / "t")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("cudnn_bench.torch_traces: PyTorch is not installed")
    assert not (tmp_path / "t").exists()


def test_no_torch_in_a_subprocess(tmp_path):
    code = ("import sys; sys.modules['torch'] = None; from cudnn_bench.torch_traces import main; "
            f"raise SystemExit(main(['--out', {str(tmp_path)!r}]))")
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "PyTorch is not installed" in _one_line(r.stderr)


def test_help_explains_batches():
    r = subprocess.run([sys.executable, "-m", "cudnn_bench.torch_traces", "--help"], check=False, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for word in ("--out", "--batches", "gpt=1,8;resnet=1,32", "--steps", "--device", "--no-et"):
        assert word in r.stdout
    assert "--tiny" not in r.stdout


@pytest.mark.parametrize("args", [
    [],                                   # --out missing
    ["--steps", "0"],
    ["--steps", "x"],
    ["--timed", "-1"],
    ["--models", "vgg"],
    ["--models", ""],
    ["--batches", "0"],
    ["--batches", "1,a"],
    ["--batches", "gpt=0"],
    ["--batches", "bert=1"],
    ["--batches", "gpt"],
    ["--device", "tpu"],
])
def test_bad_argument_is_one_line_and_exit_2(args, tmp_path, capsys):
    argv = args if not args else ["--out", str(tmp_path), *args]
    assert _exit_code(argv) == 2
    assert _one_line(capsys.readouterr().err).startswith("cudnn_bench.torch_traces: ")


def test_batches_forms():
    parse = T.build_parser().parse_args
    default = parse(["--out", "x"])
    assert T.batches_for("gpt", default.batches) == (1, 8)
    assert T.batches_for("resnet", default.batches) == (1, 32)
    every = parse(["--out", "x", "--batches", "2, 4"])
    assert T.batches_for("gpt", every.batches) == T.batches_for("resnet", every.batches) == (2, 4)
    per = parse(["--out", "x", "--batches", "gpt=1,16;"])
    assert T.batches_for("gpt", per.batches) == (1, 16)
    assert T.batches_for("resnet", per.batches) == (1, 32)
    assert parse(["--out", "x", "--models", "resnet,GPT,resnet"]).models == ("resnet", "gpt")


def test_cuda_without_a_gpu_is_one_sentence_and_exit_2(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    assert _exit_code(["--out", str(tmp_path), "--device", "cuda"]) == 2
    assert "--device cpu" in _one_line(capsys.readouterr().err)


def _events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def test_tiny_cpu_recording(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "traces"
    argv = ["--out", str(out), "--device", "cpu", "--tiny", "--batches", "gpt=2;resnet=1",
            "--steps", "2", "--timed", "3", "--warmup", "1", "--modes", "inference"]
    assert T.main(argv) == 0
    printed = capsys.readouterr().out
    index = json.loads((out / "traces.json").read_text())
    assert [(e["model"], e["batch"]) for e in index] == [("gpt", 2), ("resnet", 1)]
    for entry in index:
        trace = out / entry["file"]
        assert trace.name == f"{entry['model']}_b{entry['batch']}.pt.trace.json.gz"
        assert trace.name in printed and "ms/step" in printed
        assert entry["steps"] == 2 and entry["dtype"] == "float32" and entry["median_ms_per_step"] > 0
        assert entry["flags"]["cuda.matmul.allow_tf32"] is False
        assert entry["flags"]["cudnn.allow_tf32"] is False and entry["flags"]["cudnn.benchmark"] is False
        assert entry["torch"] and "cudnn" in entry and "gpu" in entry and entry["config"]
        events = _events(trace)
        steps = {e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
        assert len(steps) == 2
        shaped = [e for e in events if e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {})]
        assert shaped
        names = {e["name"] for e in shaped}
        if entry["model"] == "gpt":
            assert {"aten::matmul", "aten::softmax", "aten::linear", "aten::layer_norm"} <= names
            assert {"aten::masked_fill", "aten::gelu"} <= names
            matmul = next(e for e in shaped if e["name"] == "aten::matmul")
            assert matmul["args"]["Input Dims"][0][0] == 2  # the batch
        else:
            assert {"aten::conv2d", "aten::batch_norm", "aten::max_pool2d", "aten::linear"} <= names
        if entry["execution_trace"]:  # optional: skipped with a note where the observer fails
            with gzip.open(out / entry["execution_trace"], "rt") as f:
                assert json.load(f)["nodes"]


def test_tiny_cpu_training_steps_and_a_rerun_keeps_what_is_there(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "traces"
    argv = ["--out", str(out), "--device", "cpu", "--tiny", "--batches", "1", "--models", "resnet",
            "--steps", "1", "--timed", "1", "--warmup", "1", "--no-et"]  # fmt: skip
    assert T.main(argv) == 0
    index = json.loads((out / "traces.json").read_text())
    assert [e["file"] for e in index] == ["resnet_b1.pt.trace.json.gz", "resnet_b1_train.pt.trace.json.gz"]
    assert index[1]["mode"].startswith("training")
    names = {e.get("name", "") for e in _events(out / index[1]["file"])}
    assert "autograd::engine::evaluate_function: ConvolutionBackward0" in names  # the backward ...
    assert any(n.startswith("Optimizer.step#SGD.step") for n in names)  # ... and the optimizer step
    (out / index[0]["file"]).unlink()  # a rerun records only what is missing
    capsys.readouterr()
    assert T.main(argv) == 0
    printed = capsys.readouterr().out
    assert "resnet_b1_train: recorded before, kept" in printed and "resnet_b1.pt.trace.json.gz:" in printed
    assert {e["file"] for e in json.loads((out / "traces.json").read_text())} == {e["file"] for e in index}
