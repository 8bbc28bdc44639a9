"""The design of the `conv_grid` suite: a convolution training grid that covers what real layers need.

Two parts, each with a core (measured first) and a tail (later calls, `--shard`s):

- Real layers: every distinct convolution of the CNN families of cudnn_bench.families
  (torchvision's classification, detection and segmentation models at a few input sizes) at
  one batch size of its family's list in the core, cycling through the list so every batch size
  gets its share, and at two more batch sizes in the tail.
- A space-filling design: an unscrambled Sobol sequence (scipy.stats.qmc, fixed direction
  numbers) with a fixed digital shift, mapped onto grids of batch (1-256, 2^k and 3x2^k), input
  size (4-320, about four steps an octave; a quarter of the points wider than high, up to 2:1),
  input channels (3-2048, four steps an octave, in a band around the channels real networks use
  at that size: halving the size doubles the channels, +-2.5 octaves) and output channels
  (+-2 octaves from the input's), and onto a structure: filter (1, 3, 5, 7; 1x3, 3x1, 1x7,
  7x1), stride (1, 2), padding (0 or "same"), dilation (1, 2, 4, at stride 1 with "same"
  padding) and groups (1; grouped, 2-64 groups; depthwise, groups = channels). Each structure's
  weight is half its share of the distinct real layers and half uniform, so real structures
  dominate and rare ones still get points. The first `SOBOL_CORE` points are the core.

Every size comes from integer indices into fixed grids (the structure from a dyadic fraction
against cumulative weights), so the suite is the same on every machine and scipy version (a test
pins its first points); configurations are deduplicated
(the first wins) and every one is valid (output at least 1x1, groups dividing the channels).
The held-out Test-set-II configurations (suite `test_set_ii`) are excluded: no configuration
here equals one of them (same batch, sizes, filter, stride, padding, dilation and groups); near
neighbours (the same layer at another batch or input size) are kept, as training data should.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .configs import ConvConfig
from .families import FAMILIES, Layer

BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SIZES = (4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)
CHANNELS = tuple([3] + [a << e for e in range(1, 9) for a in (4, 5, 6, 7)] + [2048])  # 3, 8, 10, 12, 14, 16 .. 2048
GROUPS = (2, 4, 8, 16, 32, 64)
BAND_CENTER = 32  # channel index at size index 0; each size step down the grid is a channel step up
BAND_HALF = 10  # +-2.5 octaves of input channels around the band's centre
OUT_HALF = 8  # +-2 octaves of output channels around the input's
STEM_OUT = 5  # index of 16: a 3-channel stem gets 16-64 output channels
SOBOL_BITS = 30
SOBOL_CORE = 1024  # points of the space-filling design in the core
SOBOL_TOTAL = 4096
TAIL_BATCHES = (3, 6)  # the real layers' tail: these steps further along their family's batch list

# (kh, kw, stride, padding: 0 or "same", dilation, groups: dense, grouped or depthwise)
Structure = tuple[int, int, int, str, int, str]


def structures() -> list[Structure]:
    """The structures the space-filling design draws from."""
    out: list[Structure] = []
    for k in (1, 3, 5, 7):
        for s in (1, 2):
            for pad in ("0",) if k == 1 else ("0", "same"):
                for d in (1, 2, 4) if k > 1 and s == 1 and pad == "same" else (1,):
                    for g in ("dense", "grouped") if k == 1 else ("dense", "grouped", "depthwise"):
                        out.append((k, k, s, pad, d, g))
    for kh, kw in ((1, 3), (3, 1), (1, 7), (7, 1)):
        out.append((kh, kw, 1, "same", 1, "dense"))
    return out


def structure_of(layer: Layer) -> Structure:
    """A real layer's structure (padding other than 0 and "same" reads as its own kind)."""
    same = layer.pad_h == layer.dil * (layer.kh - 1) // 2 and layer.pad_w == layer.dil * (layer.kw - 1) // 2
    pad = "0" if layer.pad_h == layer.pad_w == 0 else "same" if same else "other"
    kind = "dense" if layer.groups == 1 else "depthwise" if layer.groups == layer.c_in == layer.c_out else "grouped"
    return (layer.kh, layer.kw, layer.stride, pad, layer.dil, kind)


@dataclass(frozen=True)
class Design:
    """The suite's configurations in design order and the tier of each key (0 core, 1 tail)."""

    configs: tuple[ConvConfig, ...]
    tiers: dict[str, int]
    parts: dict[str, str]  # key -> "layers" or "sobol"


def _mask(dim: int) -> int:
    """The fixed digital shift of one Sobol dimension."""
    return int(hashlib.sha1(f"conv_grid.sobol.{dim}".encode()).hexdigest()[:8], 16) % (1 << SOBOL_BITS)


def sobol_indices(n: int, dims: int) -> np.ndarray:
    """n points of a digitally shifted Sobol sequence as integers in [0, 2^SOBOL_BITS)."""
    from scipy.stats import qmc

    m = max(1, int(np.ceil(np.log2(max(2, n)))))
    u = qmc.Sobol(dims, scramble=False, bits=SOBOL_BITS).random_base2(m)[:n]
    ints = np.rint(u * (1 << SOBOL_BITS)).astype(np.int64)  # exact: Sobol points are dyadic
    return ints ^ np.array([_mask(d) for d in range(dims)], dtype=np.int64)


