"""Hardware counters with Nsight Compute: the ncu command, its CSV, and merging into records.

The counter pass runs a worker (`python -m cudnn_bench ncu-worker`) under ncu that makes each
chosen call once inside an NVTX push/pop range named `seer:<call_id>` (after an unprofiled
warm-up; profiling is switched on per call with cuProfilerStart/Stop and
`--profile-from-start off`). The report is exported twice with
`ncu --import R --csv --page raw --print-units base`: once as is (kernel names and metrics) and
once with `--print-nvtx-rename kernel`, which replaces each kernel's name by its innermost NVTX
range; rows of the two exports share the `ID` column, which attributes every kernel to its call.
Without NVTX the kernels are attributed by order (the worker's manifest gives each call's
kernel count).

The raw page's layout: a header row ("ID", "Process ID", "Process Name", "Host Name",
"Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", then one column
per metric), a units row (empty under the first columns), then one row per kernel; numbers may
carry thousands separators; ncu's own lines start with "==PROF==" / "==WARNING==".
Metric names: docs/reference.md, Hardware counters (the nvprof -> ncu table).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seer.data.variants import classify, short_name
from seer.hardware import occupancy

from .errors import BenchError

SECTOR_BYTES = 32
# record field -> ncu metric (docs/reference.md, Hardware counters)
COUNTER_METRICS: dict[str, str] = {
    "fp32_inst": "smsp__sass_thread_inst_executed_op_fp32_pred_on.sum",
    "dram_read_sectors": "dram__sectors_read.sum",
    "dram_write_sectors": "dram__sectors_write.sum",
    "fp32_util_pct": "smsp__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "dram_util_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "ncu_kernel_time": "gpu__time_duration.sum",
    "ncu_sm_clock": "sm__cycles_elapsed.avg.per_second",
}
LAUNCH_METRICS: tuple[str, ...] = (
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__waves_per_multiprocessor",
    "launch__sm_count",
)
OCC_LIMITS = (
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
)
RANGE_PREFIX = "seer:"
FIXED_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)


def metric_list(counters: bool = True) -> list[str]:
    return list(LAUNCH_METRICS) + (list(COUNTER_METRICS.values()) if counters else ["gpu__time_duration.sum"])


# ====================================================================== commands
def profile_command(ncu: str, report_base: str, worker: Sequence[str], metrics: Sequence[str]) -> list[str]:
    """ncu over the worker: no clock locking (shared machines; the SM clock is recorded
    instead), NVTX on, profiling only between cuProfilerStart and cuProfilerStop, kernel replay
    with ncu's default cache flush before each pass (cold caches, as SEER measured)."""
    return [
        ncu,
        "--target-processes",
        "all",
        "--clock-control",
        "none",
        "--nvtx",
        "--profile-from-start",
        "off",
        "--replay-mode",
        "kernel",
        "--metrics",
        ",".join(metrics),
        "-f",
        "-o",
        report_base,
        *worker,
    ]


def import_command(ncu: str, report: str, rename: bool = False) -> list[str]:
    cmd = [ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base"]
    return cmd + (["--print-nvtx-rename", "kernel"] if rename else [])


# ====================================================================== the raw CSV
@dataclass
class NcuKernel:
    """One profiled kernel launch."""

    id: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    # the NVTX range it ran in (seer:<call_id>; the renamed export of CUDA 13.1's ncu appends
    # "/<kernel name>"), "" if unknown
    range: str = ""

    def get(self, metric: str) -> float:
        return self.metrics.get(metric, math.nan)

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def call_id(self) -> int | None:
        if self.range.startswith(RANGE_PREFIX):
            try:
                return int(self.range[len(RANGE_PREFIX) :].split("/", 1)[0])
            except ValueError:
                return None
        return None


_NUM = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d*)?([eE][-+]?\d+)?$")
_DIMS = re.compile(r"\(?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)?")
# unit -> factor into the harness's unit: ms for times, bytes, Hz for rates, plain otherwise
_TIME = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3, "s": 1e3}
_BYTES = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12}
_RATE = {
    "hz": 1.0,
    "khz": 1e3,
    "mhz": 1e6,
    "ghz": 1e9,
    "cycle/second": 1.0,
    "cycle/usecond": 1e6,
    "cycle/nsecond": 1e9,
    "cycle/msecond": 1e3,
}


