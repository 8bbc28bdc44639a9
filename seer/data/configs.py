"""Quantities derived from a configuration alone: shapes, GEMM-equivalent sizes, FLOPs, bytes.

Prediction needs nothing but the configuration, so every feature of the models is computed
here from the record's configuration columns (vectorized over a DataFrame).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seer.data.records import CONV_FIELDS, CONV_OPS, GEMM_OPS, OPS, conv_output_hw
from seer.data.records.schema import MAX_INT
from seer.errors import SeerError
from seer.hardware.dtypes import MODEL_DTYPES, element_bytes


def col(df: pd.DataFrame, name: str) -> np.ndarray:
    """A record column as float64 (NaN where missing)."""
    if name not in df:
        return np.full(len(df), np.nan)
    return df[name].to_numpy(dtype="float64", na_value=np.nan)


def check_configs(df: pd.DataFrame, op: str) -> None:
    """Every dimension `op` needs is a whole number >= 1 (padding >= 0), the dtype one the models
    know, and for convolutions the groups divide the channels and the output is at least 1x1.

    Impossible configurations would otherwise be predicted (a filter larger than its padded
    input, 2.5 images). All rows are checked at once; the first bad row (its index in `df`) is
    named with the first rule it breaks, in one SeerError."""
    if op not in OPS:
        raise SeerError(f"unknown op {op!r}; seer knows {', '.join(OPS)}")
    for c in OPS[op]:
        if c != "fn" and c not in df:
            raise SeerError(f"configs for op {op} need a column '{c}'")
    if _valid(df, op):
        return
    problems: list[tuple[np.ndarray, Callable[[int], str]]] = []

    def rule(bad: np.ndarray, what: str, *cols: str) -> None:
        problems.append((bad, lambda i: f"{what}, got {_values(df, i, cols)}"))

    v: dict[str, np.ndarray] = {}
    for c in OPS[op]:
        if c == "fn":
            continue
        if c not in df:
            raise SeerError(f"configs for op {op} need a column '{c}'")
        low = 0 if c.startswith("pad") else 1
        v[c] = x = _numbers(df[c])
        rule(~(np.isfinite(x) & (x >= low)), f"'{c}' must be a number >= {low} for op {op}", c)
        rule(np.isfinite(x) & (x != np.floor(x)), f"'{c}' must be a whole number for op {op}", c)
        rule(np.isfinite(x) & (x >= MAX_INT), f"'{c}' must be below 2**63 for op {op}, as in a record", c)
    if (op in CONV_OPS or op in GEMM_OPS) and "dtype" in df:
        rule(
            ~df["dtype"].isin(MODEL_DTYPES + ("",)).to_numpy(),
            f"'dtype' must be one of {', '.join(MODEL_DTYPES)} for op {op}",
            "dtype",
        )
    if op in CONV_OPS:
        for c in ("c_in", "c_out"):
            with np.errstate(invalid="ignore"):
                rule(np.mod(v[c], v["groups"]) > 0, f"'groups' must divide '{c}' for op {op}", "groups", c)
        P, Q = conv_output_hw(pd.DataFrame(v))

        def output(i: int) -> str:
            g = {c: f"{x[i]:g}" for c, x in v.items()}
            return (
                f"a {g['kh']}x{g['kw']} filter (kh x kw, dilation {g['dil_h']}x{g['dil_w']}) on a "
                f"{g['h_in']}x{g['w_in']} input (h_in x w_in, padding {g['pad_h']}x{g['pad_w']}, stride "
                f"{g['stride_h']}x{g['stride_w']}) gives a {P[i]:g}x{Q[i]:g} output; expected an output "
                f"of at least 1x1 for op {op}"
            )

        problems.append(((P < 1) | (Q < 1), output))
    rows = [int(np.argmax(bad)) for bad, _ in problems if bad.any()]
    if rows:
        i = min(rows)
        say = next(say for bad, say in problems if bad[i])
        raise SeerError(f"config row {df.index[i]}: {say(i)}")


def _valid(df: pd.DataFrame, op: str) -> bool:
    """Whether every row keeps every rule of `check_configs` (which then has nothing to name):
    the same rules, tested for all rows at once without building the masks that name a row."""
    v: dict[str, np.ndarray] = {}
    for c in OPS[op]:
        if c == "fn":
            continue
        s = df[c]
        low = 0 if c.startswith("pad") else 1
        if pd.api.types.is_integer_dtype(s.dtype) and isinstance(s.dtype, np.dtype):
            x = s.to_numpy()  # whole numbers, finite
            if len(x) and x.min() < low:
                return False
            if op in CONV_OPS:
                v[c] = x.astype(np.float64)
            continue
        if not pd.api.types.is_float_dtype(s.dtype) or not isinstance(s.dtype, np.dtype):
            return False  # booleans, objects, nullable numbers: the rules name the row, if any
        x = s.to_numpy()
        with np.errstate(invalid="ignore"):
            if not (np.isfinite(x).all() and (x >= low).all() and (x == np.floor(x)).all() and (x < MAX_INT).all()):
                return False
        v[c] = x
    known = MODEL_DTYPES + ("",)
    if (op in CONV_OPS or op in GEMM_OPS) and "dtype" in df and not df["dtype"].isin(known).all():
        return False
    if op in CONV_OPS:
        g = v["groups"]
        if not (g == 1).all():
            with np.errstate(invalid="ignore"):
                if (np.mod(v["c_in"], g) > 0).any() or (np.mod(v["c_out"], g) > 0).any():
                    return False
        P, Q = conv_output_hw(pd.DataFrame(v, copy=False))
        if (P < 1).any() or (Q < 1).any():
            return False
    return True


def _numbers(s: pd.Series) -> np.ndarray:
    """A column as float64, NaN where it holds no number (booleans, strings and None count as none)."""
    if pd.api.types.is_bool_dtype(s):
        return np.full(len(s), np.nan)
    if pd.api.types.is_numeric_dtype(s):
        return s.to_numpy(dtype="float64", na_value=np.nan)
    vals = s.to_numpy(dtype=object)  # object columns only: per value, not the numeric hot path
    return np.fromiter(
        (
            float(x)
            if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))
            else np.nan
            for x in vals
        ),
        dtype=float,
        count=len(vals),
    )


def _values(df: pd.DataFrame, i: int, cols: tuple[str, ...]) -> str:
    """The values of row position i, as the user wrote them (5, not np.int64(5))."""
    vals = [df[c].iloc[i] for c in cols]
    vals = [x.item() if isinstance(x, np.generic) else x for x in vals]
    return repr(vals[0]) if len(cols) == 1 else ", ".join(f"{c}={x!r}" for c, x in zip(cols, vals))


def shapes(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Named size arrays for every row; the vocabulary of geometry rules and features.

    GEMM-like ops: m, n, k, batch. Convolutions: N, C, K, H, W, P, Q (output), R, S, the GEMM
    sizes of implicit GEMM (npq x c_out, reduction C*R*S) and of Winograd (4x4 tiles), and the
    output's and the input's elements (NKPQ, NCHW).
    """
    return dict(_shapes(df, _Columns(df)))


