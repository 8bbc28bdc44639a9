"""Validation of a loaded fits document: everything prediction reads, checked once on load.

A fits file that parses as JSON can still be wrong (hand-edited, truncated by a tool that
rewrote it, written by another version): a NaN or 1e308 coefficient, a negative one, a
`blocks_per_sm` of 0, a string where an object belongs or a coefficient list one short of its
feature list would otherwise surface as `inf`, nonsense or a traceback deep inside
`Fits.predict`. `check` walks the document as `seer.fit` and `seer.analytical` write it and
raises one `SeerError` sentence naming the file, the JSON path of the first bad field and what
was expected there, e.g. `variants["bmm:default:sgemm_128x64_nn"].compute.coef[2]`.
"""

from __future__ import annotations

import binascii
import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from seer import models
from seer.data import configs
from seer.data.records import CONV_OPS, GEMM_OPS, OPS, VARIANT_OPS
from seer.errors import SeerError
from seer.hardware.dtypes import MODEL_DTYPES
from seer.models import knn
from seer.models.chooser import KINDS
from seer.models.drift import KNOTS
from seer.models.dual import DUAL_ALGOS, GRADIENT_OPS
from seer.models.geometry import AXES, RULE_KINDS
from seer.models.memory import SCHEMA as MEMORY_SCHEMA
from seer.models.options import GATES
from seer.models.tree import LEAF, MAX_MEMBERS

GPU_FIGURES = ("fp32_tflops", "dram_gbs", "l2_mb", "boost_mhz")
CONV_TIMINGS = ("every_algorithm", "pick_only")
# Ceilings of plausibility: a coefficient is ms per unit of its feature (the bundled fits stay
# below 1), a floor is ms; 1e6 ms is a quarter of an hour. Sizes and counts stay below 1e12.
MAX_COEF = 1e6
MAX_MS = 1e6
HUGE = 1e12
MAX_CLOCK_C0 = 20.0  # exp(20) = 5e8: no sustained-clock law scales a time by more
_MISSING = object()


class _Doc:
    """The file being checked; every failure names it."""

    def __init__(self, path: str | Path):
        self.path = path

    def fail(self, where: str, expected: str, value: Any = _MISSING, got: str | None = None) -> NoReturn:
        if value is _MISSING and got is None:
            raise SeerError(f"fits file {self.path}: {where} is missing (expected {expected})")
        shown = got if got is not None else _show(value)
        raise SeerError(f"fits file {self.path}: {where} must be {expected}, got {shown}")

    def get(self, d: dict, key: str, where: str, expected: str, optional: bool = False) -> Any:
        if key in d:
            return d[key]
        if optional:
            return None
        self.fail(_at(where, key), expected)

    def obj(self, v: Any, where: str) -> dict:
        if not isinstance(v, dict):
            self.fail(where, "an object", v)
        return v

    def seq(self, v: Any, where: str, n: int | None = None, what: str = "") -> list:
        if not isinstance(v, list) or (n is not None and len(v) != n):
            exp = f"a list of {n}{what}" if n is not None else f"a list{what}"
            self.fail(where, exp, v)
        return v

    def text(self, v: Any, where: str, choices: tuple[str, ...] = (), nonempty: bool = True) -> str:
        if choices and v not in choices:
            self.fail(where, "one of " + ", ".join(json.dumps(c) for c in choices), v)
        if not isinstance(v, str) or (nonempty and not v):
            self.fail(where, "a non-empty string" if nonempty else "a string", v)
        return v

    def num(
        self,
        v: Any,
        where: str,
        lo: float = -HUGE,
        hi: float = HUGE,
        *,
        lo_open: bool = False,
        hi_open: bool = False,
        whole: bool = False,
    ) -> float:
        """A JSON number (not a boolean), finite, within [lo, hi] (open where asked)."""
        x = _number(v)
        ok = math.isfinite(x) and (x > lo if lo_open else x >= lo) and (x < hi if hi_open else x <= hi)
        if not ok or (whole and not x.is_integer()):
            self.fail(where, _range(lo, hi, lo_open, hi_open, whole, abs(x) > HUGE), v)
        return x

    def nums(
        self, v: Any, where: str, n: int | None = None, lo: float = -HUGE, hi: float = HUGE, whole: bool = False
    ) -> np.ndarray:
        """A list of numbers, checked at once (lists of thousands: label indices, grid values)."""
        self.seq(v, where, n, " numbers")
        arr = np.fromiter((_number(x) for x in v), dtype=float, count=len(v))
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(arr) | (arr < lo) | (arr > hi) | (whole & (arr != np.floor(arr)))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.num(v[i], f"{where}[{i}]", lo, hi, whole=whole)
        return arr


