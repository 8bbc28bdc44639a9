"""python -m cudnn_bench options: values that would quietly change what is measured (a negative
count, NaN ms, an empty suite list) and a counter pass that cannot run end in one line and exit
code 2; no GPU is needed for any of these tests."""
from __future__ import annotations

import pytest
from fakes import has_driver

from cudnn_bench import __main__ as M
from cudnn_bench import libs, ncu_pass, runtime
from cudnn_bench.errors import NoGPUError


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("cudnn_bench: ") and "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize("command", ["plan", "collect"])
@pytest.mark.parametrize("option,value,expected", [
    ("--target-ms", "nan", "a time in ms > 0"),
    ("--target-ms", "inf", "a time in ms > 0"),
    ("--target-ms", "0", "a time in ms > 0"),
    ("--target-ms", "fast", "a time in ms > 0"),
    ("--max-call-ms", "-1", "a time in ms > 0"),
    ("--limit", "-3", "a whole number >= 1"),
    ("--limit", "0", "a whole number >= 1"),
    ("--limit", "2.5", "a whole number >= 1"),
    ("--gemm-algos", "-1", "a whole number >= 1"),
    ("--gemm-algos", "0", "a whole number >= 1"),
    ("--reps", "-5", "a whole number >= 1"),
    ("--min-reps", "0", "a whole number >= 1"),
    ("--warmup", "-1", "a whole number >= 0"),
    ("--suite", ",", "one or more of seer_grid"),
    ("--suite", "", "one or more of seer_grid"),
])
def test_bad_option_values_are_one_line_and_exit_2(command, option, value, expected, capsys):
    with pytest.raises(SystemExit) as info:
        M.main([command, f"{option}={value}"])
    assert info.value.code == 2
    line = _one_line(capsys)
    assert f"argument {option}: expected {expected}" in line and repr(value) in line


@pytest.mark.parametrize("argv", [["collect", "--device", "-1"], ["counters", "--data", "x", "--device", "-2"]])
def test_negative_device_is_refused(argv, capsys):
    with pytest.raises(SystemExit) as info:
        M.main(argv)
    assert info.value.code == 2 and "argument --device: expected a whole number >= 0" in _one_line(capsys)


def test_good_values_still_parse():
    a = M.build_parser().parse_args(["plan", "--limit", "5", "--warmup", "0", "--reps", "7", "--min-reps", "2",
                                     "--target-ms", "50.5", "--gemm-algos", "3", "--max-call-ms", "1e3",
                                     "--suite", "test_set_ii,"])
    assert (a.limit, a.warmup, a.reps, a.min_reps, a.target_ms, a.gemm_algos, a.max_call_ms) == \
           (5, 0, 7, 2, 50.5, 3, 1000.0)
    assert a.suite == ["test_set_ii"]


@pytest.fixture
def records_folder(tmp_path):
    folder = tmp_path / "t4"
    folder.mkdir()
    (folder / "test_set_ii.csv").write_text("op\nconv_fwd\n")
    return folder


@pytest.mark.parametrize("spelling", [("--data",), ()])  # DATA or --data DATA, as report and export-excel
@pytest.mark.parametrize("make", ["missing", "empty", "file"])
def test_counters_without_records_exit_2(make, spelling, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ncu_pass, "counters_pass", lambda *a, **k: pytest.fail("no records: nothing to profile"))
    data = tmp_path / "data"
    if make == "empty":
        data.mkdir()
    elif make == "file":
        data.write_text("x")
    assert M.main(["counters", *spelling, str(data)]) == 2
    line = _one_line(capsys)
    assert f"counters: {data} is not a folder of collected records" in line


def test_counters_without_a_gpu_exit_2(records_folder, capsys, monkeypatch):
    def no_gpu(ordinal, lib=None):
        raise NoGPUError("no NVIDIA GPU driver on this machine (libcuda.so.1 cannot be loaded)")

    monkeypatch.setattr(runtime, "_init_driver", no_gpu)
    monkeypatch.setattr(ncu_pass, "counters_pass", lambda *a, **k: pytest.fail("no GPU: nothing to profile"))
    assert M.main(["counters", "--data", str(records_folder)]) == 2
    assert "GPU" in _one_line(capsys)


@pytest.mark.skipif(has_driver(), reason="this machine has an NVIDIA driver")
def test_counters_on_this_machine_without_a_gpu_exit_2(records_folder, capsys):
    assert M.main(["counters", "--data", str(records_folder)]) == 2
    assert "GPU" in _one_line(capsys)


def test_counters_without_ncu_exit_2(records_folder, capsys, monkeypatch):
    monkeypatch.setattr(runtime, "_init_driver", lambda ordinal, lib=None: (None, ordinal))
    monkeypatch.setattr(libs, "ncu_path", lambda: None)
    monkeypatch.setattr(ncu_pass, "counters_pass", lambda *a, **k: pytest.fail("no ncu: nothing to profile"))
    assert M.main(["counters", "--data", str(records_folder)]) == 2
    assert "ncu (Nsight Compute) was not found" in _one_line(capsys)


def test_counters_runs_the_pass_when_it_can(records_folder, monkeypatch):
    seen = {}
    monkeypatch.setattr(runtime, "_init_driver", lambda ordinal, lib=None: (None, ordinal))
    monkeypatch.setattr(libs, "ncu_path", lambda: "/opt/ncu")
    monkeypatch.setattr(ncu_pass, "counters_pass", lambda folder, opts, ncu=None: seen.update(
        folder=folder, ncu=ncu, device=opts.device, counters=opts.counters))
    assert M.main(["counters", "--data", str(records_folder), "--device", "1", "--counters", "all"]) == 0
    assert seen == {"folder": records_folder, "ncu": "/opt/ncu", "device": 1, "counters": "all"}


def test_ncu_worker_without_its_calls_file_exit_2(tmp_path, capsys):
    assert M.main(["ncu-worker", "--calls", str(tmp_path / "none.json")]) == 2
    assert "calls file" in _one_line(capsys)