class _Columns:
    """A frame's columns as float64 (`col`), each read once."""

    def __init__(self, df: pd.DataFrame):
        self.df = df
        self.got: dict[str, np.ndarray] = {}

    def __call__(self, name: str) -> np.ndarray:
        if name not in self.got:
            self.got[name] = col(self.df, name)
        return self.got[name]


def _uniques(a: np.ndarray) -> np.ndarray:
    """The distinct values of an object array (one compare where every row holds the same)."""
    if len(a) and np.asarray(a == a[0]).all():
        return a[:1]
    return pd.unique(a)


def _shapes(df: pd.DataFrame, c: _Columns) -> _Lazy:
    """`shapes(df)`, each size computed on first use (a variant's features read a few)."""
    n = len(df)
    rules: dict[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]] = {
        "one": lambda s: np.ones(n),
        "batch": lambda s: c("batch"),
    }
    ops = _uniques(df["op"].to_numpy(dtype=object)) if "op" in df else np.array([""], dtype=object)
    if np.isin(ops, GEMM_OPS).any():
        rules.update(m=lambda s: c("m"), n=lambda s: c("n"), k=lambda s: c("k"))
    if np.isin(ops, CONV_OPS).any():
        hw: list[np.ndarray] = []

        def output(i: int) -> np.ndarray:
            if not hw:
                if all(f in df for f in CONV_FIELDS):  # the columns as read once, in a frame
                    hw.extend(conv_output_hw(pd.DataFrame({f: c(f) for f in CONV_FIELDS}, copy=False)))
                else:
                    hw.extend(conv_output_hw(df))  # names the missing column
            return hw[i]

        rules.update(
            N=lambda s: c("batch"),
            C=lambda s: c("c_in"),
            K=lambda s: c("c_out"),
            H=lambda s: c("h_in"),
            W=lambda s: c("w_in"),
            P=lambda s: output(0),
            Q=lambda s: output(1),
            R=lambda s: c("kh"),
            S=lambda s: c("kw"),
            G=lambda s: np.nan_to_num(c("groups"), nan=1.0),
            NPQ=lambda s: s["N"] * s["P"] * s["Q"],
            PQ=lambda s: s["P"] * s["Q"],
            NK=lambda s: s["N"] * s["K"],
            CRS=lambda s: s["C"] * s["R"] * s["S"] / s["G"],
            T4=lambda s: s["N"] * np.ceil(s["P"] / 4) * np.ceil(s["Q"] / 4),
            T2=lambda s: s["N"] * np.ceil(s["P"] / 2) * np.ceil(s["Q"] / 2),
            NKPQ=lambda s: s["NPQ"] * s["K"],  # output elements: a direct kernel's threads
            NCHW=lambda s: s["N"] * s["C"] * s["H"] * s["W"],  # input elements: dx's direct kernel's threads
            F=lambda s: fft_side(s["H"] + 2 * c("pad_h"), s["W"] + 2 * c("pad_w")),
            FB=lambda s: s["F"] * _half_spectrum(s["F"]),  # an F x F real FFT's frequency bins
            RS=lambda s: s["R"] * s["S"],  # a filter's taps (geometry.Packed: how many fit a block)
            # the phases a strided data gradient's FFT_TILING folds dy into (`_phases`)
            PH=lambda s: _phases(c("kh"), c("stride_h")) * _phases(c("kw"), c("stride_w")),
        )
    return _Lazy(rules)


# cuDNN's FFT algorithm transforms whole padded images on a square of a power of two, 16 at
# least: on the H100's records the complex GEMM's grid_z is F x (F/2 + 1) on 303 of 320 calls
# (the rest lay their bins on another axis). Without it the bins were no size of the
# configuration, and the FFT models guessed their grids.
FFT_SIDES = (16.0, 32.0, 64.0, 128.0, 256.0, 512.0)


