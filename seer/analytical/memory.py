"""Memory-bound kernels: element-wise, softmax, layer norm, concat, transpose, memcpy.

A roofline with a launch floor. Each kernel moves a known number of bytes and does a known
number of FLOPs per element; its time is

    t = max(floor, c + bytes / bw + a * rows + reread_bytes / bw2, FLOPs / peak FLOP/s)

where, per GPU and kernel, the effective bandwidth `bw`, the floor, the latency `c` and the
row terms are fitted (statsmodels WLS, weights 1/t^2 = least squares on relative error):

- floor: nothing finishes faster than the launch (and, in op-level timings such as
  NeuSight's, the framework's dispatch); small tensors all take this time.
- bytes / bw: the streaming part; `bw` is never the datasheet peak (it can even exceed the
  DRAM peak where repeated timings find the tensor still in L2, as on the A100's 40 MB).
- a * rows (softmax, layer norm): one block or warp per row, so many short rows cost more
  than few long ones of the same size.
- reread_bytes (softmax, layer norm): a row longer than a fitted column threshold no longer
  stays in cache between the kernel's passes over it and is read from DRAM again.

Where a GPU has no measurements (or `params` is None) the datasheet is used instead:
t = DATASHEET_FLOOR_MS + max(FLOPs / peak FLOP/s, bytes / peak bandwidth).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from seer.analytical._inputs import Configs, check_choice, check_counts, gather, lookup, unit_factor
from seer.data.records import MEMORY_OPS
from seer.errors import SeerError
from seer.hardware import gpus
from seer.hardware.dtypes import DTYPE_BYTES
from seer.hardware.gpus import GPUSpec
from seer.hardware.peaks import peaks_for, spec_of
from seer.models import DEFAULT as _FIT
from seer.models.solver import wls_relative  # ties between fits: the same rule as the per-variant models

SCHEMA = "seer.analytical.memory_bound/1"

# fn -> (FLOPs per element, memory accesses per element). relu, sigmoid and binary
# cross-entropy are the DLRM repo's counts (REFERENCE.md section 8); the others count one
# operation per arithmetic step and one per transcendental function (exp, tanh, erf).
# The DLRM repo's 175 FLOPs for gelu is not used: at the rate NeuSight measured gelu on an
# A100 that many FP32 operations would exceed the GPU's peak (see the README).
# Accesses are the operands read plus the result written: 2 for a unary function, 3 for a
# binary one, 4 for a ternary one.
ELEMENTWISE: dict[str, tuple[float, int]] = {
    "add": (1, 3),
    "sub": (1, 3),
    "mul": (1, 3),
    "div": (1, 3),
    "relu": (1, 2),
    "sigmoid": (4, 2),
    "tanh": (1, 2),
    "exp": (1, 2),
    "neg": (1, 2),
    "gelu": (5, 2),  # erf form: 0.5 * x * (1 + erf(x / sqrt(2)))
    "bce": (7, 3),  # binary cross-entropy, per element
    "copy": (0, 2),
    # unary
    "abs": (1, 2),
    "sqrt": (1, 2),
    "rsqrt": (1, 2),
    "reciprocal": (1, 2),
    "square": (1, 2),
    "log": (1, 2),
    "log2": (1, 2),
    "log10": (1, 2),
    "log1p": (1, 2),
    "exp2": (1, 2),
    "expm1": (1, 2),
    "sin": (1, 2),
    "cos": (1, 2),
    "tan": (1, 2),
    "erf": (1, 2),
    "erfc": (1, 2),
    "sign": (1, 2),
    "floor": (1, 2),
    "ceil": (1, 2),
    "round": (1, 2),
    "trunc": (1, 2),
    "clamp": (2, 2),
    "relu6": (2, 2),
    "leaky_relu": (2, 2),
    "hardtanh": (2, 2),
    "hardsigmoid": (3, 2),
    "hardswish": (4, 2),
    "elu": (3, 2),
    "selu": (4, 2),
    "celu": (3, 2),
    "softplus": (3, 2),
    "silu": (5, 2),
    "mish": (7, 2),
    "pow": (3, 2),  # a scalar exponent (x ** 3 in GPT's GELU): log, multiply, exp
    "fill": (0, 1),  # writes only
    # binary
    "maximum": (1, 3),
    "minimum": (1, 3),
    "fmod": (1, 3),
    "remainder": (2, 3),
    "atan2": (1, 3),
    "hypot": (3, 3),
    "eq": (1, 3),
    "ne": (1, 3),
    "lt": (1, 3),
    "le": (1, 3),
    "gt": (1, 3),
    "ge": (1, 3),
    # ternary
    "where": (1, 4),
    "addcmul": (2, 4),
    "addcdiv": (2, 4),
    "lerp": (2, 4),
}
# A function the table lacks (it loads and is fitted like any other): one FLOP, one operand
# read and the result written per element, i.e. a unary function.
DEFAULT_FN: tuple[float, int] = (1, 2)
ARITY = {0: "nullary", 1: "unary", 2: "binary", 3: "ternary"}
ROW_FLOPS = {"softmax": 5, "layer_norm": 8}  # max, sub, exp, sum, div; mean, var (3), norm (2), affine (2)
MEMCPY = ("h2d", "d2h", "d2d")
OPS = MEMORY_OPS
SOFTMAX_WARP_MAX = 1024  # PyTorch's softmax uses one warp per row up to 1024 columns
DATASHEET_FLOOR_MS = 0.005  # nominal launch floor (5 us) where nothing was measured
PER_ROW = ("softmax", "layer_norm")  # kernels that give each row its own warp or block
MIN_ROWS = 10  # fewer measurements than this for a kernel: no fit, use a fallback
KNEES = np.linspace(0.0, 0.95, 20)  # candidate quantiles of bytes splitting floor / streaming
REFINE = 10  # at most this many refinements of the best split
REREAD_STEP = 512  # candidate column thresholds for the re-read term: multiples of this


# ---------------------------------------------------------------- work per config
def _configs(configs, kwargs, fns: Iterable[str] = (), any_fn: bool = False) -> Configs:
    """Checked configs. An element-wise `fn` must be in ELEMENTWISE or `fns` (functions the
    parameters were fitted on), so a typo is refused; `any_fn` (fitting measurements) takes
    every non-empty name, a function the table lacks counting as DEFAULT_FN."""
    cfg = gather(
        configs, kwargs, ("op", "rows", "cols"), optional=("fn", "dtype", "gpu"), text=("op", "fn", "dtype", "gpu")
    )
    check_choice(cfg, "op", OPS)
    check_counts(cfg, ("rows", "cols"))
    op = cfg.cols["op"]
    fn = cfg.cols.get("fn", np.full(cfg.n, "", dtype=object))
    cfg.cols["fn"] = fn
    ew = op == "elementwise"
    given = [f for f in pd.unique(fn[ew]) if str(f).strip()] if any_fn else []
    allowed = list(dict.fromkeys([*ELEMENTWISE, *fns, *given]))
    check_choice(cfg, "fn", allowed, mask=ew, why=" for op elementwise")
    check_choice(cfg, "fn", MEMCPY, mask=op == "memcpy", why=" (copy direction) for op memcpy")
    dt = cfg.cols.get("dtype", np.full(cfg.n, "", dtype=object))
    dt = np.where(dt == "", "float32", dt).astype(object)
    cfg.cols["dtype"] = dt
    check_choice(cfg, "dtype", list(DTYPE_BYTES))
    return cfg


def kernel_keys(op: np.ndarray, fn: np.ndarray, cols: np.ndarray, elem: np.ndarray) -> np.ndarray:
    """Which fitted kernel a config uses: elementwise:<fn>, softmax:warp|block, layer_norm,
    concat, transpose, memcpy:<direction>."""
    codes, uniq = pd.factorize(pd.Series(op, dtype=object) + ":" + pd.Series(fn, dtype=object))
    names = np.array(
        [u if u.split(":")[0] in ("elementwise", "memcpy") else u.split(":")[0] for u in uniq], dtype=object
    )
    key = names[codes]
    warp = (cols <= SOFTMAX_WARP_MAX) & (cols * elem <= 4096)
    soft = key == "softmax"
    key[soft] = np.where(warp[soft], "softmax:warp", "softmax:block")
    return key


def work(configs: pd.DataFrame | Mapping | None = None, **config) -> pd.DataFrame:
    """FLOPs and bytes each config moves, and the kernel it runs (`key`), as a DataFrame.

    Configs: op (elementwise, softmax, layer_norm, concat, transpose, memcpy), rows, cols
    (a [rows, cols] tensor; for concat the output), fn (element-wise function, or the copy
    direction h2d, d2h, d2d of memcpy), dtype (default float32).
    """
    return _work(_configs(configs, config))


def _work(cfg: Configs) -> pd.DataFrame:
    c = cfg.cols
    op, fn, rows, cols = c["op"], c["fn"], c["rows"], c["cols"]
    elem = lookup(c["dtype"], DTYPE_BYTES).astype(np.float64)
    n = rows * cols
    flops_pe = np.zeros(cfg.n)
    acc = np.full(cfg.n, 2.0)  # read + write: softmax, layer norm, concat, transpose, d2d copy
    ew = op == "elementwise"
    if ew.any():
        flops_pe[ew] = lookup(fn[ew], {k: v[0] for k, v in ELEMENTWISE.items()}, DEFAULT_FN[0]).astype(np.float64)
        acc[ew] = lookup(fn[ew], {k: v[1] for k, v in ELEMENTWISE.items()}, DEFAULT_FN[1]).astype(np.float64)
    for name, fl in ROW_FLOPS.items():
        flops_pe[op == name] = fl
    host = (op == "memcpy") & (fn != "d2d")
    acc[host] = 1.0  # one crossing of the host link
    nbytes = n * elem * acc
    ln = op == "layer_norm"
    nbytes = nbytes + np.where(ln, elem * 2 * cols + 4.0 * 2 * rows, 0.0)  # gamma, beta; mean, rstd
    return pd.DataFrame(
        {
            "key": kernel_keys(op, fn, cols, elem),
            "rows": rows,
            "cols": cols,
            "elem_bytes": elem,
            "flops": n * flops_pe,
            "bytes": nbytes,
            "host_link": host,
        },
        index=cfg.index,
    )


def _features(w: pd.DataFrame, reread_cols: float | None, rows_term: bool) -> np.ndarray:
    """Design matrix: 1, bytes[, rows][, bytes of rows longer than reread_cols]."""
    cols = [np.ones(len(w)), w["bytes"].to_numpy()]
    if rows_term:
        cols.append(w["rows"].to_numpy())
    if reread_cols is not None:
        r = w["rows"].to_numpy() * w["cols"].to_numpy() * w["elem_bytes"].to_numpy()
        cols.append(np.where(w["cols"].to_numpy() > reread_cols, r, 0.0))
    return np.column_stack(cols)


def _coef_names(rows_term: bool, reread: bool) -> list[str]:
    return ["const", "bytes"] + (["rows"] if rows_term else []) + (["reread_bytes"] if reread else [])


def _combine(x: np.ndarray, coef) -> np.ndarray:
    """x @ coef summed column by column, so one row gives the same bits as many rows."""
    out = np.zeros(len(x))
    for j in range(x.shape[1]):
        out = out + coef[j] * x[:, j]
    return out


def _full_rank(x: np.ndarray) -> bool:
    scale = np.abs(x).max(axis=0)
    if (scale == 0).any():
        return False
    return np.linalg.matrix_rank(x / scale) == x.shape[1]


# ---------------------------------------------------------------- fitting
def _wls(y: np.ndarray, x: np.ndarray):
    return wls_relative(x, y)


def _fit_kernel(w: pd.DataFrame, t: np.ndarray, per_row: bool) -> dict | None:
    """Fit one kernel on one GPU: the floor on the smallest tensors, the streaming line on the
    rest. The split (a quantile of bytes) and, for per-row kernels, whether to use the row term
    and which re-read threshold are those with the least relative squared error of
    max(floor, line) over all training rows, among fits with a significantly positive bytes
    coefficient (t > 2), row costs >= 0 and at least 3 rows clearly above the floor."""
    if len(t) < MIN_ROWS:
        return None
    b = w["bytes"].to_numpy()
    shapes: list[tuple[bool, float | None]] = [(False, None)]
    if per_row:
        lo_c, hi_c = w["cols"].min(), w["cols"].max()
        thresholds = [None] + [float(m) for m in range(REREAD_STEP, int(hi_c), REREAD_STEP) if m >= lo_c]
        shapes = [(rt, thr) for thr in thresholds for rt in (False, True)]
    knees = np.unique(np.quantile(b, KNEES))
    floors: dict[float, Any] = {}
    best = None

    def consider(lo: np.ndarray, x: np.ndarray, rows_term: bool, thr: float | None, knee: float, cache: bool = True):
        nonlocal best
        if lo.sum() < 3 or (~lo).sum() < x.shape[1] + 3 or not _full_rank(x[~lo]):
            return
        line = _wls(t[~lo], x[~lo])
        if not line.tvalues[1] > 2 or (line.params[2:] < 0).any():
            return  # no (significant) bandwidth term, or a negative row cost: no roofline
        fl = floors.get(knee) if cache else None
        if fl is None:  # the floor depends on the split only: fit it once per knee
            fl = _wls(t[lo], np.ones((lo.sum(), 1)))
            if cache:
                floors[knee] = fl
        lin = _combine(x, line.params)
        if (lin > 1.01 * fl.params[0]).sum() < 3:
            return  # the line never clearly rises above the floor: nothing to fit it on
        pred = np.maximum(fl.params[0], lin)
        sse = float(np.sum(((pred - t) / t) ** 2))
        if best is None or sse < best[0] * (1 - _FIT.tie_rtol):  # near-ties keep the first (fixed order)
            best = (sse, rows_term, thr, knee, fl, line, pred, int(lo.sum()))

    for rows_term, thr in shapes:
        x = _features(w, thr, rows_term)
        for knee in knees:
            consider(b <= knee, x, rows_term, thr, float(knee))
    for _ in range(REFINE):
        # Refine the split: give the floor exactly the rows the chosen line puts below it and
        # refit, while that lowers the error (a quantile of bytes rarely falls on the corner).
        if best is None:
            break
        prev = best
        _, rows_term, thr, _, fl, line, _, _ = best
        x = _features(w, thr, rows_term)
        lo = _combine(x, line.params) <= fl.params[0]
        consider(lo, x, rows_term, thr, float(b[lo].max()) if lo.any() else 0.0, cache=False)
        if best is prev:
            break
    if best is None:  # nothing rises above the floor: a floor only, bandwidth from the datasheet
        fl = _wls(t, np.ones((len(t), 1)))
        return {
            "floor_ms": float(fl.params[0]),
            "floor_se_ms": float(fl.bse[0]),
            "coef": None,
            "n": len(t),
            "n_floor": len(t),
            "bw_source": "datasheet",
            **_train_err(np.full(len(t), fl.params[0]), t),
        }
    _, rows_term, thr, knee, fl, line, pred, n_floor = best
    names = _coef_names(rows_term, thr is not None)
    coef = {k: float(v) for k, v in zip(names, line.params)}
    se = {k: float(v) for k, v in zip(names, line.bse)}
    out = {
        "floor_ms": float(fl.params[0]),
        "floor_se_ms": float(fl.bse[0]),
        "coef": coef,
        "coef_se": se,
        "reread_cols": thr,
        "knee_bytes": knee,
        "bw_gbs": 1e-6 / coef["bytes"],
        "bw_se_gbs": 1e-6 * se["bytes"] / coef["bytes"] ** 2,
        "latency_us": 1e3 * coef["const"],
        "n": len(t),
        "n_floor": n_floor,
        "bw_source": "fit",
        **_train_err(pred, t),
    }
    if "rows" in coef:
        out["row_ns"] = 1e6 * coef["rows"]
    if "reread_bytes" in coef:
        out["reread_gbs"] = 1e-6 / coef["reread_bytes"] if coef["reread_bytes"] > 0 else None
    return out


def _train_err(pred: np.ndarray, t: np.ndarray) -> dict:
    e = np.abs(pred - t) / t
    return {"train_rmspe": float(np.sqrt(np.mean(e**2))), "train_median_ape": float(np.median(e))}


def _memory_records(records: pd.DataFrame) -> pd.DataFrame:
    for c in ("gpu", "op", "rows", "cols", "time_ms"):
        if c not in records:
            raise SeerError(
                f"records: column {c!r} is missing (memory-bound records need gpu, op, rows, cols, fn, time_ms)"
            )
    rec = records[records["op"].isin(OPS)]
    if "status" in rec:
        rec = rec[rec["status"].isin(["ok", ""])]
    if rec.empty:
        raise SeerError(f"records: no rows of a memory-bound op ({', '.join(OPS)})")
    t = rec["time_ms"].to_numpy(dtype="float64", na_value=np.nan)
    bad = ~(np.isfinite(t) & (t > 0))
    if bad.any():
        raise SeerError(
            f"records: column 'time_ms', row {rec.index[np.flatnonzero(bad)[0]]!r}: expected a time in ms > 0"
        )
    return rec


def fit_memory_bound(records: pd.DataFrame) -> dict:
    """Fit the effective bandwidth, floor and row terms per GPU and kernel from measurements.

    `records`: tidy records (seer.data.records) of memory-bound ops with gpu, op, rows, cols, fn,
    (dtype), time_ms. Returns a JSON-serializable dict; the same rows in any order give the
    same dict. Per GPU it also holds a pooled element-wise fit ("elementwise"), used for an
    element-wise function or a DRAM-bound kernel that GPU has no measurements of.
    """
    rec = _memory_records(records)
    cols = [c for c in ("op", "rows", "cols", "fn", "dtype") if c in rec]
    cfg = _configs(rec[cols].reset_index(drop=True), {}, any_fn=True)
    w = _work(cfg)
    names = rec["gpu"].astype(str).to_numpy(dtype=object)
    w["gpu"] = lookup(names, {g: spec_of(g).slug for g in pd.unique(names)})
    w["gpu_name"] = names
    w["op"] = cfg.cols["op"]
    w["time_ms"] = rec["time_ms"].to_numpy(dtype="float64")
    order = ["gpu", "key", "bytes", "rows", "cols", "time_ms"]
    w = w.sort_values(order, kind="mergesort").reset_index(drop=True)
    digest = hashlib.sha256(pd.util.hash_pandas_object(w[order], index=False).to_numpy().tobytes())
    out: dict = {
        "schema": SCHEMA,
        "model": "t = max(floor, const + bytes/bw + rows*row_cost + reread_bytes/bw2, flops/peak_flops); weights 1/t^2",
        "n_rows": len(w),
        "content_sha256": digest.hexdigest(),
        "gpus": {},
    }
    for slug, g in w.groupby("gpu", sort=True):
        name = min(pd.unique(g["gpu_name"]))  # one name per GPU, whatever the row order
        spec = spec_of(slug if slug in gpus.GPUS else name)
        pk = peaks_for(spec)
        kernels = {}
        for key, k in g.groupby("key", sort=True):
            op = key.split(":")[0]
            fit = _fit_kernel(k, k["time_ms"].to_numpy(), op in PER_ROW)
            if fit is not None:
                kernels[key] = fit
        ew = g[g["op"] == "elementwise"]
        pools = [("elementwise", ew)] + list(ew.groupby(ew["key"].map(arity_pool), sort=True))
        for pool, part in pools:  # all functions, then those of each arity
            if part["key"].nunique() > 1:
                fit = _fit_kernel(part, part["time_ms"].to_numpy(), False)
                if fit is not None:
                    kernels[pool] = fit
        out["gpus"][spec.slug] = {
            "name": str(name),
            "cc": spec.cc,
            "datasheet": {"dram_gbs": pk.dram_gbs, "fp32_gflops": pk.fp32_gflops, "pcie_gbs": pk.pcie_gbs},
            "kernels": kernels,
        }
    return out


# ---------------------------------------------------------------- prediction
def _gpu_params(params: Mapping | None, slug: str) -> Mapping | None:
    if params is None:
        return None
    if not isinstance(params, Mapping) or params.get("schema") != SCHEMA:
        got = params.get("schema") if isinstance(params, Mapping) else type(params).__name__
        raise SeerError(
            f"argument params: expected parameters from fit_memory_bound (schema {SCHEMA}), got schema {got!r}"
        )
    return params.get("gpus", {}).get(slug)


def arity_pool(key: str) -> str:
    """The pooled kernel of an element-wise key's arity: elementwise(unary), (binary), ..."""
    fn = key.split(":", 1)[1] if ":" in key else ""
    return f"elementwise({ARITY.get(ELEMENTWISE.get(fn, DEFAULT_FN)[1] - 1, 'n-ary')})"