def _pick(v: int, n: int) -> int:
    """An index in [0, n) from a SOBOL_BITS-bit integer, by its leading bits."""
    return (v * n) >> SOBOL_BITS


def _reflect(i: int, n: int) -> int:
    """i folded into [0, n) at both ends."""
    while not 0 <= i < n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def _snap_groups(c: int, g: int) -> int:
    return g * max(2, round(c / g))


def sobol_config(v: Iterable[int], cats: list[Structure], cum: list[float], i: int) -> ConvConfig:
    """The configuration of one point (7 integer coordinates)."""
    u = list(v)
    x = u[0] / (1 << SOBOL_BITS)
    kh, kw, s, pad, d, kind = cats[min(len(cats) - 1, sum(1 for c in cum if c <= x))]
    n = BATCHES[_pick(u[1], len(BATCHES))]
    ih = _pick(u[2], len(SIZES))
    ic = _reflect(BAND_CENTER - ih + _pick(u[3], 2 * BAND_HALF + 1) - BAND_HALF, len(CHANNELS))
    if kind != "dense" and ic == 0:
        ic = 1  # grouped and depthwise layers have more than 3 channels
    if ic == 0:
        oc = STEM_OUT + _pick(u[4], 2 * OUT_HALF + 1) // 2
    else:
        oc = _reflect(ic + _pick(u[4], 2 * OUT_HALF + 1) - OUT_HALF, len(CHANNELS))
        oc = max(oc, 1)
    h = SIZES[ih]
    wide = _pick(u[5], 16)
    w = h if wide < 12 else h * (4 + wide - 11) // 4  # a quarter: 1.25 to 2 times as wide
    c_in, c_out = CHANNELS[ic], CHANNELS[oc]
    g = 1
    if kind == "depthwise":
        c_out = g = c_in
    elif kind == "grouped":
        g = GROUPS[_pick(u[6], len(GROUPS))]
        c_in, c_out = _snap_groups(c_in, g), _snap_groups(c_out, g)
    ph, pw = ((kh - 1) * d // 2, (kw - 1) * d // 2) if pad == "same" else (0, 0)
    h = max(h, (kh - 1) * d + 1 - 2 * ph)
    w = max(w, (kw - 1) * d + 1 - 2 * pw)
    return ConvConfig(n, c_in, h, w, c_out, kh, kw, s, s, ph, pw, d, d, g, name=f"sobol.{i}")


def weights_of(cats: list[Structure], real: Iterable[Structure]) -> list[float]:
    """The cumulative weights the design draws structures by (all but the last): each half
    its share of the real layers' structures `real`, half uniform."""
    count = collections.Counter(real)
    total = sum(count[c] for c in cats) or 1
    weights = [0.5 * count[c] / total + 0.5 / len(cats) for c in cats]
    cum, acc = [], 0.0
    for wt in weights[:-1]:
        acc += wt
        cum.append(acc / sum(weights))
    return cum


def design(exclude: Iterable[str] = ()) -> Design:
    """The whole suite; `exclude`: configuration keys never to include (Test-set-II's)."""
    exclude = set(exclude)
    configs: list[ConvConfig] = []
    tiers: dict[str, int] = {}
    parts: dict[str, str] = {}

    def add(c: ConvConfig, tier: int, part: str) -> bool:
        k = c.key()
        if k in exclude or k in tiers or not c.valid:
            return False
        configs.append(c)
        tiers[k], parts[k] = tier, part
        return True

    # real layers: each distinct shape once, the first family (table order) naming it
    shapes: dict[tuple, tuple[Layer, tuple[int, ...], str]] = {}
    for fam in FAMILIES:
        for hw in fam.sizes:
            for layer in fam.build(hw):
                shapes.setdefault(layer.shape(), (layer, fam.batches, f"{layer.name}@{hw[0]}x{hw[1]}"))
    per_family: dict[tuple[int, ...], int] = collections.Counter()
    tails = []
    for layer, batches, name in sorted(shapes.values(), key=lambda t: _hash(t[2])):
        start = per_family[batches]
        per_family[batches] += 1
        for step in range(len(batches)):  # the first batch size that is not a Test-set-II config
            if add(layer.config(batches[(start + step) % len(batches)], name), 0, "layers"):
                break
        tails += [(layer, batches[(start + t) % len(batches)], name) for t in TAIL_BATCHES if t < len(batches)]
    # the space-filling design, weighted towards the real layers' structures
    cats = structures()
    cum = weights_of(cats, [structure_of(layer) for layer, _, _ in shapes.values()])
    pts = sobol_indices(SOBOL_TOTAL, 7)  # a whole base-2 net: every prefix of 2^k points is balanced
    for i, v in enumerate(pts):
        add(sobol_config(v, cats, cum, i), 0 if i < SOBOL_CORE else 1, "sobol")
    for layer, b, name in tails:
        add(layer.config(b, name), 1, "layers")
    return Design(tuple(configs), tiers, parts)


def _hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:15], 16)
