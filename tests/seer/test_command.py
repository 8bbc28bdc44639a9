"""The `seer` command: subcommands that run the python -m tools under their own name, a light
`seer --help`, and one line for an unknown subcommand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from seer import command

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "data" / "h100-sxm" / "traces" / "gpt_b1.pt.trace.json.gz"


def _seer(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "seer.command", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_help_lists_every_subcommand_in_one_line_each(capsys):
    assert command.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("fit", "evaluate", "predict", "trace", "collect", "run"):
        (line,) = [ln for ln in out.splitlines() if ln.startswith(f"  {name} ")]
        assert len(line.split()) > 3  # a name and a sentence
    assert command.main([]) == 2 and "subcommands:" in capsys.readouterr().err


def test_help_is_light():
    """`seer --help` loads neither pandas nor statsmodels: it answers at Python's start-up speed."""
    code = (
        "import sys\nfrom seer import command\ncommand.main(['--help'])\n"
        "heavy = [m for m in ('pandas', 'statsmodels', 'scipy', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", ["fit", "evaluate", "predict", "trace", "collect", "run"])
def test_subcommand_help_is_the_tools_under_the_seer_name(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        command.main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: seer {name} ") and "python -m seer" not in out.split("\n\n")[0]


def test_the_python_m_tools_keep_their_names(capsys):
    from seer.predict.__main__ import main

    with pytest.raises(SystemExit):
        main(["--help"])
    assert capsys.readouterr().out.startswith("usage: python -m seer.predict ")


def test_unknown_subcommand_is_one_line_with_a_suggestion(capsys):
    assert command.main(["predcit"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown subcommand 'predcit'" in err and "did you mean 'predict'" in err


def test_version(capsys):
    from seer import __version__

    assert command.main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"seer {__version__}"


def test_trace_runs_seer_predict_on_a_trace():
    r = _seer("trace", str(TRACE), "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "predicted whole model" in r.stdout and "linear#" in r.stdout
    r = _seer("trace", str(ROOT / "no-such.csv"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "expected a profiler trace" in r.stderr


def test_collect_is_cudnn_bench_collect(capsys):
    """Bad input is cudnn_bench's one line and exit 2 (without a GPU, collect itself ends the same way)."""
    with pytest.raises(SystemExit) as exit_:
        command.main(["collect", "--suite", "resnet"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cudnn_bench: ") and "resnet" in err


def test_collect_without_a_gpu_is_one_sentence_and_exit_2():
    from fakes import has_driver

    if has_driver():
        pytest.skip("this machine has an NVIDIA driver")
    r = _seer("collect", "--suite", "gemm_grid", "--budget", "1m")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "GPU" in r.stderr, r.stderr
