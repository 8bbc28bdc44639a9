"""python -m cudnn_bench: help, the no-GPU and no-cuDNN paths (one sentence, exit 2), plan,
export-excel, and that nothing GPU is imported before it is needed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from badfiles import unreadable
from fakes import FakeBackend, has_driver

from cudnn_bench import __main__ as M
from cudnn_bench import collect as K
from cudnn_bench import libs
from cudnn_bench.plan import Budget
from seer.data import records

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "cudnn_bench", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_help():
    r = _run("--help")
    assert r.returncode == 0
    for cmd in ("collect", "plan", "counters", "census", "export-excel", "info"):
        assert cmd in r.stdout
    r = _run("collect", "--help")
    assert r.returncode == 0 and "--budget" in r.stdout and "--counters" in r.stdout and "--backend" in r.stdout


@pytest.mark.skipif(has_driver(), reason="this machine has an NVIDIA driver")
@pytest.mark.parametrize("args", [("collect",), ("collect", "--suite", "gemm_grid", "--budget", "1m"), ("info",),
                                  ("census", "--limit", "1")])
def test_no_gpu_is_one_sentence_and_exit_2(args):
    r = _run(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith("cudnn_bench: ") and "GPU" in lines[0]


def test_no_cudnn_is_one_sentence_and_exit_2(monkeypatch, capsys):
    import cudnn_bench.runtime as R

    monkeypatch.setattr(R, "open_backend", lambda name, ordinal: FakeBackend())
    monkeypatch.setattr(R.Nvml, "open", classmethod(lambda cls: None))
    monkeypatch.setattr(libs, "candidates", lambda kind: [])
    monkeypatch.setattr(libs, "_LOADED", {})
    assert M.main(["collect", "--suite", "test_set_ii", "--out", "/nonexistent/never-written"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cuDNN 9 was not found" in err[0]


@pytest.mark.parametrize("args", [("collect", "--math", "fp64"), ("collect", "--budget", "soon"),
                                  ("collect", "--suite", "resnet"), ("plan", "--max-bytes", "lots"),
                                  ("collect", "--algos", "0-9"), ("collect", "--workspace-limit", "big"),
                                  ("census", "--stop-after", "soon"), ("census", "--limit", "0"),
                                  ("frobnicate",)])
def test_bad_arguments_are_one_line_and_exit_2(args, capsys):
    with pytest.raises(SystemExit) as info:
        M.main(list(args))
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cudnn_bench: ")


def test_plan(capsys):
    assert M.main(["plan", "--suite", "test_set_ii", "--budget", "3", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("total: 3 configurations") for line in out)
    assert sum(1 for line in out if line.startswith("test_set_ii\tfma\t")) == 3


def test_default_plan_prints_minutes(capsys):
    assert M.main(["plan"]) == 0
    out = capsys.readouterr().out
    assert "total:" in out and "GPU minutes" in out


def test_export_excel(tmp_path, capsys):
    from fakes import fake_env

    opts = K.Options(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=3), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=3, min_reps=2))
    folder = K.run(opts, fake_env()).folder
    assert M.main(["export-excel", str(folder), "--out", str(tmp_path / "xl")]) == 0
    books = sorted((tmp_path / "xl").glob("*.xlsx"))
    assert books and any(b.name.startswith("IMPLICIT_PRECOMP_GEMM__main__xmma_fprop") for b in books)
    total = 0
    for b in books:
        df = records.read_seer_excel(b, gpu="NVIDIA H100 80GB HBM3")
        assert df["algo"].nunique() == 1 and set(df["split"]) <= {"train", "test"}
        total += len(df)
    src = records.read_csv(folder / "test_set_ii.csv")
    assert total == ((src["status"] == "ok") & (src["math"] == "fma")).sum()
    assert M.main(["export-excel", str(folder), "--out", str(tmp_path / "xl2"), "--math", "bf16"]) == 2


def test_importing_the_harness_imports_no_gpu_module():
    code = ("import sys, cudnn_bench.__main__, cudnn_bench.collect, cudnn_bench.ncu_pass, cudnn_bench.export, "
            "cudnn_bench.nvtx, cudnn_bench.runtime, cudnn_bench.cupti, cudnn_bench.env, cudnn_bench.runners, "
            "cudnn_bench.measure, cudnn_bench.oneshot, tests.fakes; "
            "print([m for m in ('pycuda', 'cupy', 'torch', 'cuda') if m in sys.modules])")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr


def test_seer_does_not_import_the_harness():
    code = ("import sys, pkgutil, importlib, seer\n"
            "for m in pkgutil.iter_modules(seer.__path__):\n"
            "    try:\n"
            "        importlib.import_module('seer.' + m.name) if m.name != '__main__' else None\n"
            "    except Exception:\n"
            "        pass\n"
            "print('cudnn_bench' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip().endswith("False"), r.stderr


def test_report(tmp_path, capsys):
    from fakes import fake_env

    opts = K.Options(out=tmp_path, suites=["test_set_ii", "gemm_layers"], budget=Budget(count=4),
                     progress=False, timing=K.TimingOptions(warmup=1, reps=3, min_reps=2))
    folder = K.run(opts, fake_env(), log=lambda s: None).folder
    assert M.main(["report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "test_set_ii [fma]: 2 configurations, 16 calls" in out and "gemm_layers [fma]" in out
    assert "per-kernel rows for 100% of ok calls" in out and "vs estimate" in out
    assert M.main(["report", "--data", str(folder)]) == 0  # the spelling of counters, too
    assert capsys.readouterr().out == out
    assert M.main(["report"]) == 2 and "give the data folder (DATA or --data DATA)" in capsys.readouterr().err
    assert M.main(["report", str(folder), "--data", str(tmp_path / "other")]) == 2
    assert "two data folders" in capsys.readouterr().err


def _subparsers(parser):
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sub.choices


def test_every_command_has_a_description_and_every_option_help():
    for name, parser in _subparsers(M.build_parser()).items():
        assert parser.description and len(parser.description) > 30, name
        for action in parser._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_help_does_not_load_the_collection_modules():
    """--help builds the parser only: collect, ncu, export and Ray stay unloaded until a command runs."""
    code = ("import sys\nfrom cudnn_bench.__main__ import main\n"
            "try:\n    main(['collect', '--help'])\nexcept SystemExit:\n    pass\n"
            "loaded = [m for m in ('cudnn_bench.collect', 'cudnn_bench.ncu_pass', 'cudnn_bench.export', "
            "'cudnn_bench.ray_collect', 'cudnn_bench.cudnn', 'ray') if m in sys.modules]\n"
            "assert not loaded, loaded\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_options_from_the_command_line():
    a = M.build_parser().parse_args(["collect", "--algos", "0,2,5-7", "--workspace-limit", "512MiB", "--math",
                                     "fma,bf16", "--budget", "300", "--stop-after", "9m", "--suite", "seer_grid"])
    o = M._options(a)
    assert o.algos == (0, 2, 5, 6, 7) and o.workspace_limit == 512 << 20 and o.maths == ["fma", "bf16"]
    assert o.budget.count == 300 and o.stop_after == 540 and o.suites == ["seer_grid"]
    assert o.counters == "sample" and o.launch_meta == "cupti" and o.backend == "auto"


@pytest.mark.parametrize("command", ["collect", "merge"])
@pytest.mark.parametrize("under", [False, True])
def test_an_out_that_is_a_file_is_refused_before_any_work(command, under, tmp_path, monkeypatch, capsys):
    def no_work(*args, **kw):
        raise AssertionError("work started before --out was checked")

    monkeypatch.setattr(K, "open_env", no_work)
    monkeypatch.setattr("cudnn_bench.merge.merge", no_work)
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    out = afile / "sub" if under else afile
    args = [command, "--out", str(out)] + ([str(tmp_path)] if command == "merge" else [])
    with pytest.raises(SystemExit) as info:
        M.main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cudnn_bench: ") and f"{afile} is a file, not a folder" in err[0]
    assert afile.read_text() == "not a folder\n"


def test_an_unreadable_store_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from fakes import fake_env

    opts = K.Options(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=2), progress=False,
                     counters="none", timing=K.TimingOptions(warmup=1, reps=3, min_reps=2))
    store = K.run(opts, fake_env(), log=lambda s: None).folder / "test_set_ii.csv"
    unreadable(monkeypatch, store)
    monkeypatch.setattr(K, "open_env", lambda *a, **kw: fake_env())
    args = ["collect", "--suite", "test_set_ii", "--budget", "2", "--counters", "none", "--no-progress"]
    assert M.main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cudnn_bench: {store}: Permission denied"]


def test_a_full_disk_before_the_first_configuration_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import errno
    import os

    from fakes import fake_env

    def full(*args, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(K, "open_env", lambda *a, **kw: fake_env())
    monkeypatch.setattr(os, "fsync", full)
    args = ["collect", "--suite", "test_set_ii", "--budget", "2", "--counters", "none", "--no-progress"]
    assert M.main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the disk is full: 0 configurations (0 rows)" in err[0] and "rerun" in err[0]