def number(text: str) -> float:
    """ncu's number text ('1,234.5', '4.0e-05', 'n/a') as a float (NaN when not a number)."""
    t = (text or "").strip()
    if not t or not _NUM.match(t):
        try:
            return float(t)
        except ValueError:
            return math.nan
    return float(t.replace(",", ""))


def scale(value: float, unit: str) -> float:
    """To ms (times), bytes, Hz (rates); percentages and counts unchanged."""
    u = (unit or "").strip().lower()
    for table in (_TIME, _BYTES, _RATE):
        if u in table:
            return value * table[u]
    return value


def dims(text: str) -> tuple[int, int, int]:
    m = _DIMS.search(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)


def parse_raw_csv(text: str) -> list[NcuKernel]:
    """Kernels of an `ncu --csv --page raw --print-units base` export, in ID order."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        raise BenchError("ncu produced no CSV rows (was anything profiled?)")
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header = rows[0]
    if "ID" not in header or "Kernel Name" not in header:
        raise BenchError(f"not an ncu raw-page CSV: header starts {header[:4]}")
    col = {c: i for i, c in enumerate(header)}
    metrics = [c for c in header if c not in FIXED_COLUMNS]
    body = rows[1:]
    units: dict[str, str] = {}
    if body and body[0][col["ID"]].strip() == "":
        units = {m: body[0][col[m]] for m in metrics if col[m] < len(body[0])}
        body = body[1:]
    out: list[NcuKernel] = []
    for r in body:
        if len(r) != len(header):
            continue
        vals = {m: scale(number(r[col[m]]), units.get(m, "")) for m in metrics}
        kid = number(r[col["ID"]])
        out.append(
            NcuKernel(
                int(kid) if math.isfinite(kid) else len(out),
                r[col["Kernel Name"]],
                dims(r[col["Grid Size"]]) if "Grid Size" in col else (0, 0, 0),
                dims(r[col["Block Size"]]) if "Block Size" in col else (0, 0, 0),
                vals,
                units,
            )
        )
    return sorted(out, key=lambda k: k.id)


def attach_ranges(kernels: list[NcuKernel], renamed: list[NcuKernel]) -> list[NcuKernel]:
    """Give each kernel the NVTX range that the `--print-nvtx-rename kernel` export names."""
    by_id = {k.id: k.name for k in renamed}
    for k in kernels:
        name = by_id.get(k.id, "")
        k.range = name if name.startswith(RANGE_PREFIX) else ""
    return kernels


def attach_by_sequence(kernels: list[NcuKernel], manifest: Sequence[tuple[int, int]]) -> list[NcuKernel]:
    """Without NVTX: the worker ran the calls in manifest order, each launching n kernels."""
    want = sum(n for _, n in manifest)
    if want != len(kernels):
        raise BenchError(
            f"ncu profiled {len(kernels)} kernels but the calls launch {want}: "
            "cannot attribute kernels without NVTX ranges"
        )
    i = 0
    for call_id, n in manifest:
        for k in kernels[i : i + n]:
            k.range = f"{RANGE_PREFIX}{call_id}"
        i += n
    return kernels


def by_call(kernels: Iterable[NcuKernel]) -> dict[int, list[NcuKernel]]:
    out: dict[int, list[NcuKernel]] = defaultdict(list)
    for k in kernels:
        if k.call_id is not None:
            out[k.call_id].append(k)
    return dict(out)


# ====================================================================== merging into records
def norm_name(name: str) -> str:
    """A kernel name reduced to what CUPTI's and ncu's demanglings share: no 'void ', no
    argument list, no spaces."""
    return re.sub(r"\s+", "", short_name(name or ""))


def seer_type(fp32_util_pct: float, dram_util_pct: float) -> str:
    """SEER's kernel type: compute if FP32 pipe >= 80% (nvprof level 8 of 10), else memory if
    DRAM >= 80%, else under-utilized; '' when not measured."""
    if not (math.isfinite(fp32_util_pct) and math.isfinite(dram_util_pct)):
        return ""
    if fp32_util_pct >= 80:
        return "compute"
    if dram_util_pct >= 80:
        return "memory"
    return "under"


def counter_fields(k: NcuKernel, cc: str, sms: int | None = None) -> dict:
    """Record fields from one ncu kernel: counters, ncu's occupancy and waves."""
    g = k.get
    fp32_util, dram_util = g(COUNTER_METRICS["fp32_util_pct"]), g(COUNTER_METRICS["dram_util_pct"])
    out: dict[str, object] = {
        "fp32_inst": g(COUNTER_METRICS["fp32_inst"]),
        "dram_read_bytes": g(COUNTER_METRICS["dram_read_sectors"]) * SECTOR_BYTES,
        "dram_write_bytes": g(COUNTER_METRICS["dram_write_sectors"]) * SECTOR_BYTES,
        "fp32_util_pct": fp32_util,
        "dram_util_pct": dram_util,
        "achieved_occupancy_pct": g(COUNTER_METRICS["achieved_occupancy_pct"]),
        "ncu_kernel_time_ms": g(COUNTER_METRICS["ncu_kernel_time"]),
        "ncu_sm_clock_mhz": g(COUNTER_METRICS["ncu_sm_clock"]) / 1e6,
        "ncu_waves_per_sm": g("launch__waves_per_multiprocessor"),
    }
    out["kernel_type"] = seer_type(fp32_util, dram_util)
    lim = [g(m) for m in OCC_LIMITS]
    if all(math.isfinite(v) for v in lim):
        bps = int(min(lim))
        sm_count = g("launch__sm_count")
        n_sm = int(sm_count) if math.isfinite(sm_count) else sms
        out["ncu_blocks_per_sm"] = bps
        if n_sm:
            out.update(
                blocks_per_sm=bps,
                b_max=bps * n_sm,
                occupancy_source="ncu",
                waves=int(occupancy.waves(k.blocks, bps * n_sm)) if bps > 0 else pd.NA,
            )
    return {k2: v for k2, v in out.items() if not (isinstance(v, float) and math.isnan(v))}


