"""collect --ray and seer.fit --ray on a local Ray cluster the test starts: several workers,
three simulated GPUs as a custom resource, workers that are killed in the middle of a shard."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from stores import SUITES, assert_same_rows, rows_of

from cudnn_bench.__main__ import main
from cudnn_bench.collect import collect
from cudnn_bench.errors import BenchError
from cudnn_bench.options import Options
from cudnn_bench.plan import Budget, Shard
from cudnn_bench.store import store_files
from cudnn_bench.timing import TimingOptions
from seer import fit
from seer.errors import SeerError

ray = pytest.importorskip("ray")
from cudnn_bench.ray_collect import ClusterOptions, collect_ray, measure_shard  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
FAKE_GPU = {"fake_gpu": 1.0}
KEY = ["suite", "config_key", "math"]


@pytest.fixture(scope="module")
def armed(tmp_path_factory) -> Path:
    """The file whose presence makes the next simulated GPU process die mid-configuration."""
    return tmp_path_factory.mktemp("die") / "armed"


@pytest.fixture(scope="module")
def cluster(armed):
    """A local Ray cluster: 4 CPUs, 3 fake GPUs; its workers simulate the GPU with fakes.dying_env."""
    if ray.is_initialized():
        ray.shutdown()
    env = {
        "CUDNN_BENCH_SIMULATE": "fakes:dying_env",
        "FAKE_DIE_AFTER": "150",  # calls: mid-way through a shard's 3rd configuration or so
        "FAKE_DIE_ARMED": str(armed),
        "PYTHONPATH": f"{TESTS}:{TESTS.parent}",
    }
    ray.init(address="local", num_cpus=4, resources={"fake_gpu": 3}, runtime_env={"env_vars": env},
             logging_level="ERROR", log_to_driver=False)
    yield ray
    ray.shutdown()


def options(out: Path) -> Options:
    return Options(out=out, suites=SUITES, budget=Budget(), counters="none", progress=False,
                   timing=TimingOptions(warmup=1, reps=4, min_reps=2))


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The same plan collected by one process on the same simulated GPU (no Ray)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUDNN_BENCH_SIMULATE", "fakes:fake_env")
        return collect(options(tmp_path_factory.mktemp("whole")), log=lambda s: None).folder


def each_block_once(store_root: Path) -> int:
    """Configurations in the shard stores; fails if any store holds one in two blocks."""
    n = 0
    for f in store_root.rglob("*.csv"):
        df = pd.read_csv(f, dtype=str, keep_default_na=False)[KEY]
        blocks = df.ne(df.shift()).any(axis=1).sum()  # runs of one key
        assert blocks == len(df.drop_duplicates()), f"{f} holds a configuration twice"
        n += blocks
    return n


def test_a_killed_worker_is_retried_and_its_shard_resumes(cluster, armed, whole, tmp_path):
    armed.touch()
    logged: list[str] = []
    res = collect_ray(options(tmp_path / "data"), ClusterOptions(shards=4, retries=2, resources=FAKE_GPU),
                      log=logged.append)
    assert not armed.exists() and Path(f"{armed}.fired").exists()  # one worker died
    assert sorted(res.attempts.values()) == [1, 1, 1, 2]  # and its shard ran again
    (again,) = [i for i, a in res.attempts.items() if a == 2]
    assert res.reports[again].skipped > 0  # resuming the configurations its first attempt stored
    assert not res.failed and res.left == 0
    assert sum(r.measured + r.skipped for r in res.reports.values()) == 300
    assert each_block_once(res.store) == 300
    (merged,) = res.merged
    assert merged.added == 300 and merged.repeated == 0
    assert_same_rows(tmp_path / "data" / "simulated-gpu", whole)
    assert logged[-1].startswith("done: 4 shards")


def test_a_shard_out_of_retries_fails_and_the_rerun_completes_it(cluster, armed, whole, tmp_path):
    armed.touch()
    opts, cl = options(tmp_path / "data"), ClusterOptions(shards=3, retries=0, resources=FAKE_GPU)
    with pytest.raises(BenchError, match=r"1 of 3 shards failed .*same command resumes them"):
        collect_ray(opts, cl, log=lambda s: None)
    partial = rows_of(tmp_path / "data" / "simulated-gpu")  # what the shards finished is merged
    assert 200 <= partial.drop_duplicates(["suite", "config_key"]).shape[0] < 300
    res = collect_ray(opts, ClusterOptions(retries=0, resources=FAKE_GPU), log=lambda s: None)  # the same shards
    assert res.shards == 3 and not res.failed
    assert sum(r.skipped for r in res.reports.values()) > 200
    assert each_block_once(res.store) == 300 and res.merged[0].held == 300
    assert_same_rows(tmp_path / "data" / "simulated-gpu", whole)


def test_collect_command_on_the_cluster(cluster, tmp_path, capsys):
    out = tmp_path / "data"
    argv = ["collect", "--ray", "--ray-resources", "fake_gpu=1", "--shards", "2", "--suite", "gemm_layers",
            "--counters", "none", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    assert "done: 2 shards" in capsys.readouterr().err
    assert [f.name for f in store_files(out / "simulated-gpu")] == ["gemm_layers.csv"]
    assert main(argv) == 0  # a rerun: nothing left to measure, nothing merged twice
    assert rows_of(out / "simulated-gpu").duplicated(["call_key", "kernel_index"]).sum() == 0


def test_a_cluster_without_room_and_a_store_other_nodes_cannot_see(cluster, tmp_path):
    with pytest.raises(BenchError, match=r"no room for a shard task \(1 GPU; it has .*3 fake_gpu"):
        collect_ray(options(tmp_path), ClusterOptions(shards=2))
    (tmp_path / "run.json").write_text('{"token": "the driver\'s"}')
    with pytest.raises(BenchError, match="every node sees"):
        measure_shard(options(tmp_path), Shard(1, 2), str(tmp_path / "1-of-2"), "another", board=None)


def test_cluster_flags_without_ray_and_shard_with_ray(tmp_path, capsys):
    assert main(["collect", "--shards", "4", "--out", str(tmp_path)]) == 2
    assert "--shards is an option of --ray" in capsys.readouterr().err
    with pytest.raises(BenchError, match="--shard and --ray"):
        collect_ray(Options(out=tmp_path, shard=Shard(1, 2)), ClusterOptions())


def test_without_ray_installed(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["collect", "--ray", "--out", str(tmp_path)]) == 2
    assert "pip install 'seer[cluster]'" in capsys.readouterr().err


def test_fitting_gpus_on_the_cluster_gives_the_fits_of_one_process(cluster):
    from synthetic import gemm_records

    t4 = gemm_records(300)
    rec = pd.concat([t4, t4.assign(gpu="Tesla P4")], ignore_index=True)
    serial = fit.fit_all(rec, data_path="synthetic", log=lambda s: None)
    spread = fit.fit_all(rec, data_path="synthetic", log=lambda s: None, ray="")
    assert list(spread) == ["p4", "t4"] and spread == serial
    with pytest.raises(SeerError, match="cannot be fitted"):
        fit.fit_all(rec.assign(gpu="No Such GPU"), data_path="synthetic", log=lambda s: None, ray="")


def test_shard_stores_survive_in_place(cluster, tmp_path):
    """The shards' stores stay after the merge (a later run resumes them, a later merge reads them)."""
    res = collect_ray(options(tmp_path / "data"), ClusterOptions(shards=2, resources=FAKE_GPU), log=lambda s: None)
    assert sorted(p.name for p in res.store.iterdir()) == ["1-of-2", "2-of-2", "run.json"]
    shutil.rmtree(tmp_path / "data" / "simulated-gpu")
    assert main(["merge", str(res.store), "--out", str(tmp_path / "data")]) == 0
    assert rows_of(tmp_path / "data" / "simulated-gpu").shape[0] > 0


def test_an_address_where_nothing_answers_is_one_line_not_minutes(tmp_path):
    from seer import cluster

    assert "refused" in cluster.unreachable("127.0.0.1:1") and cluster.unreachable("ray://127.0.0.1:1")
    assert cluster.unreachable("auto") is None and cluster.unreachable(None) is None
    p = subprocess.run([sys.executable, "-m", "seer.fit", "--ray", "127.0.0.1:1", "--out", str(tmp_path), "--quiet"],
                       capture_output=True, text=True, timeout=120, cwd=TESTS.parent)
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1].startswith("seer.fit: no Ray cluster answers at")
