"""Fitting several GPUs at once: worker processes on this machine, or tasks on a Ray cluster.

Each worker fits whole GPUs (seer.fit.gpu.fit_one) with single-threaded BLAS, so the fits are
those of one process, byte for byte.
"""

from __future__ import annotations

import os

from seer import cluster
from seer.errors import SeerError
from seer.fit.gpu import fit_one

_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def fit_parallel(work: list[tuple], jobs: int) -> list[tuple[str, dict, float]]:
    """Fit GPUs in fresh worker processes with single-threaded BLAS: the fits are many small
    WLS problems, and BLAS threads in every worker would only fight over the cores. Workers
    start with Ctrl-C ignored (an ignored signal survives exec), so it reaches only this
    process, which stops the pool: one message, not a traceback per worker."""
    import multiprocessing
    import signal
    import threading

    saved = {k: os.environ.get(k) for k in _BLAS_THREADS}
    os.environ.update({k: "1" for k in _BLAS_THREADS})
    main = threading.current_thread() is threading.main_thread()  # signals: main thread only
    sigint = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        pool = multiprocessing.get_context("spawn").Pool(jobs)
    finally:
        if main:
            signal.signal(signal.SIGINT, sigint)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        results = pool.map(fit_one, work, chunksize=1)
        pool.close()
        return results
    except BaseException:  # Ctrl-C or a failed fit: stop the other workers now
        pool.terminate()
        raise
    finally:
        pool.join()


def fit_ray(work: list[tuple], address: str) -> list[tuple[str, dict, float]]:
    """Fit GPUs as tasks on a Ray cluster: one CPU and single-threaded BLAS each, as in
    `fit_parallel`, so the fits are those of one process. Every node needs seer installed."""
    with cluster.session(address or None) as ray:
        task = ray.remote(fit_one).options(num_cpus=1, runtime_env={"env_vars": dict.fromkeys(_BLAS_THREADS, "1")})
        refs = [task.remote(w) for w in work]
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            inner = cluster.cause(exc)
            if isinstance(inner, SeerError):
                raise inner from None
            raise
        except KeyboardInterrupt:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