def launch_fields(k: NcuKernel, cc: str, sms: int) -> dict:
    """Launch metadata of a kernel the timing pass could not trace (no CUPTI): from ncu."""
    g = k.get
    regs = g("launch__registers_per_thread")
    ss, sd = g("launch__shared_mem_per_block_static"), g("launch__shared_mem_per_block_dynamic")
    threads = k.block[0] * k.block[1] * k.block[2]
    out = {
        "kernel": k.name,
        **launch_geometry(k.grid, k.block),
        "regs_per_thread": int(regs) if math.isfinite(regs) else pd.NA,
        "smem_static": int(ss) if math.isfinite(ss) else pd.NA,
        "smem_dynamic": int(sd) if math.isfinite(sd) else pd.NA,
        "kernel_time_ms": g(COUNTER_METRICS["ncu_kernel_time"]),
        "kernel_time_source": "ncu",
    }
    if threads and math.isfinite(regs):
        out.update(model_occupancy(cc, threads, int(regs), int(np.nan_to_num(ss + sd)), k.blocks, sms))
    return out


def launch_geometry(grid: tuple[int, int, int], block: tuple[int, int, int]) -> dict:
    """The record's launch-shape fields of one kernel (CUPTI's or ncu's)."""
    return {
        "grid_x": grid[0],
        "grid_y": grid[1],
        "grid_z": grid[2],
        "block_x": block[0],
        "block_y": block[1],
        "block_z": block[2],
        "blocks": grid[0] * grid[1] * grid[2],
    }


def model_occupancy(cc: str, threads: int, regs: int, smem: int, blocks: int, sms: int) -> dict:
    """Occupancy fields from the occupancy calculator (seer.hardware.occupancy): resident blocks per SM,
    B_max and waves of one launch; none for a compute capability it does not know."""
    try:
        bps = int(occupancy.blocks_per_sm(cc, threads, regs, smem))
    except Exception:  # an unsupported CC leaves these empty
        return {}
    return {
        "model_blocks_per_sm": bps,
        "blocks_per_sm": bps,
        "b_max": bps * sms,
        "waves": int(occupancy.waves(blocks, bps * sms)) if bps > 0 else pd.NA,
        "occupancy_source": "model",
    }


def kernel_roles(names: list[str], times: list[float]) -> list[str]:
    """main = the longest kernel; helpers by their parsed role, else by position."""
    if not names:
        return []
    t = [x if math.isfinite(x) else -1.0 for x in times]
    main = int(np.argmax(t))
    roles = []
    for i, n in enumerate(names):
        if i == main:
            roles.append("main")
            continue
        r = classify(n).role
        roles.append(r if r in ("pre", "post") else ("pre" if i < main else "post"))
    return roles


