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

This module holds the closed forms only: the work of each config, the time given parameters
(`Line`, `KernelLaw`) and the datasheet fallback. The fit of those parameters is
seer.models.memory (`MemoryBoundModel(...).fit(records) -> MemoryBoundFit`); the predictors here
take its results, or the JSON section they write (a fits file's "memory_bound").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NoReturn, Protocol

import numpy as np
import pandas as pd

from seer.analytical._inputs import Configs, check_choice, check_counts, gather, lookup, unit_factor
from seer.data.records import MEMORY_OPS
from seer.errors import SeerError
from seer.hardware.dtypes import DTYPE_BYTES
from seer.hardware.gpus import GPUSpec
from seer.hardware.peaks import peaks_for, spec_of

SCHEMA = "seer.analytical.memory_bound/1"

# fn -> (FLOPs per element, memory accesses per element). relu, sigmoid and binary
# cross-entropy are the DLRM repo's counts (docs/reference.md, the DLRM predictors); the others count one
# operation per arithmetic step and one per transcendental function (exp, tanh, erf).
# The DLRM repo's 175 FLOPs for gelu is not used: at the rate NeuSight measured gelu on an
# A100 that many FP32 operations would exceed the GPU's peak (docs/model.md).
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
# The terms of a kernel's streaming line, in the order they are summed (a fits file's `coef`):
# ms, ms per byte moved, ms per row, ms per byte re-read (rows longer than reread_cols).
TERMS = ("const", "bytes", "rows", "reread_bytes")


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


BY_FN = ("elementwise", "memcpy")  # ops with one kernel per function or copy direction


@dataclass(frozen=True)
class KernelKey:
    """Which memory-bound kernel: the op and, where an op runs one kernel per function, copy
    direction or row length, which one. Fits files and frames keep it as text, 'op' or
    'op:detail' (elementwise:relu, memcpy:d2d, softmax:warp); in code it is this object."""

    op: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.op}:{self.detail}" if self.detail or self.op in BY_FN else self.op

    @classmethod
    def parse(cls, text: str) -> KernelKey:
        op, _, detail = text.partition(":")
        return cls(op, detail)


def kernel_keys(op: np.ndarray, fn: np.ndarray, cols: np.ndarray, elem: np.ndarray) -> np.ndarray:
    """Which fitted kernel a config uses: elementwise:<fn>, softmax:warp|block, layer_norm,
    concat, transpose, memcpy:<direction> (KernelKey as text)."""
    codes, uniq = pd.MultiIndex.from_arrays([np.asarray(op, dtype=object), np.asarray(fn, dtype=object)]).factorize()
    names = np.array([str(KernelKey(o, f if o in BY_FN else "")) for o, f in uniq], dtype=object)
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


def measured_work(configs: pd.DataFrame) -> pd.DataFrame:
    """`work` of measured configs (what a fit learns from), with their `op`: an element-wise
    function the table lacks is taken, counted as DEFAULT_FN, instead of refused as a typo."""
    cfg = _configs(configs, {}, any_fn=True)
    return _work(cfg).assign(op=cfg.cols["op"])


# ---------------------------------------------------------------- the time given parameters
def line_features(w: pd.DataFrame, reread_cols: float | None, rows_term: bool) -> np.ndarray:
    """Design matrix of a kernel's line over `work` rows: 1, bytes[, rows][, bytes of rows
    longer than reread_cols] (the columns of TERMS that the line has)."""
    cols = [np.ones(len(w)), w["bytes"].to_numpy()]
    if rows_term:
        cols.append(w["rows"].to_numpy())
    if reread_cols is not None:
        r = w["rows"].to_numpy() * w["cols"].to_numpy() * w["elem_bytes"].to_numpy()
        cols.append(np.where(w["cols"].to_numpy() > reread_cols, r, 0.0))
    return np.column_stack(cols)


def line_terms(rows_term: bool, reread: bool) -> list[str]:
    """The TERMS a line has, in order: const, bytes[, rows][, reread_bytes]."""
    return ["const", "bytes"] + (["rows"] if rows_term else []) + (["reread_bytes"] if reread else [])


def combine(x: np.ndarray, coef) -> np.ndarray:
    """x @ coef summed column by column, so one row gives the same bits as many rows."""
    out = np.zeros(len(x))
    for j in range(x.shape[1]):
        out = out + coef[j] * x[:, j]
    return out