def _number(v: Any) -> float:
    """v as a float where it is a JSON number (not a boolean), else NaN."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    try:
        return float(v)
    except OverflowError:  # an integer beyond the float range
        return math.inf


def _at(where: str, key: str | int) -> str:
    """The JSON path of a member: a.b, a["x:y"], a[3]."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    if key.isidentifier():
        return f"{where}.{key}" if where else key
    return f"{where}[{json.dumps(key)}]"


def _show(v: Any) -> str:
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return f"a list of {len(v)}"
    s = json.dumps(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _range(lo: float, hi: float, lo_open: bool, hi_open: bool, whole: bool, both: bool = False) -> str:
    """How an expected range reads; the default ceiling HUGE is shown only where it was hit."""
    kind = "a whole number" if whole else "a finite number"
    if not both and lo == -HUGE and hi == HUGE:
        return kind
    if not both and hi in (HUGE, math.inf):
        return f"{kind} {'>' if lo_open else '>='} {lo:g}"
    if not both and lo == -HUGE:
        return f"{kind} {'<' if hi_open else '<='} {hi:g}"
    return f"{kind} in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


@cache
def _sample(op: str) -> tuple[frozenset, int]:
    """(size names a grid rule may use, log-configuration dimensions) of an op."""
    one = {c: 0 if c.startswith("pad") else 1 for c in OPS[op]}  # the smallest valid config
    df = pd.DataFrame([{"op": op, "algo": "", "dtype": "float32", **one}])
    return frozenset(configs.sizes(df)), configs.log_config(df, op).shape[1]


def _design_names(op: str, algo: str, feature_set: str, kernel: str) -> dict[str, list[str]]:
    """The feature names `models.design` gives this variant (the order its coefficients follow);
    the helper names follow `models.inputs`."""
    z = np.zeros(1)
    x = models.Inputs(z, z, z, z, z, {h: z for h in models.helper_names(op, algo, kernel)}, None)
    return models.design(x, 1, 1, models.FeatureSet.parse(feature_set)).names


# ------------------------------------------------------------------ sections
def check(doc: dict, path: str | Path) -> None:
    """Raise one SeerError naming the file, the JSON path and the expectation of the first bad
    field of a fits document (schema version and top-level sections already checked)."""
    c = _Doc(path)
    c.obj(doc, "the document")
    _gpu(c, c.obj(c.get(doc, "gpu", "", "an object"), "gpu"))
    variants = c.obj(c.get(doc, "variants", "", "an object"), "variants")
    for key, v in variants.items():
        _variant(c, v, _at("variants", key))
    choosers = c.obj(c.get(doc, "choosers", "", "an object"), "choosers")
    for key, ch in choosers.items():
        w = _at("choosers", key)
        op, algo = _chooser(c, ch, w, variants)
        want = f"{op}:{algo or 'default'}"
        if key != want:
            c.fail(w, f"keyed {json.dumps(want)} (its op:algo)", got=json.dumps(key))
    drift = doc.get("drift")
    if drift is not None:
        for src, d in c.obj(drift, "drift").items():
            _drift(c, d, _at("drift", src))
    for key, d in c.obj(doc.get("forward_duals", {}), "forward_duals").items():
        _dual(c, d, _at("forward_duals", key), key)
    for op, d in c.obj(doc.get("call_times", {}), "call_times").items():
        _call_times(c, d, _at("call_times", op), op)
    for key, d in c.obj(doc.get("gemm_tiles", {}), "gemm_tiles").items():
        _gemm_tiles(c, d, _at("gemm_tiles", key), key)
    for op, d in c.obj(doc.get("local", {}), "local").items():
        w = _at("local", op)
        c.text(op, w, VARIANT_OPS)
        _smoothing(c, c.obj(d, w), w, optional=True)
        c.num(c.get(d, "rows", w, "a whole number >= 2"), _at(w, "rows"), 2, whole=True)
        if "lent" in d:  # files before 2026-12-02 (session 52) have none
            c.num(d["lent"], _at(w, "lent"), 0, whole=True)
        for k in ("law_rmspe", "loo_rmspe"):
            c.num(c.get(d, k, w, "a finite number >= 0"), _at(w, k), 0)
    if doc.get("memory_bound") is not None:
        _memory_bound(c, c.obj(doc["memory_bound"], "memory_bound"), "memory_bound")
    if doc.get("conv_timing") is not None:
        c.text(doc["conv_timing"], "conv_timing", CONV_TIMINGS)
    if doc.get("dtypes") is not None:
        for i, d in enumerate(c.seq(doc["dtypes"], "dtypes")):
            c.text(d, f"dtypes[{i}]", MODEL_DTYPES)
    if doc.get("options") is not None:
        _options(c, c.obj(doc["options"], "options"))
    _finite(c, doc, "")


def _gpu(c: _Doc, g: dict) -> None:
    for k in ("slug", "name"):
        c.text(c.get(g, k, "gpu", "a non-empty string"), _at("gpu", k))
    cc = c.get(g, "cc", "gpu", 'a compute capability such as "8.0"')
    if not isinstance(cc, str) or not re.fullmatch(r"\d+\.\d+", cc):
        c.fail("gpu.cc", 'a compute capability such as "8.0"', cc)
    c.num(c.get(g, "sms", "gpu", "a whole number >= 1"), "gpu.sms", 1, whole=True)
    for k in GPU_FIGURES:
        c.num(c.get(g, k, "gpu", "a finite number > 0"), _at("gpu", k), 0, lo_open=True)
    if "source" in g:
        c.text(g["source"], "gpu.source", nonempty=False)


def _variant(c: _Doc, v: Any, w: str) -> None:
    c.obj(v, w)
    op = c.text(c.get(v, "op", w, "an op"), _at(w, "op"), VARIANT_OPS)
    algo = c.text(c.get(v, "algo", w, "a string"), _at(w, "algo"), nonempty=False)
    for k in ("variant", "kernel", "b_max_source"):
        c.text(c.get(v, k, w, "a string"), _at(w, k), nonempty=False)
    # runs once per group (VariantKey.per_group), per tile (VariantFit.tiled), per bin (VariantFit.binned),
    # a strided data gradient as the unstrided one (VariantFit.unfolded)
    for switch in ("per_group", "tiles", "bins", "unfolded"):
        if switch in v and not isinstance(v[switch], bool):
            c.fail(_at(w, switch), "true or false", v[switch])
    if "overlap" in v:  # a per-group variant's launches at once (VariantFit.overlap)
        c.num(v["overlap"], _at(w, "overlap"), 1, whole=True)
    if v.get("local") is not None:  # the law's residuals smoothed (seer.models.local)
        _local(c, c.obj(v["local"], _at(w, "local")), _at(w, "local"), op)
    fs = c.text(c.get(v, "feature_set", w, "a feature set"), _at(w, "feature_set"))
    try:
        models.FeatureSet.parse(fs)
    except ValueError:
        c.fail(_at(w, "feature_set"), "seer, waves or types, optionally with +helpers, +clock and +loops", fs)
    _geometry(c, c.obj(c.get(v, "geometry", w, "an object"), _at(w, "geometry")), _at(w, "geometry"), op)
    c.num(c.get(v, "blocks_per_sm", w, "a whole number >= 1"), _at(w, "blocks_per_sm"), 1, whole=True)
    c.num(c.get(v, "sms", w, "a whole number >= 1"), _at(w, "sms"), 1, whole=True)
    c.num(c.get(v, "floor_ms", w, "a time in ms > 0"), _at(w, "floor_ms"), 0, MAX_MS, lo_open=True)
    c.num(c.get(v, "n", w, "a whole number >= 0"), _at(w, "n"), 0, whole=True)
    for k in ("train_rmspe", "cv_rmspe"):
        c.num(c.get(v, k, w, "a finite number >= 0"), _at(w, k), 0)
    ty = c.obj(c.get(v, "type", w, "an object"), _at(w, "type"))
    c.num(
        c.get(ty, "compute_bound_share", _at(w, "type"), "a share in [0, 1]"),
        _at(_at(w, "type"), "compute_bound_share"),
        0,
        1,
    )
    notes = c.seq(v.get("notes", []), _at(w, "notes"), what=" of strings")
    for i, s in enumerate(notes):
        c.text(s, _at(_at(w, "notes"), i), nonempty=False)
    clock = v.get("clock")
    if clock is not None:
        cw = _at(w, "clock")
        c.seq(clock, cw, 2, " numbers [c0, c1]")
        c.num(clock[0], f"{cw}[0]", -MAX_CLOCK_C0, MAX_CLOCK_C0)
        c.num(clock[1], f"{cw}[1]", -0.5, 1, lo_open=True, hi_open=True)
    _regimes(c, v, w, op, algo, fs)


def _regimes(c: _Doc, v: dict, w: str, op: str, algo: str, fs: str) -> None:
    """The regimes the feature set predicts with, with the features `models.design` builds."""
    names = _design_names(op, algo, fs, str(v.get("kernel", "")))
    typed = models.FeatureSet.parse(fs).typed
    helpers = _regime(c, c.get(v, "helpers", w, "an object"), _at(w, "helpers"))
    tc = v.get("type_chooser")
    if not typed:
        _features(c, helpers, _at(w, "helpers"), names["helpers"], fs)
        _features(
            c,
            _regime(c, c.get(v, "compute", w, "an object"), _at(w, "compute")),
            _at(w, "compute"),
            names["compute"],
            fs,
        )
        if v.get("memory") is not None:
            _features(c, _regime(c, v["memory"], _at(w, "memory")), _at(w, "memory"), names["memory"], fs)
        if v.get("under") is not None:
            _regime(c, v["under"], _at(w, "under"))
        if tc is not None:
            c.fail(_at(w, "type_chooser"), f"null for feature set {fs}", tc)
        return
    tw = _at(w, "type_chooser")
    if tc is None:
        c.fail(tw, f"a kernel-type chooser for feature set {fs}", got="null" if "type_chooser" in v else None)
    _, dims = _sample(op)
    labels = _knn_labels(c, c.obj(tc, tw), tw, dims)
    for i, ty in enumerate(labels):
        c.text(ty, _at(_at(tw, "labels"), i), models.TYPES)
        rw = _at(w, ty)
        if v.get(ty) is None:
            c.fail(rw, f"the {ty} regime that type_chooser names", got="null" if ty in v else None)
        _features(c, _regime(c, v[ty], rw), rw, names[ty] + names["helpers"], fs)


def _regime(c: _Doc, r: Any, w: str) -> dict:
    """Features, coefficients (>= 0: the fit constrains every one) and standard errors."""
    c.obj(r, w)
    feats = c.seq(c.get(r, "features", w, "a list of feature names"), _at(w, "features"), what=" of names")
    for i, f in enumerate(feats):
        c.text(f, _at(_at(w, "features"), i))
    n = len(feats)
    c.nums(c.get(r, "coef", w, f"a list of {n} numbers"), _at(w, "coef"), n, 0, MAX_COEF)
    c.nums(c.get(r, "se", w, f"a list of {n} numbers"), _at(w, "se"), n, 0, math.inf)
    c.num(c.get(r, "n", w, "a whole number >= 0"), _at(w, "n"), 0, whole=True)
    r2 = c.get(r, "r2", w, "a number or null")
    if r2 is not None:
        c.num(r2, _at(w, "r2"))
    return r


def _features(c: _Doc, r: dict, w: str, expected: list[str], fs: str) -> None:
    """A variant's feature names as this seer builds them (a file another seer wrote, which
    built others, is refitted)."""
    if r["features"] != expected:
        c.fail(
            _at(w, "features"),
            f"{json.dumps(expected)} (feature set {fs}; a fits file from another version of seer: "
            "refit it with python -m seer.fit)",
            got=json.dumps(r["features"]),
        )


# grid rules of one size and a tile ("expr", "div"), with the other sizes each names
SIZED_RULES = {"ceil": (), "mulceil": ("expr2",), "packed": ("per",)}


def _geometry(c: _Doc, g: dict, w: str, op: str) -> None:
    c.text(c.get(g, "op", w, "an op"), _at(w, "op"), (op,))
    axes = c.obj(c.get(g, "axes", w, "an object"), _at(w, "axes"))
    names, dims = _sample(op)
    for a, r in axes.items():
        aw = _at(_at(w, "axes"), a)
        if a not in AXES:
            c.fail(aw, "named " + ", ".join(AXES), got=json.dumps(a))
        c.obj(r, aw)
        kind = c.text(c.get(r, "kind", aw, "a rule kind"), _at(aw, "kind"), RULE_KINDS)
        if "match" in r:
            c.num(r["match"], _at(aw, "match"), 0, 1)
        if kind in SIZED_RULES:
            for k in ("expr", *SIZED_RULES[kind]):
                c.text(c.get(r, k, aw, f"a size of op {op}"), _at(aw, k), tuple(sorted(names)))
            c.num(c.get(r, "div", aw, "a whole number >= 1"), _at(aw, "div"), 1, whole=True)
        elif kind == "prod":
            times = r.get("times", 1)  # blocks to a tile (geometry.Product): a lone ceiling needs 2 or more
            c.num(times, _at(aw, "times"), 1, whole=True)
            least = 1 if isinstance(times, int) and times > 1 else 2
            want = f"a list of {'1 to 3' if least == 1 else '2 or 3'} sizes of op {op}"
            exprs = c.get(r, "exprs", aw, want)
            if not isinstance(exprs, list) or not least <= len(exprs) <= 3:
                c.fail(_at(aw, "exprs"), want, got=json.dumps(exprs))
            for i, e in enumerate(exprs):
                c.text(e, _at(_at(aw, "exprs"), i), tuple(sorted(names)))
            c.nums(c.get(r, "divs", aw, "whole numbers >= 1"), _at(aw, "divs"), len(exprs), 1, whole=True)
        elif kind == "const":
            c.num(c.get(r, "value", aw, "a whole number >= 1"), _at(aw, "value"), 1, whole=True)
        else:
            n = _points(c, c.get(r, "points", aw, "encoded points"), _at(aw, "points"), dims)
            c.nums(c.get(r, "values", aw, f"a list of {n} numbers"), _at(aw, "values"), n, 1, whole=True)


def _points(c: _Doc, d: Any, w: str, dims: int) -> int:
    """Log-configurations stored by `knn.encode`: n x dims finite float32 values; returns n."""
    c.obj(d, w)
    shape = c.nums(c.get(d, "shape", w, f"[n, {dims}]"), _at(w, "shape"), 2, 1, whole=True)
    if shape[1] != dims:
        c.fail(
            _at(w, "shape"),
            f"[n, {dims}] (the log-configuration of the op; fits written before convolutions gained "
            "the groups and dilation axes have fewer columns: refit them with python -m seer.fit)",
            got=json.dumps(d["shape"]),
        )
    c.text(c.get(d, "f4", w, "base64 float32 data"), _at(w, "f4"))
    try:
        pts = knn.decode(d)
    except (ValueError, TypeError, binascii.Error):
        c.fail(
            _at(w, "f4"),
            f"base64 float32 data of shape {json.dumps(d['shape'])}",
            got="data that does not decode to it",
        )
    bad = ~np.isfinite(pts).all(axis=1)
    if bad.any():
        c.fail(
            _at(w, "f4"), "finite log-configurations", got=f"a non-finite value in point {int(np.flatnonzero(bad)[0])}"
        )
    return int(shape[0])


def _knn_labels(c: _Doc, ch: dict, w: str, dims: int) -> list:
    """labels, points and label_idx of a nearest-neighbour chooser; returns the labels."""
    labels = c.seq(c.get(ch, "labels", w, "a list of labels"), _at(w, "labels"), what=" of labels")
    if not labels:
        c.fail(_at(w, "labels"), "a non-empty list of labels", labels)
    n = _points(c, c.get(ch, "points", w, "encoded points"), _at(w, "points"), dims)
    c.nums(c.get(ch, "label_idx", w, f"a list of {n} numbers"), _at(w, "label_idx"), n, 0, len(labels) - 1, whole=True)
    if "voters" in ch:  # how many leading points propose their variants (Chooser.voters)
        c.num(ch["voters"], _at(w, "voters"), 1, n, whole=True)
    return labels


def _chooser(c: _Doc, ch: Any, w: str, variants: dict) -> tuple[str, str]:
    """A variant chooser: its labels are keys of `variants` of its own op; returns (op, algo)."""
    c.obj(ch, w)
    op = c.text(c.get(ch, "op", w, "an op"), _at(w, "op"), VARIANT_OPS)
    algo = c.text(c.get(ch, "algo", w, "a string"), _at(w, "algo"), nonempty=False)
    _, dims = _sample(op)
    if "candidates" in ch:  # nearest configurations whose variants compete (seer.models.candidates)
        c.nums([ch["candidates"]], _at(w, "candidates"), 1, 1, 64, whole=True)
    labels = _knn_labels(c, ch, w, dims)
    for i, lab in enumerate(labels):
        lw = _at(_at(w, "labels"), i)
        if not isinstance(lab, str) or lab not in variants:
            c.fail(lw, "the key of a fitted variant in variants", lab)
        if variants[lab].get("op") != op:
            c.fail(lw, f"a variant of op {op}", lab)
    # the tree rule (seer.models.tree), one tree per kind of convolution; the trees that
    # propose beyond the trust distance alone (Chooser.reach), for the kinds without one
    for name in ("trees", "reach_trees"):
        if name in ch:
            tw = _at(w, name)
            c.obj(ch[name], tw)
            for kind, t in ch[name].items():
                if kind not in KINDS.values():
                    c.fail(tw, f"keyed by {' or '.join(KINDS.values())}", got=json.dumps(kind))
                _tree(c, t, _at(tw, kind), _axes(t, op, dims), len(labels))
    for name in ("gate", "bin_gate"):  # yes-or-no trees (seer.models.gate, seer.models.bin_gate)
        if name in ch:
            _gate(c, ch[name], _at(w, name), op, dims)
    return op, algo


def _gate(c: _Doc, g: Any, w: str, op: str, dims: int) -> None:
    """A yes-or-no gate: one tree, or a forest of them (seer.models.forest) with the share of
    votes against the majority that puts its answer in doubt."""
    c.obj(g, w)
    if "forest" not in g:
        _tree(c, g, w, _axes(g, op, dims), 2)
        return
    trees = c.seq(g["forest"], _at(w, "forest"), what=" of trees")
    if not trees:
        c.fail(_at(w, "forest"), "a non-empty list of trees", trees)
    for i, t in enumerate(trees):
        _tree(c, t, _at(_at(w, "forest"), i), _axes(t, op, dims), 2)
    c.num(c.get(g, "doubt", w, "a number in (0, 0.5]"), _at(w, "doubt"), 0, 0.5, lo_open=True)


def _axes(t: Any, op: str, dims: int) -> int:
    """The axes a chooser's tree may split: the log-configuration's, and a convolution's
    products where the tree says it splits them too."""
    products = isinstance(t, dict) and t.get("products") is True and op in CONV_OPS
    return dims + len(configs.CONV_PRODUCTS) * products


def _tree(c: _Doc, t: Any, w: str, dims: int, labels: int) -> None:
    """A tree's nodes: equal-length lists; inner nodes split on a log-configuration axis (or,
    with "products", one of a convolution's products) at a finite threshold and point to later
    nodes (so a walk ends), leaves answer a label index (and, with "members", a bit mask of the
    label indices their training rows ran)."""
    c.obj(t, w)
    if "products" in t and not isinstance(t["products"], bool):
        c.fail(_at(w, "products"), "true or false", t["products"])
    c.num(c.get(t, "min_leaf", w, "a whole number >= 1"), _at(w, "min_leaf"), 1, whole=True)
    feature = c.nums(c.get(t, "feature", w, "a list of axis indices"), _at(w, "feature"), None, LEAF, dims - 1, True)
    n = len(feature)
    if not n:
        c.fail(_at(w, "feature"), "a non-empty list of axis indices", t["feature"])
    c.nums(c.get(t, "threshold", w, f"a list of {n} numbers"), _at(w, "threshold"), n)
    c.nums(c.get(t, "label", w, f"a list of {n} label indices"), _at(w, "label"), n, 0, labels - 1, whole=True)
    if "members" in t:  # per leaf, a bit mask of the label indices its training rows ran
        c.nums(t["members"], _at(w, "members"), n, 0, 2 ** min(labels, MAX_MEMBERS + 1) - 1, whole=True)
    for side in ("left", "right"):
        child = c.nums(c.get(t, side, w, f"a list of {n} node indices"), _at(w, side), n, 0, n - 1, whole=True)
        bad = (feature != LEAF) & (child <= np.arange(n))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            c.fail(_at(_at(w, side), i), f"a node after node {i} (a tree's children follow their parent)", t[side][i])


def _options(c: _Doc, o: dict) -> None:
    """The fit's settings (seer.models.FitOptions): switches true or false, the gates one of
    their names, numbers >= 0, the trust distance > 0."""
    switches = {k for k, v in models.DEFAULT.to_dict().items() if isinstance(v, bool)}
    for k, v in o.items():
        if k in switches:
            if not isinstance(v, bool):
                c.fail(_at("options", k), "true or false", v)
        elif k == "gates":
            if v not in GATES:
                c.fail(_at("options", k), "one of " + ", ".join(f'"{g}"' for g in GATES), v)
        else:
            c.num(v, _at("options", k), 0, lo_open=k == "trust_distance")


def _dual(c: _Doc, d: Any, w: str, key: str) -> None:
    """A gradient algorithm timed as the forward (seer.models.dual.ForwardDual), keyed as its chooser."""
    c.obj(d, w)
    op = c.text(c.get(d, "op", w, "a gradient op"), _at(w, "op"), GRADIENT_OPS)
    algo = c.text(c.get(d, "algo", w, "an algorithm"), _at(w, "algo"), DUAL_ALGOS)
    if key != f"{op}:{algo}":
        c.fail(w, f"keyed {json.dumps(f'{op}:{algo}')} (its op:algo)", got=json.dumps(key))
    c.num(c.get(d, "scale", w, "a finite number > 0"), _at(w, "scale"), 0, lo_open=True)
    for k in ("rmspe", "own_rmspe"):
        c.num(c.get(d, k, w, "a finite number >= 0"), _at(w, k), 0)
    c.num(c.get(d, "n", w, "a whole number >= 1"), _at(w, "n"), 1, whole=True)
    for k in ("spread", "own_spread", "per_position_ns"):  # files before 2026-11-27 (-29) have none
        if k in d:
            c.num(d[k], _at(w, k), 0)
    if "share" in d:  # files before 2026-11-30 have none
        c.num(d["share"], _at(w, "share"), 0, 1)


def _smoothing(c: _Doc, d: dict, w: str, optional: bool = False) -> None:
    """A kernel length and a prior weight, both > 0 (both null where `optional`: none chosen),
    and a local-linear fit's ridge > 0 where it has one."""
    if optional and d.get("length") is None and d.get("prior") is None:
        return
    for k in ("length", "prior"):
        c.num(c.get(d, k, w, "a number > 0"), _at(w, k), 0, lo_open=True)
    if d.get("ridge") is not None:  # local-linear (files before 2026-12-02, session 52, have none)
        c.num(d["ridge"], _at(w, "ridge"), 0, lo_open=True)


def _decoded(c: _Doc, d: dict, w: str, shape: list[int]) -> np.ndarray:
    """An array stored by `knn.encode`, decoded (its shape is the caller's to check)."""
    try:
        return knn.decode(d)
    except (KeyError, ValueError, TypeError, binascii.Error):
        c.fail(w, f"base64 float32 data of shape {shape}", got="data that does not decode")


def _local(c: _Doc, d: dict, w: str, op: str) -> None:
    """A variant's training log-configurations and its law's log residuals there, with the op's
    smoothing (seer.models.local.LocalCorrection)."""
    _smoothing(c, d, w)
    c.num(c.get(d, "neighbours", w, "a whole number >= 1"), _at(w, "neighbours"), 1, whole=True)
    n = _points(c, c.get(d, "points", w, "encoded points"), _at(w, "points"), _sample(op)[1])
    rw = _at(w, "residuals")
    r = _decoded(c, c.obj(c.get(d, "residuals", w, "encoded log residuals"), rw), rw, [n])
    if r.shape != (n,) or not np.isfinite(r).all():
        c.fail(
            rw,
            f"{n} finite values (one a point)",
            got=f"shape {list(r.shape)}" if r.shape != (n,) else "a non-finite one",
        )


def _gemm_tiles(c: _Doc, d: Any, w: str, key: str) -> None:
    """A cuBLASLt algorithm's variant per tile and operand layout (seer.models.lt_config),
    keyed like its chooser (`gemm:lt:55`): each entry a tile id, a layout and a variant key
    (modelled or not)."""
    op = key.split(":", 1)[0]
    if op not in GEMM_OPS:
        c.fail(w, "keyed by a GEMM op's chooser key (gemm:<algo>)", got=json.dumps(key))
    for i, e in enumerate(c.seq(d, w, what=" of tile entries")):
        at = _at(w, i)
        c.obj(e, at)
        c.num(c.get(e, "tile", at, "a tile id"), _at(at, "tile"), 0, whole=True)
        c.text(c.get(e, "trans", at, "an operand layout"), _at(at, "trans"), configs.LAYOUTS)
        c.text(c.get(e, "variant", at, "a variant key"), _at(at, "variant"))


def _call_times(c: _Doc, d: Any, w: str, key: str) -> None:
    """A convolution direction's or GEMM op's timed training calls (seer.models.call_time.CallTimes),
    keyed by its op (a GEMM's library picks under the algorithm "")."""
    c.obj(d, w)
    op = c.text(c.get(d, "op", w, "a convolution or GEMM op"), _at(w, "op"), CONV_OPS + GEMM_OPS)
    if key != op:
        c.fail(w, f"keyed {json.dumps(op)} (its op)", got=json.dumps(key))
    algos = c.seq(c.get(d, "algos", w, "a list of algorithms"), _at(w, "algos"), what=" of algorithms")
    for i, a in enumerate(algos):
        c.text(a, _at(_at(w, "algos"), i), nonempty=op in CONV_OPS)
    if not algos or len(set(algos)) != len(algos):
        c.fail(_at(w, "algos"), "a non-empty list of distinct algorithms", algos)
    n = _points(c, c.get(d, "points", w, "encoded points"), _at(w, "points"), _sample(op)[1])
    ratio = c.obj(c.get(d, "log_ratio", w, "encoded log time ratios"), _at(w, "log_ratio"))
    r = _decoded(c, ratio, _at(w, "log_ratio"), [n, len(algos)])
    if r.shape != (n, len(algos)):
        c.fail(_at(w, "log_ratio"), f"{n} x {len(algos)} finite values or NaN", got=f"shape {list(r.shape)}")
    if np.isinf(r).any():
        c.fail(_at(w, "log_ratio"), f"{n} x {len(algos)} finite values or NaN", got="an infinite value")


def _drift(c: _Doc, d: Any, w: str) -> None:
    c.obj(d, w)
    c.nums(c.get(d, "log_slowdown", w, f"a list of {len(KNOTS)} numbers"), _at(w, "log_slowdown"), len(KNOTS))
    c.num(c.get(d, "p_value", w, "a p-value in [0, 1]"), _at(w, "p_value"), 0, 1)


def _memory_bound(c: _Doc, mb: dict, w: str) -> None:
    """The section `seer.models.memory.MemoryBoundFit.to_dict` writes: per GPU, per kernel a floor and
    (unless only the floor was measured) the line const + bytes/bw [+ rows] [+ reread_bytes]."""
    schema = c.get(mb, "schema", w, json.dumps(MEMORY_SCHEMA))
    if schema != MEMORY_SCHEMA:
        c.fail(_at(w, "schema"), json.dumps(MEMORY_SCHEMA), schema)
    gpus_ = c.obj(c.get(mb, "gpus", w, "an object"), _at(w, "gpus"))
    for slug, g in gpus_.items():
        gw = _at(_at(w, "gpus"), slug)
        c.obj(g, gw)
        c.text(c.get(g, "name", gw, "a GPU name"), _at(gw, "name"))
        ds = c.obj(c.get(g, "datasheet", gw, "an object"), _at(gw, "datasheet"))
        for k in ("dram_gbs", "fp32_gflops", "pcie_gbs"):
            c.num(
                c.get(ds, k, _at(gw, "datasheet"), "a finite number > 0"), _at(_at(gw, "datasheet"), k), 0, lo_open=True
            )
        for key, k in c.obj(c.get(g, "kernels", gw, "an object"), _at(gw, "kernels")).items():
            _memory_kernel(c, k, _at(_at(gw, "kernels"), key))


def _memory_kernel(c: _Doc, k: Any, w: str) -> None:
    c.obj(k, w)
    c.num(c.get(k, "floor_ms", w, "a time in ms > 0"), _at(w, "floor_ms"), 0, MAX_MS, lo_open=True)
    c.num(c.get(k, "n", w, "a whole number >= 1"), _at(w, "n"), 1, whole=True)
    coef = k.get("coef")
    if coef is None:
        return
    cw = _at(w, "coef")
    c.obj(coef, cw)
    thr = k.get("reread_cols")
    if thr is not None:
        c.num(thr, _at(w, "reread_cols"), 0, lo_open=True)
    rows = "rows" in coef
    want = ["const", "bytes"] + (["rows"] if rows else []) + (["reread_bytes"] if thr is not None else [])
    if sorted(coef) != sorted(want):
        c.fail(
            cw,
            f"an object of {', '.join(want)} (reread_bytes exactly where reread_cols is set)",
            got=json.dumps(sorted(coef)),
        )
    c.num(coef["const"], _at(cw, "const"), -MAX_COEF, MAX_COEF)
    c.num(coef["bytes"], _at(cw, "bytes"), 0, MAX_COEF, lo_open=True)
    for name in want[2:]:
        c.num(coef[name], _at(cw, name), 0, MAX_COEF)


def _finite(c: _Doc, v: Any, where: str) -> None:
    """Every number anywhere is finite (Python's json reads NaN and Infinity)."""
    if isinstance(v, float) and not math.isfinite(v):
        c.fail(where, "a finite number", v)
    elif isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, (dict, list, float)):
                _finite(c, x, _at(where, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            if isinstance(x, (dict, list, float)):
                _finite(c, x, _at(where, i))