def fft_side(h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The side of the square FFT that holds images of h x w (padded): the least power of two
    of FFT_SIDES at least as large as both, else the largest."""
    need = np.maximum(h, w)
    sides = np.asarray(FFT_SIDES)
    i = np.minimum(np.searchsorted(sides, need, side="left"), len(sides) - 1)
    return sides[i]


class _Lazy(Mapping):
    """Named arrays, each computed on first use by its rule (given this mapping, for the
    arrays it is computed from), in the order of the rules."""

    def __init__(self, rules: Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]]):
        self.rules = rules
        self.done: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        got = self.done.get(key)
        if got is None:
            got = self.done[key] = self.rules[key](self)
        return got

    def __contains__(self, key: object) -> bool:
        return key in self.rules

    def __iter__(self):
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)


def gemm_view(
    df: pd.DataFrame, algo: np.ndarray | None = None, s: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Each row as a GEMM: gm x gn outputs, reduction gk, gbatch independent products.

    For convolutions the view depends on the algorithm: implicit/explicit GEMM multiply
    (N*P*Q) x c_out over C*R*S; Winograd non-fused runs 36 GEMMs (169 on 5x5 filters) of c_out x
    tiles over C (its filter gradient: c_out x C over every image's tiles);
    FFT runs one complex GEMM per frequency bin over C.
    """
    s = shapes(df) if s is None else s
    algo = _text(df, "algo") if algo is None else algo
    return _gemm_view(df["op"].to_numpy(dtype=object), algo, s)


def _gemm_view(op: np.ndarray, algo: np.ndarray, s: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The view of rows of any ops and algorithms: each (op, algorithm) group by `_one_view`
    (NaN for ops that are no GEMM)."""
    out = {k: np.full(len(op), np.nan) for k in ("gm", "gn", "gk", "gbatch")}
    for o in pd.unique(op):
        if o not in GEMM_OPS and o not in CONV_OPS:
            continue
        is_op = op == o
        for a in pd.unique(algo[is_op]) if o in CONV_OPS else [""]:
            rows = np.flatnonzero(is_op & (algo == a) if o in CONV_OPS else is_op)
            for k, v in _one_view(o, a, _Rows(s, rows)).items():
                out[k][rows] = v
    return out


def _one_view(op: str, algo: str, s: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The GEMM view of rows that share one op and, for convolutions, one algorithm."""
    if op in GEMM_OPS:
        return {"gm": s["m"], "gn": s["n"], "gk": s["k"], "gbatch": s["batch"]}
    one = np.ones(len(s["one"]))
    if op == "conv_bwd_data" and algo in ("ALGO_0", "ALGO_1"):  # dx (N H W x C) from dy and w, over K R S
        return {"gm": s["N"] * s["H"] * s["W"], "gn": s["C"], "gk": s["K"] * s["CRS"] / s["C"], "gbatch": one}
    if op == "conv_bwd_filter" and algo in ("ALGO_0", "ALGO_1", "ALGO_3"):  # dw (K x C R S) over N P Q
        return {"gm": s["K"], "gn": s["CRS"], "gk": s["NPQ"], "gbatch": one}
    if algo == "WINOGRAD_NONFUSED":  # one GEMM per point of the transformed tile
        points, tiles = winograd_tiles(s)
        if op == "conv_bwd_filter":  # dw's points, K x C, over every image's tiles
            return {"gm": s["K"], "gn": s["C"], "gk": tiles, "gbatch": points}
        # the data gradient's GEMMs are dx's tiles x C over K; keyed so, its 3x3 transform's
        # model fitted worse (cross-validated RMSPE 28% -> 77% on 20 H100 rows): kept as forward
        return {"gm": tiles, "gn": s["K"], "gk": s["C"], "gbatch": points}
    if algo == "WINOGRAD":
        return {"gm": s["T2"], "gn": s["K"], "gk": s["C"] * 4.0, "gbatch": one}
    if algo == "FFT":  # one complex GEMM per frequency bin
        return _spectral(op, s["N"], s, s["FB"])
    if algo == "FFT_TILING":  # one tile's GEMM per bin: over images, or over the lines of a 1-D piece
        pieces, down = _one_d(s["R"], s["S"]), _down(s["R"], s["S"])
        lines, length = np.where(down, s["W"], s["H"]), np.where(down, s["H"], s["W"])
        bins = np.where(pieces, _half_spectrum(length), FFT_TILE * _half_spectrum(FFT_TILE))
        images = np.where(pieces, s["N"] * lines, s["N"])
        if op == "conv_bwd_data":  # a tile's dX (images x C, each phase of a folded dy) over K
            return {"gm": images, "gn": s["C"] * s["PH"], "gk": s["K"], "gbatch": bins}
        # the filter gradient's keyed as the forward (its calls are few: 5 on each GPU)
        return _spectral("conv_fwd", images, s, bins)
    return {"gm": s["NPQ"], "gn": s["K"], "gk": s["CRS"], "gbatch": one}


def _spectral(op: str, images: np.ndarray, s: Mapping[str, np.ndarray], bins: np.ndarray) -> dict[str, np.ndarray]:
    """The FFT algorithms' GEMM per frequency bin, `images` rows of spectra (images, or their
    lines), each direction's own: the forward's Y (images x K) over C, the data gradient's dX
    (images x C) over K, the filter gradient's dW (K x C) over the images. Keyed as the forward,
    the gradients' complex GEMMs were timed by the wrong reduction: cross-validated RMSPE of the
    H100's 64x64 tile 103.7% -> 21.0% (backward-data) and 40.0% -> 19.9% (backward-filter)."""
    if op == "conv_bwd_data":
        return {"gm": images, "gn": s["C"], "gk": s["K"], "gbatch": bins}
    if op == "conv_bwd_filter":
        return {"gm": s["K"], "gn": s["C"], "gk": images, "gbatch": bins}
    return {"gm": images, "gn": s["K"], "gk": s["C"], "gbatch": bins}


def winograd_tiles(s: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Winograd non-fused's transformed points a tile and tiles of all images: F(4x4, 3x3), 36
    points, on 3x3 filters and F(9x9, 5x5), 169, on 5x5 (its GEMMs' grid_z on the H100: 36 and
    169; their grids count 9x9 tiles on 5x5 filters). Not named sizes: a geometry rule of
    another kernel could read a constant 36 as one and carry it to 5x5 filters."""
    side = np.where(s["R"] >= 5, 9.0, 4.0)
    return (side + s["R"] - 1) ** 2, s["N"] * np.ceil(s["P"] / side) * np.ceil(s["Q"] / side)


def winograd_macs(s: Mapping[str, np.ndarray]) -> np.ndarray:
    """Multiply-adds of Winograd non-fused's batched GEMMs: every transformed point of every tile
    by every input and output channel of a group (its FLOP bound, seer.predict.physics, and its
    GEMMs' term, seer.models.features' `xgemm_G`)."""
    points, tiles = winograd_tiles(s)
    return points * tiles * s["C"] / s["G"] * s["K"]


def _text(df: pd.DataFrame, name: str) -> np.ndarray:
    """A text column as an object array ("" where the column is missing)."""
    if name not in df:
        return np.full(len(df), "", dtype=object)
    return df[name].to_numpy(dtype=object)


def traffic(df: pd.DataFrame, s: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Useful FLOPs (2 per multiply-add of the direct method) and compulsory DRAM traffic
    (inputs read once: read_bytes; output written once: write_bytes) of each row."""
    s = shapes(df) if s is None else s
    return _traffic(df["op"].to_numpy(dtype=object), element_bytes(df.get("dtype"), len(df)), s)


def _traffic(op: np.ndarray, el: np.ndarray, s: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    n = len(op)
    flops, read, write = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    g = np.isin(op, GEMM_OPS)
    if g.any():
        b, m, nn, k = s["batch"][g], s["m"][g], s["n"][g], s["k"][g]
        flops[g] = 2 * b * m * nn * k
        read[g] = el[g] * b * (m * k + k * nn)
        write[g] = el[g] * b * m * nn
    for o in CONV_OPS:
        c = op == o
        if c.any():
            t = _conv_traffic(o, el[c], {k: s[k][c] for k in ("N", "C", "H", "W", "K", "CRS", "NPQ")})
            flops[c], read[c], write[c] = t["flops"], t["read_bytes"], t["write_bytes"]
    return {"flops": flops, "read_bytes": read, "write_bytes": write}


def _conv_traffic(op: str, el: np.ndarray, s: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A convolution's three tensors, x (N C H W), w (K CRS) and y (NPQ K): the forward reads x
    and w and writes y; backward-data reads w and dy and writes dx; backward-filter reads x and
    dy and writes dw. Every direction does the direct method's multiply-adds."""
    x, w, y = s["N"] * s["C"] * s["H"] * s["W"], s["K"] * s["CRS"], s["NPQ"] * s["K"]
    written = {"conv_fwd": y, "conv_bwd_data": x, "conv_bwd_filter": w}[op]
    flops = 2 * s["NPQ"] * s["K"] * s["CRS"]
    return {"flops": flops, "read_bytes": el * (x + w + y - written), "write_bytes": el * written}


def _one_traffic(op: str, el: np.ndarray, s: Mapping[str, np.ndarray]) -> _Lazy:
    """`_traffic` of rows that are all of one op, each quantity computed on first use."""
    n = len(el)
    if op in GEMM_OPS:
        return _Lazy(
            {
                "flops": lambda t: 2 * s["batch"] * s["m"] * s["n"] * s["k"],
                "read_bytes": lambda t: el * s["batch"] * (s["m"] * s["k"] + s["k"] * s["n"]),
                "write_bytes": lambda t: el * s["batch"] * s["m"] * s["n"],
            }
        )
    if op in CONV_OPS:

        @functools.cache
        def whole() -> dict[str, np.ndarray]:  # the three together, on first use
            return _conv_traffic(op, el, s)

        def part(name: str) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
            return lambda t: whole()[name]

        return _Lazy({k: part(k) for k in ("flops", "read_bytes", "write_bytes")})
    return _Lazy({k: lambda t: np.full(n, np.nan) for k in ("flops", "read_bytes", "write_bytes")})


def flops_bytes(df: pd.DataFrame, s: dict[str, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Useful FLOPs and compulsory DRAM bytes (read + written) of each row."""
    t = traffic(df, s)
    return t["flops"], t["read_bytes"] + t["write_bytes"]


def sizes(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Every named size of each row, computed once: the shapes, the GEMM view, the useful
    FLOPs and the compulsory bytes (keys flops, read_bytes, write_bytes, bytes)."""
    s = shapes(df)
    s.update(gemm_view(df, s=s))
    s.update(traffic(df, s=s))
    s["bytes"] = s["read_bytes"] + s["write_bytes"]
    return s


def log_config(df: pd.DataFrame, op: str, s: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Points in log-configuration space, the metric of the nearest-neighbour sub-models."""
    s = shapes(df) if s is None else s
    return _log_config(op, s, {c: col(df, c) for c in _LOG_EXTRA} if op in CONV_OPS else {})


# conv fields of the log-config beyond the shapes: every axis of the configuration space counts
_LOG_EXTRA = ("stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w")
# a GEMM's cuBLASLt algorithm configuration, where the rows give it (seer.models.lt_config):
# CUBLASLT_ALGO_CONFIG_TILE_ID and SPLITK_NUM as the harness records them, and the operands'
# layout (`trans`) as its index in LAYOUTS
LT_TILE, LT_SPLITK, LAYOUT = "lt_tile", "lt_splitk", "layout"
LAYOUTS = ("nn", "nt", "tn", "tt")

GROUPS_COLUMN = 7  # the log-config column of a convolution's groups
FILTER_COLUMNS = [5, 6]  # its filter's height and width
CHANNEL_COLUMNS = [1, 2]  # its input and output channels
PAD_COLUMNS = [10, 11]  # its padding, log2(pad + 1)


def per_group(points: np.ndarray) -> np.ndarray:
    """Convolution log-configurations with channels per group (C/G, K/G) for channels: the
    sizes each group's kernel works on. An ungrouped point is unchanged (G = 1)."""
    out = points.copy()
    out[:, CHANNEL_COLUMNS] -= points[:, [GROUPS_COLUMN]]
    return out


def gemm_algorithm_config(df: pd.DataFrame, c: Callable[[str], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """A GEMM batch's `extra`: each of lt_tile, lt_splitk the rows carry (NaN where a row has
    none), and their layout where they carry `trans` (NaN where it is not one of LAYOUTS)."""
    read = c if c is not None else (lambda name: col(df, name))
    out = {k: read(k) for k in (LT_TILE, LT_SPLITK) if k in df}
    if "trans" in df and out:
        code = pd.Series(range(len(LAYOUTS)), index=list(LAYOUTS), dtype="float64")
        out[LAYOUT] = df["trans"].astype(str).str.lower().map(code).to_numpy(dtype="float64", na_value=np.nan)
    return out


def _log_config(op: str, s: Mapping[str, np.ndarray], extra: Mapping[str, np.ndarray]) -> np.ndarray:
    if op in GEMM_OPS:
        cols = [s["batch"], s["m"], s["n"], s["k"]]
    elif op in CONV_OPS:
        cols = [
            s["N"],
            s["C"],
            s["K"],
            s["H"],
            s["W"],
            s["R"],
            s["S"],
            s["G"],  # a grouped convolution is far from every ungrouped one the fits learnt from
            extra["stride_h"],
            extra["stride_w"],
            extra["pad_h"] + 1,
            extra["pad_w"] + 1,
            extra["dil_h"],
            extra["dil_w"],
        ]
    else:
        raise SeerError(f"op {op!r} has no fitted per-variant models (see seer.analytical)")
    out = np.empty((len(cols[0]), len(cols)))  # np.column_stack(cols), filled in place
    for j, c in enumerate(cols):
        out[:, j] = c
    return np.log2(out, out=out)


CONV_PRODUCTS = ("P", "Q", "NPQ", "CRS/G", "K/G", "NHW", "KRS/G", "im2col", "MACs")  # conv_products' columns


def conv_products(points: np.ndarray) -> np.ndarray:
    """Convolution log-configurations (log_config's columns) with the log2 sizes of the products
    the kernels compute appended: output height and width, N*P*Q, C/G*R*S and K/G (the forward
    GEMM's three sizes), N*H*W and K/G*R*S (backward-data's), the im2col buffer N*P*Q*C*R*S and
    the multiply-adds. Libraries choose kernels on such products (a workspace, a GEMM's shape);
    an axis-aligned split on one of them is a threshold no single size has."""
    v = np.rint(np.exp2(points))
    n, c, k, h, w, r, s, g = (v[:, j] for j in range(8))
    sh, sw, ph, pw, dh, dw = (v[:, j] for j in range(8, 14))
    p = np.maximum(np.floor((h + 2 * (ph - 1) - dh * (r - 1) - 1) / sh) + 1, 1)
    q = np.maximum(np.floor((w + 2 * (pw - 1) - dw * (s - 1) - 1) / sw) + 1, 1)
    npq, crs, kg = n * p * q, c / g * r * s, k / g
    cols = (p, q, npq, crs, kg, n * h * w, kg * r * s, npq * crs * g, npq * crs * k)
    return np.column_stack([points, *(np.log2(x) for x in cols)])


@dataclass
class ConfigBatch:
    """Configs of one op with everything derived from them computed once.

    Geometry rules, features and choosers all read the same sizes; ranking four algorithms
    changes only the GEMM view, and a variant's rows are a slice, never a recomputation.
    Sizes are computed on first use and sliced on first use (a variant's features read a few
    of the thirty)."""

    op: str
    shapes: Mapping[str, np.ndarray]
    traffic: Mapping[str, np.ndarray]
    el: np.ndarray  # bytes per element of each row (its dtype)
    algo: np.ndarray  # algorithm of each row ("" for GEMMs)
    # a convolution's log-configuration fields beyond the shapes; a GEMM's algorithm configuration
    extra: Mapping[str, np.ndarray]
    _sizes: Mapping[str, np.ndarray] | None = field(default=None, repr=False)
    _logcfg: np.ndarray | None = field(default=None, repr=False)
    uniform_algo: str | None = None  # the algorithm of every row, where they share one
    # per-row quantities of the configs alone (`memo`), shared by the batch's `with_algo` copies
    _memo: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _parent: tuple[ConfigBatch, np.ndarray] | None = field(default=None, repr=False)  # taken from

    @classmethod
    def of(cls, df: pd.DataFrame, op: str | None = None) -> ConfigBatch:
        """The batch of config rows `df`, all of one op (`op`, else the first row's)."""
        op = str(df["op"].iloc[0]) if op is None else op
        c = _Columns(df)
        s = _shapes(df, c)
        el = _element_bytes(df)
        extra = {k: c(k) for k in _LOG_EXTRA} if op in CONV_OPS else gemm_algorithm_config(df, c)
        algo = _text(df, "algo")
        algos = _uniques(algo)
        uniform = str(algos[0]) if len(algos) == 1 else ("" if len(algos) == 0 else None)
        return cls(op, s, _one_traffic(op, el, s), el, algo, extra, uniform_algo=uniform)

    def __len__(self) -> int:
        return len(self.el)

    @property
    def sizes(self) -> Mapping[str, np.ndarray]:
        """Every named size (as `sizes(df)` gives them, in the same order): the vocabulary of
        geometry rules and features."""
        if self._sizes is None:
            self._sizes = _Lazy(self._size_rules())
        return self._sizes

    def _size_rules(self) -> dict[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]]:
        view: dict[str, np.ndarray] = {}

        def gemm(key: str) -> np.ndarray:
            if not view:
                if self.uniform_algo is not None:
                    view.update(_one_view(self.op, self.uniform_algo, self.shapes))
                else:
                    view.update(_gemm_view(np.full(len(self), self.op, dtype=object), self.algo, self.shapes))
            return view[key]

        rules = {k: _entry(self.shapes.__getitem__, k) for k in self.shapes}
        rules.update({k: _entry(gemm, k) for k in ("gm", "gn", "gk", "gbatch")})
        rules.update({k: _entry(self.traffic.__getitem__, k) for k in self.traffic})
        rules["bytes"] = lambda s: s["read_bytes"] + s["write_bytes"]
        return rules

    @property
    def logcfg(self) -> np.ndarray:
        if self._logcfg is None:
            if self._parent is not None and self._parent[0]._has_logcfg():
                parent, rows = self._parent
                self._logcfg = parent.logcfg[rows]  # sliced where it was computed
            else:
                self._logcfg = _log_config(self.op, self.shapes, self.extra)
        return self._logcfg

    def _has_logcfg(self) -> bool:
        """Whether the log-configuration was computed for these rows or rows they were taken from."""
        return self._logcfg is not None or (self._parent is not None and self._parent[0]._has_logcfg())

    def memo(self, name: str, rule: Callable[[ConfigBatch], np.ndarray]) -> np.ndarray:
        """A per-row quantity of the configs alone, never of the algorithm (`rule` of a batch):
        computed once on the rows this batch was taken from and sliced, shared by every
        algorithm's copy of the batch."""
        got = self._memo.get(name)
        if got is None:
            if self._parent is None:
                got = rule(self)
            else:
                parent, rows = self._parent
                got = parent.memo(name, rule)[rows]
            self._memo[name] = got
        return got

    def take(self, rows: np.ndarray) -> ConfigBatch:
        """The batch of some rows (positions or a mask); what was computed is sliced, each size
        on first use (a variant's features read a few of the thirty)."""
        sizes = _Rows(self.sizes, rows)
        el = self.el[rows]
        if self.uniform_algo is not None and len(el) and len(self.algo):
            algo = np.broadcast_to(self.algo[:1], (len(el),))  # one name, no copy per row
        else:
            algo = self.algo[rows]
        return ConfigBatch(
            self.op,
            _Rows(self.shapes, rows, sizes),
            _Rows(self.traffic, rows, sizes),
            el,
            algo,
            _Rows(self.extra, rows),
            sizes,
            None,  # sliced from this batch's on first use (`logcfg`)
            self.uniform_algo,
            _parent=(self, rows),
        )

    def one_group(self) -> ConfigBatch:
        """The same convolutions with one group each (`one_group`), of the same dtype and algorithm."""
        return self._rebatched(one_group(self._frame()))

    def unfolded(self) -> ConfigBatch:
        """The same convolutions unstrided (`unfolded`), of the same dtype and algorithm."""
        return self._rebatched(unfolded(self._frame()))

    def one_tile(self) -> tuple[np.ndarray, ConfigBatch]:
        """(the FFT_TILING tiles of each config, the convolutions of one tile: `one_tile`), of
        the same dtype and algorithm."""
        frame = self._frame()
        return fft_tiles(frame), self._rebatched(one_tile(frame))

    def _frame(self) -> pd.DataFrame:
        """The convolutions as a frame of their sizes and the log-configuration's fields."""
        s = self.shapes
        fields = {"batch": s["N"], "c_in": s["C"], "h_in": s["H"], "w_in": s["W"], "c_out": s["K"]}
        return pd.DataFrame({"op": self.op, **fields, "kh": s["R"], "kw": s["S"], "groups": s["G"], **self.extra})

    def _rebatched(self, frame: pd.DataFrame) -> ConfigBatch:
        """Other convolutions (a frame of `_frame`'s) with these configs' dtype and algorithm."""
        b = ConfigBatch.of(frame, self.op)
        traffic = _one_traffic(self.op, self.el, b.shapes)
        return ConfigBatch(self.op, b.shapes, traffic, self.el, self.algo, b.extra, uniform_algo=self.uniform_algo)

    def with_algo(self, algo: str) -> ConfigBatch:
        """The same configs run with another algorithm (only the GEMM view of a conv changes)."""
        if self.op not in CONV_OPS or self.uniform_algo == algo:
            return self
        return ConfigBatch(
            self.op,
            self.shapes,
            self.traffic,
            self.el,
            np.broadcast_to(np.asarray(algo, dtype=object), (len(self),)),  # one name, no copy per row
            self.extra,
            None,
            self.logcfg,
            algo,
            _memo=self._memo,
            _parent=self._parent,
        )

    def as_op(self, op: str) -> ConfigBatch:
        """The same convolutions as another direction's (a gradient timed as its forward): the
        shapes and algorithms stay, the traffic, GEMM view and derived quantities are `op`'s."""
        if op == self.op:
            return self
        traffic = _one_traffic(op, self.el, self.shapes)
        return ConfigBatch(op, self.shapes, traffic, self.el, self.algo, self.extra, uniform_algo=self.uniform_algo)


def groups(df: pd.DataFrame) -> np.ndarray:
    """Each convolution row's groups (1 where the column is missing or empty)."""
    return np.nan_to_num(col(df, "groups"), nan=1.0)


def unfolded(df: pd.DataFrame) -> pd.DataFrame:
    """Strided data-gradient rows as the unstrided data gradient of the same dx: what cuDNN's
    FFT_TILING computes where it does not fold dy into phases (no nchwToFoldedNchwKernel and no
    tensorTransformGeneric among its kernels) but convolves dy spread out over dx, tiling the
    whole dx with the whole filter. Of the H100's and the H200's strided calls whose tile
    counts the two ways differ, every one that ran no fold (15 and 19) launched its per-tile
    transform that many times, and 136 of the 147 and 180 of the 195 that folded as many times
    as `_gradient_tiles` counts (a scratch count over both GPUs' records; docs/results.md, "A
    strided data gradient that does not fold")."""
    return df.assign(stride_h=1.0, stride_w=1.0)


def one_group(df: pd.DataFrame) -> pd.DataFrame:
    """Convolution rows as the convolution of one of their groups (c_in / G, c_out / G, groups
    1): what each launch computes where the library loops a groups = 1 kernel over the groups."""
    g = groups(df)
    return df.assign(c_in=col(df, "c_in") / g, c_out=col(df, "c_out") / g, groups=1.0)


# cuDNN's FFT_TILING cuts an image into tiles of 32 x 32 (its kernels: fft2d_r2c_32x32, a complex
# GEMM over 32 x 17 = 544 bins, fft2d_c2r_32x32) and launches its input transform, GEMM and
# inverse once per tile: on the records' ungrouped calls with filters of two dimensions the most
# launched kernel ran fft_tiles times on all of the H100's 825 and the H200's 451. A filter of one
# row or column (1x1, 1x7, 7x1) runs 1-D transforms instead, along its long axis (the width for
# 1x1), in pieces of 32 (fft1d_r2c_32, a GEMM over 17 bins), of 256 where more than five of 32
# would be needed (fft1d_r2c_256): launches as fft_tiles on 99.0% of the H100's 208 1x1 calls and
# of the H200's 312, on 18 of its 18 and 38 of its 40 1xk and kx1 calls (before, 2-D tiles for
# those gave 66.7% and 70.0%, and pieces of 256 only beyond a width of 256 97.1% and 98.4% of 1x1).
FFT_TILE = 32.0
FFT_TILED_OPS = ("conv_fwd", "conv_bwd_data")  # whose FFT_TILING calls are modelled tile by tile (fft_tiles)
FFT_TILE_1D = (32.0, 256.0)
FFT_PIECES_SHORT = 5  # the most short pieces a 1-D transform is cut into; beyond, long ones


def _axis_tiles(size: np.ndarray, pad: np.ndarray, k: np.ndarray, dil: np.ndarray) -> np.ndarray:
    """Tiles along one axis: the stride-1 output over the outputs one tile yields (a tile of
    FFT_TILE inputs less the filter's extent, plus one)."""
    extent = dil * (k - 1) + 1
    per = np.maximum(FFT_TILE - extent + 1, 1)
    return np.maximum(np.ceil((size + 2 * pad - extent + 1) / per), 1)


def _one_d(kh: np.ndarray, kw: np.ndarray) -> np.ndarray:
    """Whether each filter has one row or one column (1x1, 1xk, kx1): FFT_TILING transforms
    it in 1-D pieces (`_transform_axis`)."""
    return (kh == 1) | (kw == 1)


def _down(kh: np.ndarray, kw: np.ndarray) -> np.ndarray:
    """Whether a 1-D transform runs down the height (a k x 1 filter, k > 1), not along the width."""
    return (kw == 1) & (kh > 1)


def _half_spectrum(n: np.ndarray | float) -> np.ndarray | float:
    """The frequency bins of a real FFT of n points: n / 2 + 1."""
    return np.floor(np.divide(n, 2)) + 1


def one_d_filters(df: pd.DataFrame) -> np.ndarray:
    """`_one_d` of each convolution row's filter."""
    return _one_d(col(df, "kh"), col(df, "kw"))


def _along_h(df: pd.DataFrame) -> np.ndarray:
    """`_down` of each convolution row's filter."""
    return _down(col(df, "kh"), col(df, "kw"))


def _transform_axis(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(padded length, dilated filter extent) along each row's 1-D transform axis."""
    h = _along_h(df)
    pad = np.where(h, np.nan_to_num(col(df, "pad_h")), np.nan_to_num(col(df, "pad_w")))
    size = np.where(h, col(df, "h_in"), col(df, "w_in")) + 2 * pad
    k = np.where(h, col(df, "kh"), col(df, "kw"))
    dil = np.nan_to_num(np.where(h, col(df, "dil_h"), col(df, "dil_w")), nan=1.0)
    return size, dil * (k - 1) + 1


def _piece(size: np.ndarray, extent: np.ndarray) -> np.ndarray:
    """The 1-D transform's length (FFT_TILE_1D): the long one where more than
    FFT_PIECES_SHORT short pieces would be needed."""
    short, long = FFT_TILE_1D
    many = _pieces(size, extent, short) > FFT_PIECES_SHORT
    return np.where(many, long, short)


def _pieces(size: np.ndarray, extent: np.ndarray, piece: np.ndarray | float) -> np.ndarray:
    """Pieces of `piece` inputs (piece - extent + 1 outputs each) that cover a padded length."""
    return np.maximum(np.ceil((size - extent + 1) / np.maximum(piece - extent + 1, 1)), 1)


def fft_tiles(df: pd.DataFrame) -> np.ndarray:
    """The FFT_TILING tiles of each convolution row: how many times a call launches its
    per-tile kernels (FFT_TILE; pieces along one axis for 1-D filters, FFT_TILE_1D). A data
    gradient's 2-D tiles cover dx, each phase of a folded one (`_gradient_tiles`)."""
    pad_h, pad_w = np.nan_to_num(col(df, "pad_h")), np.nan_to_num(col(df, "pad_w"))
    dil_h, dil_w = np.nan_to_num(col(df, "dil_h"), nan=1.0), np.nan_to_num(col(df, "dil_w"), nan=1.0)
    th = _axis_tiles(col(df, "h_in"), pad_h, col(df, "kh"), dil_h)
    tw = _axis_tiles(col(df, "w_in"), pad_w, col(df, "kw"), dil_w)
    if "op" in df:
        grad = df["op"].to_numpy(dtype=object) == "conv_bwd_data"
        if grad.any():
            th = np.where(grad, _gradient_tiles(col(df, "h_in"), col(df, "kh"), col(df, "stride_h"), dil_h), th)
            tw = np.where(grad, _gradient_tiles(col(df, "w_in"), col(df, "kw"), col(df, "stride_w"), dil_w), tw)
    size, extent = _transform_axis(df)
    return np.where(one_d_filters(df), _pieces(size, extent, _piece(size, extent)), th * tw)


# cuDNN's FFT_TILING computes a data gradient dx tile by tile; where the stride is below the
# filter's size it first folds dy into stride_h x stride_w phases (nchwToFoldedNchwKernel), each a
# convolution of ceil(H / stride) outputs under a filter of ceil(R / stride) taps, and its complex
# GEMM computes every phase of C channels at once (grid ceil(N/32) x ceil(C x phases / 64) x 544).
# So the tiles: on the H100's 352 and the H200's 401 ungrouped calls, the GEMM was launched that
# many times on 98.3-100% of each kind (stride 1, stride 2, 1-D filters); by the forward's rule,
# on 36-38% of the strided ones. Its 1-D filters (stride 1) follow the forward's pieces.
def _phases(k: np.ndarray, stride: np.ndarray) -> np.ndarray:
    """The phases a data gradient's FFT_TILING folds dy into along one axis: the stride where the
    filter is larger, else 1 (no fold; a stride missing or empty is 1)."""
    stride = np.nan_to_num(stride, nan=1.0)
    return np.where(k > stride, stride, 1.0)


def _gradient_tiles(size: np.ndarray, k: np.ndarray, stride: np.ndarray, dil: np.ndarray) -> np.ndarray:
    """Tiles along one axis of a data gradient's FFT_TILING call: ceil(H / phases) outputs of each
    phase, FFT_TILE less the folded filter's extent, plus one, to a tile."""
    fold = _phases(k, stride)
    extent = dil * (np.ceil(k / fold) - 1) + 1
    per = np.maximum(FFT_TILE - extent + 1, 1)
    return np.maximum(np.ceil(np.ceil(size / fold) / per), 1)


def fft_tiling_bins(df: pd.DataFrame) -> np.ndarray:
    """The frequency bins FFT_TILING multiplies per image and channel pair of each convolution
    row: 32 x 17 a tile, and for 1-D filters (piece / 2 + 1) a piece of each line along the
    transform axis, counted with whichever piece length gives fewer (a bound must hold where
    `_piece` guesses cuDNN's choice wrong)."""
    size, extent = _transform_axis(df)
    short, long = FFT_TILE_1D
    per_line = np.minimum(
        _pieces(size, extent, short) * _half_spectrum(short), _pieces(size, extent, long) * _half_spectrum(long)
    )
    lines = np.where(_along_h(df), col(df, "w_in"), col(df, "h_in"))
    two_d = fft_tiles(df) * FFT_TILE * _half_spectrum(FFT_TILE)
    return np.where(one_d_filters(df), per_line * lines, two_d)


def one_tile(df: pd.DataFrame) -> pd.DataFrame:
    """Convolution rows as the convolution of one FFT_TILING tile: a FFT_TILE x FFT_TILE input
    without padding (a small image is transformed on a whole tile too); for 1-D filters, every
    line of the image on one piece along the transform axis, unpadded there."""
    pieces, down = one_d_filters(df), _along_h(df)
    piece = _piece(*_transform_axis(df))
    across = pieces & ~down
    return df.assign(
        h_in=np.where(down, piece, np.where(pieces, col(df, "h_in"), FFT_TILE)),
        w_in=np.where(across, piece, np.where(pieces, col(df, "w_in"), FFT_TILE)),
        pad_h=np.where(across, np.nan_to_num(col(df, "pad_h")), 0.0),
        pad_w=np.where(down, np.nan_to_num(col(df, "pad_w")), 0.0),
    )


def _entry(get: Callable[[str], np.ndarray], key: str) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
    """The rule of a size that is an entry of another mapping (`get` reads it)."""
    return lambda s: get(key)


def _element_bytes(df: pd.DataFrame) -> np.ndarray:
    """`element_bytes` of the frame's dtype column (one lookup where every row has one dtype)."""
    d = df.get("dtype")
    if d is not None and len(d):
        a = d.to_numpy(dtype=object)
        if np.asarray(a == a[0]).all():
            return np.full(len(a), element_bytes(a[:1], 1)[0])
    return element_bytes(d, len(df))


class _Rows(Mapping):
    """Some rows of named arrays, each sliced on first use (from `shared`, the batch's sizes,
    where it holds the same name: the shapes and traffic are entries of the sizes)."""

    def __init__(
        self, full: Mapping[str, np.ndarray], rows: np.ndarray, shared: Mapping[str, np.ndarray] | None = None
    ):
        self.full, self.rows, self.shared = full, rows, shared
        self.done: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        got = self.done.get(key)
        if got is None:
            if self.shared is not None and key in self.shared:
                got = self.shared[key]
            else:
                got = self.full[key][self.rows]
            self.done[key] = got
        return got

    def __contains__(self, key: object) -> bool:
        return key in self.full

    def __iter__(self):
        return iter(self.full)

    def __len__(self) -> int:
        return len(self.full)