def _fitted_fns(params: Mapping | None) -> set[str]:
    """Element-wise functions some GPU of `params` was fitted on (valid in predictions)."""
    if not isinstance(params, Mapping) or params.get("schema") != SCHEMA:
        return set()
    return {
        k.split(":", 1)[1]
        for g in params.get("gpus", {}).values()
        for k in g.get("kernels", {})
        if k.startswith("elementwise:")
    }


def _choose(key: str, kernels: Mapping) -> tuple[str | None, str]:
    """The fitted kernel whose line to use for `key` (None: the datasheet bandwidth), and a
    label of where the numbers come from: the key's own fit, else (element-wise) the pooled
    fit of its arity, else the pooled fit of every element-wise function, else the datasheet."""
    if key in kernels and kernels[key].get("coef") is not None:
        return key, f"fit:{key}"
    if key in kernels:  # measured, but never above its floor: fitted floor, datasheet bandwidth
        return None, f"fit:{key} (floor only) + datasheet"
    if key.startswith("memcpy:") and key != "memcpy:d2d":
        return None, "datasheet"  # host link: no DRAM fit stands in for PCIe
    pool = arity_pool(key)
    if key.startswith("elementwise:") and kernels.get(pool, {}).get("coef") is not None:
        return pool, f"fit:{pool} (pooled stand-in)"
    if "elementwise" in kernels and kernels["elementwise"].get("coef") is not None:
        return "elementwise", "fit:elementwise (pooled stand-in)"
    return None, "datasheet"