def _set(df: pd.DataFrame, i, f: str, v) -> None:
    """df.at[i, f] = v, widening the column to object where its dtype cannot hold v."""
    if f not in df.columns:
        df[f] = pd.Series([pd.NA] * len(df), index=df.index, dtype=object)
    col = df[f]
    if col.dtype != object:
        num = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        fits = (pd.api.types.is_float_dtype(col) and num) or (
            pd.api.types.is_integer_dtype(col) and isinstance(v, (int, np.integer))
        )
        if not fits:
            df[f] = col.astype(object)
    df.at[i, f] = v


def merge(df: pd.DataFrame, calls: dict[int, list[NcuKernel]], cc: str, sms: int) -> tuple[pd.DataFrame, int]:
    """Records with counters filled in from ncu kernels grouped by call_id.

    A call whose rows name its kernels (CUPTI ran) gets counters kernel by kernel, matching
    the m-th launch of a name to the m-th launch of the same name; a call recorded as one row
    without kernels is expanded into one row per ncu kernel (launch metadata from ncu).
    Returns the frame and the number of calls merged.
    """
    if not calls or df.empty:
        return df, 0
    df = df.copy()
    cid = pd.to_numeric(df["call_id"], errors="coerce")
    keep: list = []  # index labels of the rows kept as they are
    add: list[dict] = []  # rows made from ncu's kernels
    merged = 0
    for call_id, group in df.groupby(cid, sort=False):
        idx = list(group.index)
        ks: list[NcuKernel] | None = calls.get(int(call_id)) if pd.notna(call_id) else None
        if not ks:
            keep += idx
            continue
        merged += 1
        named = [i for i in idx if str(df.at[i, "kernel"]).strip()]
        if named:
            position = pd.to_numeric(df.loc[named, "kernel_index"], errors="coerce")
            order = sorted(named, key=lambda i: position[i])
            pool: dict[str, list[NcuKernel]] = defaultdict(list)
            for k in ks:
                pool[norm_name(k.name)].append(k)
            unmatched = []
            for i in order:
                bucket = pool.get(norm_name(str(df.at[i, "kernel"])))
                if bucket:
                    for f, v in counter_fields(bucket.pop(0), cc, sms).items():
                        _set(df, i, f, v)
                else:
                    unmatched.append(i)
            # Two demanglers may spell template arguments differently (CUPTI's names go through
            # __cxa_demangle, ncu has its own): when the call launched as many kernels as it
            # has rows, the kernels left over go to the rows left over, in launch order.
            left = sorted((k for b in pool.values() for k in b), key=lambda k: k.id)
            if unmatched and len(ks) == len(order) and len(left) == len(unmatched):
                for i, k in zip(unmatched, left):
                    for f, v in counter_fields(k, cc, sms).items():
                        _set(df, i, f, v)
            keep += idx
            continue
        base = df.loc[idx[0]].to_dict()
        names = [k.name for k in ks]
        times = [k.get(COUNTER_METRICS["ncu_kernel_time"]) for k in ks]
        roles = kernel_roles(names, times)
        for j, k in enumerate(ks):
            row = dict(base)
            row.update(launch_fields(k, cc, sms))
            row.update(counter_fields(k, cc, sms))
            row.update(role=roles[j], kernel_index=j, kernels=";".join(names))
            add.append(row)
    out = pd.concat([df.loc[keep], pd.DataFrame(add)], ignore_index=True) if add else df.loc[keep]
    if add:
        counts = out.groupby(["suite", "config_key", "math"], sort=False)["call_id"].transform("size")
        out["config_rows"] = counts.astype(int)
        # keep each configuration's rows together, in their original order
        first = {k: i for i, k in enumerate(dict.fromkeys(zip(out["suite"], out["config_key"], out["math"])))}
        out["_o"] = [first[k] for k in zip(out["suite"], out["config_key"], out["math"])]
        out["_k"] = pd.to_numeric(out["kernel_index"], errors="coerce").fillna(0)
        rank = {c: i for i, c in enumerate(dict.fromkeys(out["call_id"].astype(str)))}
        out["_c"] = out["call_id"].astype(str).map(rank)
        out = out.sort_values(["_o", "_c", "_k"], kind="stable").drop(columns=["_o", "_k", "_c"])
    return out.reset_index(drop=True), merged