@dataclass(frozen=True)
class Line:
    """A kernel's streaming line in ms: const + bytes * (bytes moved) [+ rows * (rows)]
    [+ reread_bytes * (bytes of rows longer than reread_cols)]. Each coefficient is named by
    its term (TERMS); `rows` and `reread_bytes` are None where the line lacks the term, and
    `reread_bytes` is set exactly where `reread_cols` is."""

    const: float
    bytes: float
    rows: float | None = None
    reread_bytes: float | None = None
    reread_cols: float | None = None

    def __post_init__(self) -> None:
        if (self.reread_bytes is None) != (self.reread_cols is None):
            raise SeerError(
                "a memory-bound line has a reread_bytes coefficient exactly where it has reread_cols "
                f"(got reread_bytes={self.reread_bytes!r}, reread_cols={self.reread_cols!r})"
            )

    @property
    def coef(self) -> dict[str, float]:
        """The coefficients by term, in the order they are summed (a fits file's `coef`)."""
        values = (self.const, self.bytes, self.rows, self.reread_bytes)
        return {t: v for t, v in zip(TERMS, values) if v is not None}

    @classmethod
    def from_coef(cls, coef: Mapping[str, float], reread_cols: float | None = None) -> Line:
        """The line of a fits file's `coef` object (and its kernel's reread_cols)."""
        unknown = sorted(set(coef) - set(TERMS))
        if unknown or "const" not in coef or "bytes" not in coef:
            raise SeerError(
                f"a memory-bound line needs coefficients {', '.join(TERMS[:2])} (and maybe {', '.join(TERMS[2:])}), "
                f"got {', '.join(sorted(coef)) or 'none'}"
            )

        def opt(term: str) -> float | None:
            return None if coef.get(term) is None else float(coef[term])

        return cls(
            const=float(coef["const"]),
            bytes=float(coef["bytes"]),
            rows=opt("rows"),
            reread_bytes=opt("reread_bytes"),
            reread_cols=None if reread_cols is None else float(reread_cols),
        )

    def scaled(self, factors: Mapping[str, float]) -> Line:
        """Each coefficient times the factor of its term (1 where `factors` lacks it)."""
        return Line.from_coef({t: v * factors.get(t, 1.0) for t, v in self.coef.items()}, self.reread_cols)

    def time(self, w: pd.DataFrame) -> np.ndarray:
        """The line's time (ms) over `work` rows."""
        x = line_features(w, self.reread_cols, self.rows is not None)
        return combine(x, np.array(list(self.coef.values())))


class KernelParams(Protocol):
    """What prediction reads of a fitted kernel: the floor, and the line (None: only the
    floor was measured, the bandwidth is the datasheet's)."""

    @property
    def floor_ms(self) -> float: ...

    @property
    def line(self) -> Line | None: ...


class MemoryParams(Protocol):
    """Fitted parameters (seer.models.memory.MemoryBoundFit): per GPU slug, per kernel key."""

    def kernel_laws(self) -> Mapping[str, Mapping[str, KernelParams]]: ...


@dataclass(frozen=True)
class KernelLaw:
    """A kernel's time law, t = max(floor, line, FLOPs / peak): the KernelParams of a fits
    file's kernel entry."""

    floor_ms: float
    line: Line | None = None

    @classmethod
    def from_dict(cls, k: Mapping) -> KernelLaw:
        coef = k.get("coef")
        return cls(float(k["floor_ms"]), None if coef is None else Line.from_coef(coef, k.get("reread_cols")))


def _laws(params: Mapping | MemoryParams | None) -> Mapping[str, Mapping[str, KernelParams]]:
    """Per GPU slug, per kernel key, the parameters prediction reads (empty: the datasheet)."""
    if params is None:
        return {}
    if isinstance(params, Mapping):
        if params.get("schema") != SCHEMA:
            _refuse(params)
        return {
            slug: {key: KernelLaw.from_dict(k) for key, k in g.get("kernels", {}).items()}
            for slug, g in params.get("gpus", {}).items()
        }
    if not callable(getattr(params, "kernel_laws", None)):
        _refuse(params)
    return params.kernel_laws()


def _refuse(params: object) -> NoReturn:
    got = params.get("schema") if isinstance(params, Mapping) else type(params).__name__
    raise SeerError(
        "argument params: expected parameters from seer.models.memory (a MemoryBoundFit, or its "
        f"to_dict(): schema {SCHEMA}), got schema {got!r}"
    )


def arity_pool(key: str) -> str:
    """The pooled kernel of an element-wise key's arity: elementwise(unary), (binary), ..."""
    fn = KernelKey.parse(key).detail
    return f"elementwise({ARITY.get(ELEMENTWISE.get(fn, DEFAULT_FN)[1] - 1, 'n-ary')})"


def _fitted_fns(laws: Mapping[str, Mapping[str, KernelParams]]) -> set[str]:
    """Element-wise functions some GPU of the parameters was fitted on (valid in predictions)."""
    keys = (KernelKey.parse(k) for kernels in laws.values() for k in kernels)
    return {k.detail for k in keys if k.op == "elementwise"}