def _detail(cfg: Configs, params: Mapping | None, gpu: str | GPUSpec | None, floor_ms: float | None) -> pd.DataFrame:
    w = _work(cfg)
    if gpu is not None:
        groups = [(gpu, np.ones(cfg.n, dtype=bool))]
    elif "gpu" in cfg.cols and (cfg.cols["gpu"] != "").all():
        codes, uniq = pd.factorize(cfg.cols["gpu"])
        groups = [(g, codes == i) for i, g in enumerate(uniq)]
    else:
        raise SeerError("argument gpu: a GPU name is needed (or a 'gpu' column in the configs)")
    if floor_ms is not None and not (np.isfinite(floor_ms) and floor_ms >= 0):
        raise SeerError(f"argument floor_ms: expected a time in ms >= 0, got {floor_ms!r}")
    n = cfg.n
    res = {k: np.full(n, np.nan) for k in ("compute_ms", "memory_ms", "floor_ms", "time_ms")}
    source = np.full(n, "", dtype=object)
    keys = w["key"].to_numpy()
    key_codes, key_names = pd.factorize(keys)
    for g, rows in groups:
        spec = spec_of(g)
        pk = peaks_for(spec)
        kernels = (_gpu_params(params, spec.slug) or {}).get("kernels", {})
        for code in np.unique(key_codes[rows]):
            key = key_names[code]
            sel = rows & (key_codes == code)
            ws = w[sel]
            compute = ws["flops"].to_numpy() / (pk.fp32_gflops * 1e6)  # ms
            use, label = _choose(key, kernels)
            if use is None:
                host = key in ("memcpy:h2d", "memcpy:d2h")
                bw = pk.pcie_gbs if host else pk.dram_gbs
                mem = ws["bytes"].to_numpy() / (bw * 1e6)
                if key in kernels:  # a measured floor: the fitted form, max(floor, roofline)
                    fl = kernels[key]["floor_ms"] if floor_ms is None else floor_ms
                    t = np.maximum(np.maximum(fl, mem), compute)
                else:
                    fl = DATASHEET_FLOOR_MS if floor_ms is None else floor_ms
                    t = fl + np.maximum(compute, mem)
            else:
                k = kernels[use]
                names = _coef_names("rows" in k["coef"], k.get("reread_cols") is not None)
                coef = np.array([k["coef"][c] for c in names])
                x = _features(ws, k.get("reread_cols"), "rows" in k["coef"])
                mem = _combine(x, coef)
                fl = k["floor_ms"] if floor_ms is None else floor_ms
                t = np.maximum(np.maximum(fl, mem), compute)
            res["compute_ms"][sel] = compute
            res["memory_ms"][sel] = mem
            res["floor_ms"][sel] = fl
            res["time_ms"][sel] = t
            source[sel] = label
    bound = np.where(
        res["compute_ms"] >= np.maximum(res["memory_ms"], res["floor_ms"]),
        "compute",
        np.where(res["memory_ms"] >= res["floor_ms"], "memory", "floor"),
    )
    return pd.DataFrame(
        {
            "key": keys,
            "flops": w["flops"].to_numpy(),
            "bytes": w["bytes"].to_numpy(),
            **res,
            "bound": bound,
            "source": source,
        },
        index=cfg.index,
    )


