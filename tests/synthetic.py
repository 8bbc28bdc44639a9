"""Synthetic harness records with known timing laws, for end-to-end tests without a GPU.

Every kernel obeys a SEER-style law: t = W * (a * Kb + b) + c with W = ceil(blocks / B_max),
plus 2% multiplicative noise, so a correct fit must find B_max and the coefficients.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from seer.data import records

GPU, SMS = "Tesla T4", 40
# algo -> (kernel, tile_m (pixels), tile_n (filters), resident blocks per SM, a, b, c); a full
# wave runs at 1-7 FP32 TFLOP/s, below the T4's 8.1 (prediction raises a faster answer to the peak)
CONV = {
    "IMPLICIT_PRECOMP_GEMM": ("volta_scudnn_128x64_relu_small_nn_v1", 128, 64, 2, 2.0e-4, 4e-3, 0.020),
    "IMPLICIT_GEMM": ("implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>",
                      32, 32, 8, 1.0e-4, 2e-3, 0.015),
    "GEMM": ("explicit_convolve_sgemm<float, int, 128, 5, 5, 3, 3, 3, 0, false>", 32, 32, 4, 3.0e-4, 3e-3, 0.030),
}
WN = ("volta_sgemm_128x64_nn", 128, 64, 2, 3.5e-4, 3e-3, 0.025)


def _conv_shape(rng, n, networks=False):
    k = rng.choice([1, 3, 3, 5], n)
    s = rng.choice([1, 1, 2], n)
    hw = rng.integers(7, 113, n)
    return pd.DataFrame({"batch": rng.choice([1, 8, 16, 32, 64], n), "c_in": rng.integers(3, 513, n),
                         "h_in": hw, "w_in": hw, "c_out": rng.integers(8, 513, n), "kh": k, "kw": k,
                         "stride_h": s, "stride_w": s, "pad_h": k // 2, "pad_w": k // 2,
                         "dil_h": 1, "dil_w": 1, "groups": 1})


def conv_records(n: int = 400, seed: int = 0, suite: str = "seer_grid", noise: float = 0.02) -> pd.DataFrame:
    """One main-kernel row per (config, algorithm): all four algorithms measured."""
    rng = np.random.default_rng(seed)
    cfg = _conv_shape(rng, n)
    cfg["op"] = "conv_fwd"
    P, Q = records.conv_output_hw(cfg)
    npq = cfg["batch"] * P * Q
    crs = cfg["c_in"] * cfg["kh"] * cfg["kw"]
    rows = []
    for algo, (kernel, tm, tn, bps, a, b, c) in {**CONV, "WINOGRAD_NONFUSED": WN}.items():
        d = cfg.copy()
        d["algo"], d["kernel"] = algo, kernel
        if algo == "WINOGRAD_NONFUSED":
            tiles = cfg["batch"] * np.ceil(P / 4) * np.ceil(Q / 4)
            gx, gy, gz, kb = np.ceil(tiles / tm), np.ceil(cfg["c_out"] / tn), 36, cfg["c_in"]
            helper = 2e-4 * (cfg["batch"] * cfg["c_in"] * cfg["h_in"] * cfg["w_in"] * 4e-6 * 36 / 16)
            supported = (cfg["kh"] == 3) & (cfg["stride_h"] == 1)
            d["kernels"] = ("winograd_nonfused::winogradForwardData4x4<float, float>;"
                            "winograd_nonfused::winogradForwardFilter4x4<float, float>;"
                            f"{kernel};winograd_nonfused::winogradForwardOutput4x4<float, float>")
            d["workspace_bytes"] = (36 * 4 * (cfg["c_in"] + cfg["c_out"]) * tiles).astype(int)
        else:
            gx, gy, gz, kb = np.ceil(npq / tm), np.ceil(cfg["c_out"] / tn), 1, crs
            helper = 0.0
            supported = np.ones(n, bool)
            d["kernels"] = kernel
            d["workspace_bytes"] = (npq * crs * 4).astype(int) if algo == "GEMM" else 0
        blocks = gx * gy * gz
        W = np.ceil(blocks / (bps * SMS))
        t = (W * (a * kb + b) + c + helper) * np.exp(rng.normal(0, noise, n))
        d["grid_x"], d["grid_y"], d["grid_z"] = gx, gy, gz
        d["block_x"], d["block_y"], d["block_z"] = 128, 1, 1
        d["time_ms"] = np.where(supported, t, np.nan)
        d["status"] = np.where(supported, "ok", "not_supported")
        d["config_row"] = np.arange(n)
        rows.append(d)
    out = pd.concat(rows, ignore_index=True)
    out = _heuristic(out, rng)
    out["config_key"] = out["config_row"].map(lambda i: f"{suite}:{seed}:{i}")
    out["uses"] = np.where(out["config_row"] % 2 == 0, "netA:2", "netA:1;netB:1")
    return _finish(out, suite)


def fft_calls(n: int, seed: int, sides, algo: str, kernel: str, batch, c_in, c_out) -> pd.DataFrame:
    """n of conv_records' calls (one algorithm's rows) restated as ungrouped 3x3 calls padded by
    1 of `algo` launching `kernel`, their batch, channels and square image side drawn from the
    choices given: a test sets their grids and times by the law it checks."""
    rng = np.random.default_rng(seed)
    base = conv_records(2 * n, seed=seed)
    base = base[base["algo"] == "IMPLICIT_GEMM"].head(n).reset_index(drop=True)
    hw = rng.choice(sides, len(base))
    return base.assign(algo=algo, kernel=kernel, batch=rng.choice(batch, len(base)),
                       c_in=rng.choice(c_in, len(base)), c_out=rng.choice(c_out, len(base)), h_in=hw, w_in=hw,
                       kh=3, kw=3, stride_h=1, stride_w=1, pad_h=1, pad_w=1, dil_h=1, dil_w=1, groups=1)


def _heuristic(df: pd.DataFrame, rng) -> pd.DataFrame:
    """cuDNN-like ranking: right most of the time, a fixed preference where it is not."""
    noisy = df["time_ms"] * np.exp(rng.normal(0, 0.25, len(df)))
    pref = df["algo"].map({"IMPLICIT_PRECOMP_GEMM": 0.9, "WINOGRAD_NONFUSED": 1.0, "IMPLICIT_GEMM": 1.3, "GEMM": 1.6})
    score = (noisy * pref).fillna(np.inf)
    df["heuristic_rank"] = score.groupby(df["config_row"]).rank(method="first").astype(int) - 1
    return df


def gemm_records(n: int = 600, seed: int = 1, op: str = "bmm", noise: float = 0.02) -> pd.DataFrame:
    """bmm rows of one sgemm variant (128x64 tiles, 2 blocks per SM)."""
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"op": op, "batch": rng.integers(1, 65, n), "m": rng.integers(16, 1025, n),
                      "n": rng.integers(16, 1025, n), "k": rng.integers(16, 1025, n)})
    d["kernel"] = "volta_sgemm_128x64_nn"
    d["grid_x"], d["grid_y"], d["grid_z"] = np.ceil(d["n"] / 128), np.ceil(d["m"] / 64), d["batch"]
    d["block_x"], d["block_y"], d["block_z"] = 128, 1, 1
    W = np.ceil(d["grid_x"] * d["grid_y"] * d["grid_z"] / (2 * SMS))
    d["time_ms"] = (W * (2e-4 * d["k"] + 2e-3) + 0.01) * np.exp(rng.normal(0, noise, n))
    d["algo"] = ""
    d["status"] = "ok"
    return _finish(d, "gemm_grid")


def _finish(df: pd.DataFrame, suite: str) -> pd.DataFrame:
    df = df.copy()
    df["gpu"], df["cc"], df["suite"], df["role"], df["dtype"], df["math"] = GPU, "7.5", suite, "main", "float32", "fma"
    df["source"] = f"synthetic_{suite}.csv"
    df["call_id"] = np.arange(len(df))
    return records.validate(df)


def typed_records(n: int = 900, seed: int = 2, noise: float = 0.01) -> pd.DataFrame:
    """bmm rows of one variant in SEER's three types, with the utilizations ncu would give.
    Each type has its own law (SEER's forms); a row's type is the law that takes longest
    there, so the time is continuous across the types' borders, as a real kernel's is."""
    d = gemm_records(n, seed=seed, noise=0.0)
    blocks = d["grid_x"] * d["grid_y"] * d["grid_z"]
    W = np.ceil(blocks / (2 * SMS))
    mb = 4e-6 * d["batch"] * (d["m"] * d["k"] + d["k"] * d["n"] + d["m"] * d["n"])
    read = 4e-6 * d["batch"] * (d["m"] * d["k"] + d["k"] * d["n"])
    write = 4e-6 * d["batch"] * d["m"] * d["n"]
    laws = np.column_stack([W * (3e-5 * d["k"] + 2e-3) + 0.01, 0.002 * mb + 0.02,
                            0.0005 * read + 0.001 * write + 1e-5 * W * d["k"] + 0.06])
    kind = np.array(["compute", "memory", "under"])[laws.argmax(axis=1)]
    rng = np.random.default_rng(seed)
    d["time_ms"] = laws.max(axis=1) * np.exp(rng.normal(0, noise, n))
    d["fp32_util_pct"] = np.where(kind == "compute", 92.0, 35.0)
    d["dram_util_pct"] = np.where(kind == "memory", 88.0, 30.0)
    return records.validate(d)


# variant keys of the direct kernel and of the explicit GEMM (the direct-kernel gate's tests)
DIRECT, EXPLICIT = "grouped_direct_010000_0_0", "explicit_convolve_sgemm_128"


def pointwise_convs(n: int, seed: int = 0) -> pd.DataFrame:
    """Ungrouped 1x1 forward convolutions of random sizes (the direct-kernel gate's tests)."""
    rng = np.random.default_rng(seed)
    h = rng.choice([7, 10, 14, 20, 28, 40, 56, 80, 112], n)
    k = rng.choice([16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512], n)
    return pd.DataFrame(
        {
            "op": "conv_fwd",
            "batch": rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256], n),
            "c_in": rng.choice([16, 32, 64, 128, 256, 512, 1024], n),
            "h_in": h,
            "w_in": h,
            "c_out": k,
            "kh": 1,
            "kw": 1,
            "stride_h": 1,
            "stride_w": 1,
            "pad_h": 0,
            "pad_w": 0,
            "dil_h": 1,
            "dil_w": 1,
            "groups": 1,
        }
    )


def runs_direct(df: pd.DataFrame) -> np.ndarray:
    """The rule of the synthetic library: the direct kernel below 128 output channels on large
    images, the explicit GEMM elsewhere (no single size decides it)."""
    return ((df["c_out"] < 128) & (df["h_in"] * df["w_in"] * df["batch"] > 4096)).to_numpy()


class Always:
    """A direct-kernel gate (seer.models.gate) that always answers "direct", from leaves of direct
    configurations only (or, with `mixed`, of both kinds)."""

    def __init__(self, mixed=False):
        self.mixed = mixed

    def predict(self, x):
        return np.ones(len(x), dtype=np.int64)

    def candidates(self, x):
        return np.tile([1, 0] if self.mixed else [1], (len(x), 1)).astype(np.int64)