def _choose(key: str, kernels: Mapping[str, KernelParams]) -> tuple[str | None, str]:
    """The fitted kernel whose line to use for `key` (None: the datasheet bandwidth), and a
    label of where the numbers come from: the key's own fit, else (element-wise) the pooled
    fit of its arity, else the pooled fit of every element-wise function, else the datasheet."""
    if key in kernels and kernels[key].line is not None:
        return key, f"fit:{key}"
    if key in kernels:  # measured, but never above its floor: fitted floor, datasheet bandwidth
        return None, f"fit:{key} (floor only) + datasheet"
    if key.startswith("memcpy:") and key != "memcpy:d2d":
        return None, "datasheet"  # host link: no DRAM fit stands in for PCIe
    pool = arity_pool(key)
    if key.startswith("elementwise:") and pool in kernels and kernels[pool].line is not None:
        return pool, f"fit:{pool} (pooled stand-in)"
    if "elementwise" in kernels and kernels["elementwise"].line is not None:
        return "elementwise", "fit:elementwise (pooled stand-in)"
    return None, "datasheet"


def _detail(
    cfg: Configs,
    laws: Mapping[str, Mapping[str, KernelParams]],
    gpu: str | GPUSpec | None,
    floor_ms: float | None,
) -> pd.DataFrame:
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
        kernels = laws.get(spec.slug) or {}
        for code in np.unique(key_codes[rows]):
            key = key_names[code]
            sel = rows & (key_codes == code)
            ws = w[sel]
            compute = ws["flops"].to_numpy() / (pk.fp32_gflops * 1e6)  # ms
            use, label = _choose(key, kernels)
            line = None if use is None else kernels[use].line
            if line is None:
                host = key in ("memcpy:h2d", "memcpy:d2h")
                bw = pk.pcie_gbs if host else pk.dram_gbs
                mem = ws["bytes"].to_numpy() / (bw * 1e6)
                if key in kernels:  # a measured floor: the fitted form, max(floor, roofline)
                    fl = kernels[key].floor_ms if floor_ms is None else floor_ms
                    t = np.maximum(np.maximum(fl, mem), compute)
                else:
                    fl = DATASHEET_FLOOR_MS if floor_ms is None else floor_ms
                    t = fl + np.maximum(compute, mem)
            else:
                assert use is not None
                mem = line.time(ws)
                fl = kernels[use].floor_ms if floor_ms is None else floor_ms
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
    params: Mapping | MemoryParams | None = None,
    gpu: str | GPUSpec | None = None,
    *,
    floor_ms: float | None = None,
    **config,
) -> pd.DataFrame:
    """Per config: kernel key, FLOPs, bytes, compute and memory times, floor, predicted time
    (ms), the bound (floor, memory or compute) and where the numbers come from (fit:<kernel>,
    the GPU's pooled element-wise fit standing in, or datasheet)."""
    laws = _laws(params)
    return _detail(_configs(configs, config, _fitted_fns(laws)), laws, gpu, floor_ms)


def predict_memory_bound(
    configs: pd.DataFrame | Mapping | None = None,
    params: Mapping | MemoryParams | None = None,
    gpu: str | GPUSpec | None = None,
    *,
    unit: str = "ms",
    floor_ms: float | None = None,
    **config,
) -> float | np.ndarray:
    """Predicted time of memory-bound kernels: a float for one config given by keyword, an
    array for a DataFrame (columns op, rows, cols, fn, dtype; gpu where `gpu` is None).

    `params`: a seer.models.memory.MemoryBoundFit, or its to_dict() (a fits file's
    "memory_bound"); None, or a GPU it lacks, uses the datasheet. `floor_ms` replaces the
    fitted (or nominal) floor. `unit`: "ms" (default), "us" or "s".
    """
    f = unit_factor(unit)
    laws = _laws(params)
    cfg = _configs(configs, config, _fitted_fns(laws))
    vals = _detail(cfg, laws, gpu, floor_ms)["time_ms"].to_numpy() * f
    return float(vals[0]) if cfg.single else vals


def fitted_table(params: Mapping | MemoryParams) -> pd.DataFrame:
    """The fitted parameters as a table: per GPU and kernel, effective bandwidth (and its share
    of the datasheet peak), floor, latency, row cost, re-read threshold, n. `params`: a
    MemoryBoundFit or its to_dict()."""
    _laws(params)
    to_dict = getattr(params, "to_dict", None)
    doc: Mapping = params if isinstance(params, Mapping) else to_dict() if callable(to_dict) else {}
    rows = []
    for g in doc["gpus"].values():
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
