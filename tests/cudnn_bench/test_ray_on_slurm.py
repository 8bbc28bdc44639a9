"""cudnn_bench/ray_on_slurm.sh on a make-believe Slurm allocation of one node: `scontrol` and
`srun` are shims that run the command here, the GPUs are two fake ones (a Ray custom resource)
and the collection uses the simulated GPU. What it checks is the script's own work: a Ray head
started and waited for, collect --ray run against it, and every Ray process stopped at the end."""
from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from stores import rows_of

from cudnn_bench.store import store_files

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "cudnn_bench" / "ray_on_slurm.sh"
SHIMS = {
    "scontrol": 'echo "$SLURM_JOB_NODELIST"\n',  # one node: `show hostnames` is the list itself
    "srun": 'while [[ $# -gt 0 && $1 == -* ]]; do [[ $1 == -w ]] && shift; shift; done\nexec "$@"\n',
    "hostname": "echo 127.0.0.1\n",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_on_slurm_collects_and_stops_its_cluster(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in SHIMS.items():
        (bin_dir / name).write_text("#!/usr/bin/env bash\n" + body)
        (bin_dir / name).chmod(stat.S_IRWXU)
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        "SLURM_JOB_NODELIST": "node1",
        "PYTHON": sys.executable,
        "RAY_PORT": str(port),
        "RAY_START_ARGS": '--num-cpus=2 --resources={"fake_gpu":2}',
        "CUDNN_BENCH_SIMULATE": "fakes:fake_env",
        "PYTHONPATH": f"{ROOT / 'tests'}:{ROOT}",
    }
    out = tmp_path / "data"
    p = subprocess.run(
        ["bash", str(SCRIPT), "--ray-resources", "fake_gpu=1", "--shards", "2", "--suite", "gemm_layers",
         "--counters", "none", "--no-progress", "--out", str(out)],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ray_on_slurm: head node1 (127.0.0.1:" in p.stderr and "done: 2 shards" in p.stderr
    assert [f.name for f in store_files(out / "simulated-gpu")] == ["gemm_layers.csv"]
    assert rows_of(out / "simulated-gpu")["config_key"].nunique() == 99
    left = subprocess.run(["pgrep", "-f", f"(:|--port=){port}( |$)"], capture_output=True, text=True)  # ray start, its children
    assert left.stdout.strip() == "", "Ray processes of the script are still running"
    current = Path("/tmp/ray/ray_current_cluster")  # a later ray.init() would try to join it
    assert not current.exists() or not current.read_text().endswith(f":{port}")


def test_outside_an_allocation_it_says_so():
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_NODELIST"}
    p = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "not inside a Slurm allocation" in p.stderr