def memory_bound_detail(
    configs: pd.DataFrame | Mapping | None = None,
    params: Mapping | None = None,
    gpu: str | GPUSpec | None = None,
    *,
    floor_ms: float | None = None,
    **config,
) -> pd.DataFrame:
    """Per config: kernel key, FLOPs, bytes, compute and memory times, floor, predicted time
    (ms), the bound (floor, memory or compute) and where the numbers come from (fit:<kernel>,
    the GPU's pooled element-wise fit standing in, or datasheet)."""
    return _detail(_configs(configs, config, _fitted_fns(params)), params, gpu, floor_ms)


def predict_memory_bound(
    configs: pd.DataFrame | Mapping | None = None,
    params: Mapping | None = None,
    gpu: str | GPUSpec | None = None,
    *,
    unit: str = "ms",
    floor_ms: float | None = None,
    **config,
) -> float | np.ndarray:
    """Predicted time of memory-bound kernels: a float for one config given by keyword, an
    array for a DataFrame (columns op, rows, cols, fn, dtype; gpu where `gpu` is None).

    `params` from `fit_memory_bound`; None, or a GPU it lacks, uses the datasheet.
    `floor_ms` replaces the fitted (or nominal) floor. `unit`: "ms" (default), "us" or "s".
    """
    f = unit_factor(unit)
    cfg = _configs(configs, config, _fitted_fns(params))
    vals = _detail(cfg, params, gpu, floor_ms)["time_ms"].to_numpy() * f
    return float(vals[0]) if cfg.single else vals


def fitted_table(params: Mapping) -> pd.DataFrame:
    """The fitted parameters as a table: per GPU and kernel, effective bandwidth (and its share
    of the datasheet peak), floor, latency, row cost, re-read threshold, n."""
    _gpu_params(params, "")
    rows = []
    for g in params["gpus"].values():
        for key, k in g["kernels"].items():
            host = key in ("memcpy:h2d", "memcpy:d2h")
            peak = g["datasheet"]["pcie_gbs" if host else "dram_gbs"]
            bw = k.get("bw_gbs")
            rows.append(
                {
                    "gpu": g["name"],
                    "kernel": key,
                    "n": k["n"],
                    "bw_gbs": bw,
                    "bw_se_gbs": k.get("bw_se_gbs"),
                    "datasheet_gbs": peak,
                    "bw_of_peak": None if bw is None else bw / peak,
                    "floor_us": 1e3 * k["floor_ms"],
                    "floor_se_us": 1e3 * k["floor_se_ms"],
                    "latency_us": k.get("latency_us"),
                    "row_ns": k.get("row_ns"),
                    "reread_cols": k.get("reread_cols"),
                    "reread_gbs": k.get("reread_gbs"),
                }
            )
    return pd.DataFrame(rows)
