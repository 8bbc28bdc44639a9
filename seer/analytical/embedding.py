"""Embedding-bag lookups (DLRM): forward with the L2 hit-rate model, and backward with SGD.

The formulas are those of the DLRM performance model (seed 000, `embedding_forward_predictor`
and `embedding_backward_sgd_predictor`), kept term for term so that its published numbers
come out again; only the arithmetic is vectorized. The one change is how the hit rate
C(X, L) / C(E, L) is evaluated: the seed multiplies L ratios in a Python loop, which is slow
for large bags and over many configs; here it is one closed form (log falling factorials),
exact where the seed's loop gives exactly 0 or 1 and within about 1e-11 relative elsewhere.

Configuration (names of `seer.data.records.FIELDS`): batch B, num_embeddings E (rows per table),
num_tables T, bag_size L, emb_dim D, rows_per_block (warps per SM in the seed's model).
The seed's own argument names (batch_size, embedding_dim) are accepted too.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy.special import gammaln

from seer.analytical._inputs import Configs, check_counts, gather, unit_factor
from seer.errors import SeerError
from seer.hardware.gpus import GPUSpec
from seer.hardware.peaks import Peaks, peaks_for

FIELDS = ("batch", "num_embeddings", "num_tables", "bag_size", "emb_dim", "rows_per_block")
ALIASES = {"batch_size": "batch", "embedding_dim": "emb_dim"}
SECTOR = 32  # bytes: DRAM/L2 traffic is counted in 32-byte sectors
FLOAT = 4  # bytes per weight (FP32 tables)


def _round_up(nbytes: np.ndarray) -> np.ndarray:
    """Bytes rounded up to whole 32-byte sectors."""
    return np.floor((nbytes + SECTOR - 1) / SECTOR) * SECTOR


_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)  # lgamma's series, z**-1 .. z**-9


def _stirling_tail(z: np.ndarray) -> np.ndarray:
    """lgamma(z) - [(z - 1/2) log z - z + log(2 pi) / 2] for z >= 20 (error below 1e-17)."""
    inv, inv2 = 1.0 / z, 1.0 / (z * z)
    acc = np.zeros_like(z)
    for c in reversed(_STIRLING):
        acc = acc * inv2 + c
    return acc * inv


def log_falling(z, length) -> np.ndarray:
    """log(z (z-1) ... (z-length+1)) = lgamma(z+1) - lgamma(z-length+1), for z >= length.

    Taking the difference of two large log-gammas loses about z log z * 1e-16 (1e-6 at
    z = 3e8); where both arguments are >= 20 the difference is formed inside Stirling's
    series instead, so the error stays near length * log z * 1e-16.
    """
    z = np.asarray(z, dtype=np.float64)
    n = np.asarray(length, dtype=np.float64)
    a, b = z + 1.0, z - n + 1.0
    direct = gammaln(a) - gammaln(b)
    bs = np.maximum(b, 20.0)  # only used where b >= 20
    as_ = bs + n
    series = n * np.log(as_) - (bs - 0.5) * np.log1p(-n / as_) - n + (_stirling_tail(as_) - _stirling_tail(bs))
    return np.where(b >= 20.0, series, direct)


def hit_rate(rows_in_l2, num_embeddings, bag_size) -> np.ndarray:
    """C(X, L) / C(E, L): the chance that all L lookups of a bag hit the X rows held in L2.

    The seed multiplies L ratios (X-i)/(E-i) in a loop; here it is exp of a difference of
    log falling factorials, so a bag of 1000 over 1e9 rows costs the same as a bag of 1 and
    never loops. X < L gives exactly 0 and X = E exactly 1, as the loop does; elsewhere the
    two agree to about 1e-11 relative (tests/test_analytical_embedding.py checks 1e-9).
    """
    x = np.asarray(rows_in_l2, dtype=np.float64)
    e = np.asarray(num_embeddings, dtype=np.float64)
    l = np.asarray(bag_size, dtype=np.float64)
    ok = x >= l
    xs = np.where(ok, x, l)  # keep log_falling in its domain where the answer is 0 anyway
    with np.errstate(over="ignore", under="ignore"):
        log_hr = log_falling(xs, l) - log_falling(e, l)
        hr = np.exp(np.minimum(log_hr, 0.0))
    return np.where(ok, hr, 0.0)


def _configs(configs, kwargs, need_rows_per_block: bool) -> Configs:
    fields = FIELDS if need_rows_per_block else FIELDS[:-1]
    optional = () if need_rows_per_block else FIELDS[-1:]
    cfg = gather(configs, kwargs, fields, optional=optional, aliases=ALIASES)
    check_counts(cfg, [f for f in FIELDS if f in cfg.cols])
    e, l = cfg.cols["num_embeddings"], cfg.cols["bag_size"]
    bad = l > e
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SeerError(
            f"{cfg.name('bag_size', i)}: a bag of {int(l[i])} distinct rows cannot "
            f"come from a table of num_embeddings={int(e[i])} rows (expected "
            "bag_size <= num_embeddings)"
        )
    return cfg


def _out(us: np.ndarray, cfg: Configs, unit: str):
    """The formulas' microseconds (the seed's unit) in `unit` (ms unless asked)."""
    f = unit_factor(unit) / 1e3
    vals = us if unit == "us" else us * f
    return float(vals[0]) if cfg.single else vals


def _forward(cfg: Configs, pk: Peaks) -> dict[str, np.ndarray]:
    c = cfg.cols
    b, e, t, l, d, rpb = (c[k] for k in FIELDS)
    warps_at_once = pk.sms * rpb  # resident warps on the device
    tables_at_once = np.floor((warps_at_once + b - 1) / b)  # tables being read at the same time
    avg_table_bytes = np.minimum(np.floor_divide(float(pk.l2_bytes), tables_at_once), e * d * FLOAT)
    rows_in_l2 = np.floor_divide(np.floor_divide(avg_table_bytes, FLOAT), d)
    hr = hit_rate(rows_in_l2, e, l)
    row_bytes = _round_up(d * FLOAT)
    table_traffic = l * row_bytes  # one bag's rows
    indices_dram = _round_up(l * FLOAT)
    offsets = 32.0 + 32.0  # table offsets + bag offsets, one sector each per bag
    l2_bytes = (offsets * b + hr * (table_traffic * b - avg_table_bytes)) * t
    dram_bytes = (
        (indices_dram + row_bytes) * b + (1 - hr) * (table_traffic * b - avg_table_bytes) + avg_table_bytes
    ) * t
    dram_us = dram_bytes / pk.dram_gbs / 1000.0
    l2_us = l2_bytes / pk.l2_gbs / 1000.0
    return {
        "hit_rate": hr,
        "rows_in_l2": rows_in_l2,
        "dram_bytes": dram_bytes,
        "l2_bytes": l2_bytes,
        "dram_us": dram_us,
        "l2_us": l2_us,
        "time_us": np.maximum(dram_us, l2_us),
    }


def forward_traffic(
    configs: pd.DataFrame | Mapping | None = None,
    *,
    gpu: str | GPUSpec | None = None,
    peaks: Peaks | Mapping | None = None,
    **config,
) -> pd.DataFrame:
    """The forward model's intermediate quantities per config: hit rate, rows of a table in
    L2, DRAM and L2 bytes, and the DRAM, L2 and total times in ms (dram_ms, l2_ms, time_ms,
    as every time seer returns) -- for inspection and for the roofline (one row for a
    keyword config)."""
    cfg = _configs(configs, config, True)
    parts = _forward(cfg, peaks_for(gpu, peaks))
    times = {k.replace("_us", "_ms"): parts.pop(k) / 1e3 for k in ("dram_us", "l2_us", "time_us")}
    return pd.DataFrame({**parts, **times}, index=cfg.index)


def embedding_forward(
    configs: pd.DataFrame | Mapping | None = None,
    *,
    gpu: str | GPUSpec | None = None,
    peaks: Peaks | Mapping | None = None,
    unit: str = "ms",
    **config,
) -> float | np.ndarray:
    """Time of a batched embedding-bag forward (FBGEMM-style table-batched lookup).

    One config by keyword (returns a float) or a DataFrame with the columns batch,
    num_embeddings, num_tables, bag_size, emb_dim, rows_per_block (returns an array).
    `gpu` picks datasheet peaks; `peaks` overrides them (a `Peaks`, or a mapping such as
    {"peak_dram_bw": 809, "peak_l2_bw": 2888}). The time is in ms, seer's unit for time
    everywhere; `unit="us"` or `"s"` asks for another (the seed printed microseconds).

    Time = max(DRAM bytes / DRAM bandwidth, L2 bytes / L2 bandwidth), where a bag's rows
    come from L2 with the probability `hit_rate` that all of them lie in the table share
    that fits in L2 alongside the other tables read at the same time.
    """
    unit_factor(unit)
    cfg = _configs(configs, config, True)
    return _out(_forward(cfg, peaks_for(gpu, peaks))["time_us"], cfg, unit)


def embedding_backward_sgd(
    configs: pd.DataFrame | Mapping | None = None,
    *,
    gpu: str | GPUSpec | None = None,
    peaks: Peaks | Mapping | None = None,
    unit: str = "ms",
    **config,
) -> float | np.ndarray:
    """Time of the fused embedding-bag backward with an SGD update (seed 000's model).

    Each (bag, table) warp reads its offsets, indices and gradient row and reads and writes
    the L rows it updates; time = max(traffic / DRAM bandwidth, MACs / peak FP32 rate),
    as in the seed (which divides multiply-accumulates by its GFLOP/s figure).
    Same arguments as `embedding_forward` (ms unless `unit` says otherwise); rows_per_block is
    optional (the model ignores it).
    """
    unit_factor(unit)
    cfg = _configs(configs, config, False)
    pk = peaks_for(gpu, peaks)
    c = cfg.cols
    b, t, l, d = c["batch"], c["num_tables"], c["bag_size"], c["emb_dim"]
    row_bytes = _round_up(d * FLOAT)
    per_warp = 32 + 64 + _round_up(l * FLOAT) + 2 * l * row_bytes + row_bytes
    traffic = b * t * per_warp
    macs = b * t * (l * 4 * np.floor_divide(d, 4))
    us = np.maximum(traffic / pk.dram_gbs / 1000, macs / pk.fp32_gflops / 1000)
    return _out(us, cfg, unit)
