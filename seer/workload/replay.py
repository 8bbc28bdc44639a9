"""Replay a profiled run with one CPU clock and one GPU clock, in the spirit of the DLRM performance model.

Lin et al., "Building a Performance Model for Deep Learning Recommendation Model Training on GPUs"
(HiPC 2022): the host's time is a chain of per-op overheads (op start to its first launch, between
launches, the launch call itself, last launch to op end, gaps between top-level ops), and a kernel
starts at max(GPU free, its launch time). Here those overheads are read off the trace itself: walking
the runtime calls (launches, copies, synchronizations) of each step in time order, the host time before
each call since the previous one is exactly the sum of the DLRM gaps that lie between them, and the
call's own duration is the launch overhead. A synchronizing call makes the CPU wait for the GPU, so
its measured duration is split into the wait (re-modelled) and the call's own cost (kept).

With ``kernel_ms`` the GPU side takes new (predicted) kernel times while the host side stays as
measured, which is how a predicted step time for a CPU-bound or GPU-bound workload comes out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seer.workload.kineto import Trace

# calls after which the host waits for the device (CUDA runtime and driver; HIP spelled the same after "hip")
SYNC_CALLS = {
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemset",
    "cudaFree",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "cuMemcpy",
    "cuMemcpyDtoH",
    "cuMemcpyHtoD",
    "cuMemFree",
}


def is_sync(name: str) -> bool:
    """Whether a runtime/driver call blocks the host until the device has finished its queued work."""
    base = name.removesuffix("_v2").removesuffix("_ptds").removesuffix("_ptsz")
    if base.startswith("hip"):
        base = "cuda" + base[3:]
    return base in SYNC_CALLS


@dataclass
class Replay:
    """Per-step replayed times and their medians over steps (ms).

    steps: step, measured_ms, step_ms, kernel_ms (sum of the step's GPU work), cpu_ms (host busy time,
    waits excluded), wait_ms (host waiting in synchronizing calls), gpu_ms (span of the step's GPU work).
    calls: one row per runtime call replayed: launch (row of trace.launches), op, step, gap_us (host time
    since the previous call), call_us (the call's own cost), wait_us, sync.
    """

    steps: pd.DataFrame
    calls: pd.DataFrame
    step_ms: float
    measured_ms: float
    kernel_ms: float
    cpu_ms: float
    unplaced_kernels: int = 0
    latency_us: float = 0.0

    @property
    def error(self) -> float:
        """Relative error of the median replayed step time against the median measured one."""
        return self.step_ms / self.measured_ms - 1.0 if self.measured_ms > 0 else float("nan")


def _step_table(trace: Trace) -> pd.DataFrame:
    """The trace's steps, or the whole CPU span as one step when it has no step markers."""
    if len(trace.steps):
        return trace.steps
    ts = pd.concat([trace.ops["ts"], trace.launches["ts"]])
    end = pd.concat([trace.ops["ts"] + trace.ops["dur"], trace.launches["ts"] + trace.launches["dur"]])
    return pd.DataFrame({"name": ["all"], "ts": [float(ts.min())], "dur": [float(end.max() - ts.min())]})


def launch_latency(trace: Trace) -> float:
    """Shortest time (us) from a launch call's start to its kernel's start: the latency on an idle GPU.

    A median would be wrong: where the host runs ahead, kernels wait in the queue for milliseconds.
    """
    k = trace.kernels[trace.kernels["launch"] >= 0]
    if not len(k):
        return 0.0
    lat = k["ts"].to_numpy(float) - trace.launches["ts"].to_numpy(float)[k["launch"].to_numpy()]
    lat = lat[lat >= 0]
    return float(lat.min()) if len(lat) else 0.0


def replay(
    trace: Trace,
    kernel_ms: pd.Series | np.ndarray | None = None,
    *,
    latency_us: float | None = None,
    per_stream: bool = False,
) -> Replay:
    """Replay the trace step by step; ``kernel_ms`` (one value per trace.kernels row, NaN: keep) replaces GPU times.

    A kernel starts at max(GPU free, its launch call's start + latency_us); the latency defaults to the trace's
    shortest (launch_latency), so that a replay with measured kernel times reproduces the measured waits.
    ``per_stream`` gives each CUDA stream its own GPU clock (streams then overlap freely: no cross-stream
    dependencies are modelled, and a synchronizing call waits for every stream).
    """
    lat = launch_latency(trace) if latency_us is None else float(latency_us)
    steps = _step_table(trace)
    one_step = not len(trace.steps)
    kern, lau = trace.kernels, trace.launches
    kdur = kern["dur"].to_numpy(float).copy()
    if kernel_ms is not None:
        new = np.asarray(kernel_ms, dtype=float) * 1e3
        if new.shape != kdur.shape:
            raise ValueError(f"kernel_ms has {new.size} values for {kdur.size} kernels")
        kdur = np.where(np.isnan(new), kdur, new)
    kend_meas = (kern["ts"] + kern["dur"]).to_numpy(float)
    # kernels of each launch, in their measured order (a graph launch runs several)
    by_launch: dict[int, np.ndarray] = {}
    linked = kern.index[kern["launch"].to_numpy() >= 0]
    if len(linked):
        order = kern.loc[linked].sort_values("ts", kind="stable")
        by_launch = {int(k): v for k, v in order.groupby("launch", sort=False).indices.items()}
        by_launch = {k: order.index.to_numpy()[v] for k, v in by_launch.items()}
    unplaced = int(len(kern) - len(linked))

    lts, ldur = lau["ts"].to_numpy(float), lau["dur"].to_numpy(float)
    lstep = np.zeros(len(lau), dtype=np.int64) if one_step else lau["step"].to_numpy()
    sync = np.array([is_sync(n) for n in lau["name"]], dtype=bool)
    lop = lau["op"].to_numpy()
    no = np.array([], dtype=np.int64)

    rows, calls = [], []
    c = 0.0  # the replayed host clock (us)
    free: dict[object, float] = defaultdict(float)  # the GPU clock: one, or one per stream
    kstream = kern["stream"].to_numpy(object) if per_stream else np.zeros(len(kern), dtype=object)
    meas_gpu = -np.inf  # measured end of the GPU work launched so far
    prev_end: float | None = None
    sts, sdur = steps["ts"].to_numpy(float), steps["dur"].to_numpy(float)
    step_groups = pd.Series(np.arange(len(lau))).groupby(lstep).indices if len(lau) else {}
    done = meas_done = None  # when the previous step finished (CPU and its GPU work), replayed and measured
    for s in range(len(steps)):
        t0, t1 = sts[s], sts[s] + sdur[s]
        if prev_end is not None:
            c += max(0.0, t0 - prev_end)
        c0, m = c, t0
        busy = wait = 0.0
        kernel_us, g_first, g_last, meas_last = 0.0, np.inf, -np.inf, t1
        idx = step_groups.get(s, no)
        for i in idx[np.argsort(lts[idx], kind="stable")]:
            ts, end = lts[i], lts[i] + ldur[i]
            gap = max(0.0, ts - m)
            c += gap
            for k in by_launch.get(int(i), no):
                start = max(free[kstream[k]], c + lat)
                free[kstream[k]] = start + kdur[k]
                kernel_us += kdur[k]
                g_first, g_last = min(g_first, start), max(g_last, start + kdur[k])
                meas_gpu = max(meas_gpu, kend_meas[k])
                meas_last = max(meas_last, kend_meas[k])
            own = max(0.0, end - max(ts, m))
            w = 0.0
            if sync[i]:
                own = min(own, max(0.0, end - max(ts, meas_gpu)))  # the call's cost after the device finished
                w = max(0.0, max(free.values(), default=0.0) - c)
                c += w
            c += own
            m = max(m, end)
            busy += gap + own
            wait += w
            calls.append((int(i), int(lop[i]), s, gap, own, w, bool(sync[i])))
        tail = max(0.0, t1 - m)
        c += tail
        busy += tail
        # a step's time is the period between completions: GPU work of one step may overlap the next's host work
        end_s = max(c, g_last)
        step_us = end_s - (c0 if done is None else max(c0, done))
        meas_us = meas_last - (t0 if meas_done is None else max(t0, meas_done))
        done, meas_done = end_s, meas_last
        rows.append(
            {
                "step": s,
                "name": steps["name"].iat[s],
                "measured_ms": meas_us / 1e3,
                "step_ms": step_us / 1e3,
                "kernel_ms": kernel_us / 1e3,
                "cpu_ms": busy / 1e3,
                "wait_ms": wait / 1e3,
                "gpu_ms": max(0.0, g_last - g_first) / 1e3,
            }
        )
        prev_end = t1
    table = pd.DataFrame(rows)
    call_df = pd.DataFrame(calls, columns=["launch", "op", "step", "gap_us", "call_us", "wait_us", "sync"])
    med = table.median(numeric_only=True) if len(table) else pd.Series(dtype=float)
    return Replay(
        steps=table,
        calls=call_df,
        step_ms=float(med.get("step_ms", np.nan)),
        measured_ms=float(med.get("measured_ms", np.nan)),
        kernel_ms=float(med.get("kernel_ms", np.nan)),
        cpu_ms=float(med.get("cpu_ms", np.nan)),
        unplaced_kernels=unplaced,
        latency_us=lat,
    )


def host_overheads(trace: Trace) -> pd.DataFrame:
    """DLRM's per-op host overheads of each launching op (us): why a CPU-bound step takes what it takes.

    first_us: op start to its first launch; launch_us: the launch calls' own time; between_us: the rest
    between the first launch's start and the last one's end; last_us: last launch end to op end.
    The gaps between top-level ops are the replay's ``calls.gap_us`` that fall outside these.
    """
    lau = trace.launches[trace.launches["op"] >= 0]
    end = lau["ts"] + lau["dur"]
    g = (
        pd.DataFrame({"op": lau["op"], "ts": lau["ts"], "end": end, "dur": lau["dur"]})
        .groupby("op", sort=True)
        .agg(first=("ts", "min"), last=("end", "max"), launch_us=("dur", "sum"), n_launches=("dur", "size"))
    )
    ops = trace.ops.iloc[g.index.to_numpy()]
    ots, oend = ops["ts"].to_numpy(float), (ops["ts"] + ops["dur"]).to_numpy(float)
    first, last, launch = g["first"].to_numpy(float), g["last"].to_numpy(float), g["launch_us"].to_numpy(float)
    return pd.DataFrame(
        {
            "op": g.index.to_numpy(),
            "step": ops["step"].to_numpy(),
            "name": ops["name"].to_numpy(),
            "first_us": first - ots,
            "launch_us": launch,
            "between_us": np.maximum(0.0, last - first - launch),
            "last_us": oend - last,
            "n_launches": g["n_launches"].to_numpy(np.int64),
        }
    )
