"""Test-set-II: pick the fastest cuDNN convolution algorithm, scored against the measured best.

For every configuration the model predicts every algorithm it has fits for, picks the
fastest, and the pick is compared with the oracle (the fastest measured algorithm), with
cuDNN's own heuristic (the first algorithm of cudnnGetConvolution*Algorithm_v7) and with a
fixed default (IMPLICIT_PRECOMP_GEMM for the forward, ALGO_1 for each gradient: DEFAULTS).
Algorithms that are not supported for a config, or need more workspace than the limit, are no
choice for anybody (model, heuristic, default or oracle). The same report scores each
convolution direction: the forward on the test_set_ii suite, backward-data and backward-filter
on conv_bwd (the same layers' gradients). Metric names and definitions: docs/results.md (Metrics).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seer.data import paths, records
from seer.data.prepare import TENSOR_MATH, prepare
from seer.data.records import CONV_OPS
from seer.data.records.harness import UNVERIFIED
from seer.data.records.load import record_files
from seer.data.variants import CONV_DIRECTION, CONV_OP_ALGOS
from seer.errors import SeerError
from seer.evaluate.report import fits_for, fitted_gpus, pyplot, repeat_runs, write_out
from seer.hardware import gpus

SELECTION_KEYS = (
    "n",
    "top1",
    "within_5pct",
    "within_10pct",
    "slowdown_mean",
    "slowdown_p95",
    "slowdown_max",
    "total_time_ratio",
)
METHODS = ("model", "cudnn_heuristic", "fixed_default")
# each direction's fixed default, then where it is unsupported the always-there one: the forward's
# implicit GEMMs; the gradients' deterministic ALGO_1 (PyTorch's choice with deterministic
# algorithms), then ALGO_0
DEFAULTS = {
    "conv_fwd": ("IMPLICIT_PRECOMP_GEMM", "IMPLICIT_GEMM"),
    "conv_bwd_data": ("ALGO_1", "ALGO_0"),
    "conv_bwd_filter": ("ALGO_1", "ALGO_0"),
}
SCORED_SUITES = {"test_set_ii": ("conv_fwd",), "conv_bwd": ("conv_bwd_data", "conv_bwd_filter")}


def op_algos(op: str) -> list[str]:
    """A direction's algorithms in cuDNN's enum order: the measured table's columns."""
    return [CONV_OP_ALGOS[op][i] for i in sorted(CONV_OP_ALGOS[op])]


ALGOS = op_algos("conv_fwd")


def _algos(table: pd.DataFrame) -> list[str]:
    return op_algos(table.attrs.get("op", "conv_fwd"))


def selection_metrics(measured: np.ndarray, pick: np.ndarray) -> dict[str, float]:
    """measured: configs x algorithms (NaN = no choice); pick: chosen column per config."""
    n = len(pick)
    if n == 0:
        return {k: (0 if k == "n" else float("nan")) for k in SELECTION_KEYS}
    best = np.nanmin(measured, axis=1)
    oracle = np.nanargmin(measured, axis=1)
    t = measured[np.arange(n), pick]
    if np.isnan(t).any():
        raise SeerError("a pick fell on an algorithm that was not measured for its config")
    slow = t / best - 1.0
    return {
        "n": int(n),
        "top1": float(np.mean((pick == oracle) | (t == best))),
        "within_5pct": float(np.mean(t <= 1.05 * best)),
        "within_10pct": float(np.mean(t <= 1.10 * best)),
        "slowdown_mean": float(np.mean(slow)),
        "slowdown_p95": float(np.quantile(slow, 0.95)),
        "slowdown_max": float(np.max(slow)),
        "total_time_ratio": float(t.sum() / best.sum()),
    }


# ---------------------------------------------------------------- the measured table
def measured_table(rec: pd.DataFrame, workspace_limit: float | None = None, op: str = "conv_fwd") -> pd.DataFrame:
    """One row per (GPU, math, config) of direction `op` with each algorithm's measured time
    (NaN where not supported, failed or over the workspace limit) and cuDNN's heuristic rank.
    Layers with a call whose time is unverified (seer.data.records.harness.time_basis) are left
    out, and counted in `attrs["unverified_layers"]`: their oracle is unknown. `attrs["op"]`
    says the direction (its algorithms are the columns)."""
    algos = op_algos(op)
    conv = rec[(rec["op"] == op) & (rec["role"] == "main")].copy()
    if conv.empty:
        what = "Test-set-II" if op == "conv_fwd" else f"{CONV_DIRECTION[op]} gradients, suite conv_bwd"
        raise SeerError(f"no {op} measurements of every algorithm ({what}) in these records")
    if "config_key" not in conv:
        cfg = list(records.CONV_FIELDS)
        conv["config_key"] = conv[cfg].astype(str).agg(":".join, axis=1)
    unverified = conv["time_basis"].eq(UNVERIFIED) if "time_basis" in conv else pd.Series(False, index=conv.index)
    # a layer with a time that is no call's is not scored on that GPU
    layer = conv["gpu"].astype(str) + "/" + conv["math"].astype(str) + "/" + conv["config_key"].astype(str)
    dropped = set(layer[unverified])
    conv_all, conv = conv, conv[~layer.isin(list(dropped))]
    ok = conv["status"] == "ok"
    if workspace_limit is not None:
        ok &= conv["workspace_bytes"].astype("Float64").fillna(0) <= workspace_limit
    conv["t"] = conv["time_ms"].where(ok)
    keys = ["gpu", "math", "config_key"]
    wide = conv.pivot_table(index=keys, columns="algo", values="t", aggfunc="first")
    rank = conv.pivot_table(index=keys, columns="algo", values="heuristic_rank", aggfunc="first")
    wide = wide.reindex(columns=algos)
    rank = rank.reindex(columns=algos).add_prefix("rank:")
    first = conv.groupby(keys, sort=True).first()
    meta_cols = [c for c in (*records.CONV_FIELDS, "layer", "uses") if c in first]
    out = pd.concat([first[meta_cols], wide.add_prefix("t:"), rank], axis=1).reset_index()
    out = out[out[[f"t:{a}" for a in algos]].notna().any(axis=1)].reset_index(drop=True)
    out.attrs["unverified_layers"] = len(dropped)
    by_math = conv_all.loc[unverified, ["gpu", "math", "config_key"]].drop_duplicates()["math"]
    out.attrs["unverified_by_math"] = by_math.value_counts().to_dict()
    out.attrs["op"] = op
    return out


def _only(frame: pd.DataFrame, **want: str) -> pd.DataFrame:
    """The rows whose columns hold the wanted values; a column a frame lacks selects nothing out."""
    keep = np.ones(len(frame), dtype=bool)
    for col, value in want.items():
        if col in frame:
            keep &= (frame[col] == value).to_numpy()
    return frame[keep]


def selection_floor(path: Path, op: str = "conv_fwd", math: str = "fma") -> pd.DataFrame:
    """The floor under Test-set-II (of direction `op`, in `math`: the models' picks are scored on
    FMA layers, and a repeat of tensor-core layers has its own floor): per GPU, how often the
    fastest algorithm of a layer changes between two runs, and run 1's fastest algorithms scored
    as picks on run 2 (top-1, within 10%, mean slowdown): what a perfect predictor of one run
    reaches on the other."""
    rows = []
    suite = next(s for s, ops in SCORED_SUITES.items() if op in ops)
    for runs in repeat_runs(path):
        first, again = (_only(r, suite=suite, math=math) for r in runs)
        if not (first["op"] == op).any() or not (again["op"] == op).any():
            continue  # a repeat of other suites only (the grid, another direction)
        keys = ["gpu", "math", "config_key"]
        both = measured_table(first, op=op).merge(measured_table(again, op=op), on=keys, suffixes=("", "_2"))
        cols = [f"t:{a}" for a in op_algos(op)]
        m1, m2 = (both[[c + s for c in cols]].to_numpy(dtype=float) for s in ("", "_2"))
        avail = ~np.isnan(m1) & ~np.isnan(m2)  # an algorithm measured in both runs
        m1, m2 = np.where(avail, m1, np.nan), np.where(avail, m2, np.nan)
        keep = avail.any(axis=1)
        if not keep.any():
            continue
        m1, m2 = m1[keep], m2[keep]
        oracle1 = np.nanargmin(m1, axis=1)
        met = selection_metrics(m2, oracle1)
        rows.append(
            {
                "gpu": str(both["gpu"].iat[0]),
                "layers": int(keep.sum()),
                "fastest_changes": int((oracle1 != np.nanargmin(m2, axis=1)).sum()),
                "top1": met["top1"],
                "within_10pct": met["within_10pct"],
                "slowdown_mean": met["slowdown_mean"],
                "slowdown_max": met["slowdown_max"],
            }
        )
    return pd.DataFrame(rows)


def floor_line(f: pd.DataFrame) -> str:
    """One sentence with Test-set-II's noise floor (selection_floor) beside its figures ('' where
    no repeat run exists)."""
    if f.empty:
        return ""
    r = f.iloc[0]
    return (
        f"noise floor ({r['gpu']}, a second run of the same layers; python -m seer.evaluate --set noise): "
        f"the fastest algorithm changes on {r['fastest_changes']} of {r['layers']} layers; run 1's fastest "
        f"scored on run 2: top-1 {100 * r['top1']:.1f}%, within 10% {100 * r['within_10pct']:.1f}%, "
        f"mean slowdown {100 * r['slowdown_mean']:.2f}%"
    )


def method_lines(table: pd.DataFrame, pk: pd.DataFrame, op: str = "conv_fwd", indent: str = "  ") -> list[str]:
    """One line per method (METHODS) with its picks' top-1, within 10%, mean slowdown and total
    time against the oracle on a measured_table of direction `op`, for the scripts that score
    picks beside Test-set-II (tools/)."""
    meas = table[[f"t:{a}" for a in op_algos(op)]].to_numpy(float)
    lines = []
    for m in METHODS:
        r = selection_metrics(meas, pk[m].to_numpy())
        lines.append(
            f"{indent}{m:16s} n={r['n']} top-1 {100 * r['top1']:.1f}%, within 10% {100 * r['within_10pct']:.1f}%, "
            f"mean slowdown {100 * r['slowdown_mean']:.1f}%, total time {r['total_time_ratio']:.3f}x the oracle's"
        )
    return lines


def tensor_math(table: pd.DataFrame) -> np.ndarray:
    """The rows measured in a tensor-core math mode, which no model learns
    (seer.data.prepare.TENSOR_MATH)."""
    if "math" not in table:
        return np.zeros(len(table), dtype=bool)
    return table["math"].isin(TENSOR_MATH).to_numpy()


def unmodelled_first(pred: np.ndarray, heur: np.ndarray, no_rank: np.ndarray) -> np.ndarray:
    """Layers whose heuristic pick is an algorithm the model has no time for (`pred` NaN): there
    the heuristic's pick stands. The model cannot weigh what it has not learnt, and ranking only
    what it has, it passed over the heuristic's choice blind. On the H100's 97 backward-filter
    layers of Test-set-II (fitted on 536 of conv_bwd_grid's 5,652 configurations: too few
    WINOGRAD_NONFUSED calls to model it, the fastest on 26 layers) the picks went from top-1
    32.0%, within 10% 49.5%, mean slowdown 53.7% to 56.7% / 73.2% / 33.4% (the heuristic's:
    66.0% / 86.6% / 11.9%); no forward or backward-data layer of the H100 or H200 changed."""
    return ~no_rank & np.isnan(pred[np.arange(len(heur)), heur])


def picks(table: pd.DataFrame, fits_by_gpu: dict) -> tuple[pd.DataFrame, np.ndarray]:
    """Column index of each method's pick (and `model_inside`: whether the model's pick lies within
    the trust distance of its algorithm's training data), and the model's predicted time per
    algorithm. Where
    the fits have no models of the table's direction or math, the model falls back to the
    heuristic: an FMA model ranking TF32/BF16/FP16 calls picked within 10% of the fastest on
    67-80% of the H100's tensor-core Test-set-II layers, the heuristic on 92-97%. So it does
    where the heuristic's first choice is an algorithm the model has no time for on that layer
    (unmodelled_first)."""
    op, algos = table.attrs.get("op", "conv_fwd"), _algos(table)
    meas = table[[f"t:{a}" for a in algos]].to_numpy(dtype=float)
    avail = ~np.isnan(meas)
    pred = np.full(meas.shape, np.nan)
    inside = np.zeros(meas.shape, dtype=bool)  # within the trust distance of the algorithm's data
    order = np.full(meas.shape, np.inf)  # the model's ranking (extrapolations last)
    for name, idx in table.groupby("gpu").indices.items():
        f = fits_by_gpu[name]
        if not f.algorithms_of(op):
            continue
        ranked = f.rank_algorithms(table.iloc[idx].assign(op=op))
        for a in f.algorithms_of(op):
            j = algos.index(a)
            mine = ranked["algo"] == a
            pred[idx, j] = ranked.loc[mine, "time_ms"].to_numpy()
            inside[idx, j] = ranked.loc[mine, "fitted_range"].to_numpy(dtype=bool)
            # no time: no model of this kind of layer (a grouped one from ungrouped kernels)
            order[idx, j] = np.where(np.isnan(pred[idx, j]), np.inf, ranked.loc[mine, "rank"].to_numpy())
    cand = np.where(avail, order, np.inf)
    model = np.argmin(cand, axis=1)
    none = ~np.isfinite(cand.min(axis=1))  # nothing the model covers is available: fall back
    none |= tensor_math(table)  # the models learnt FMA times only, which no tensor-core call takes
    rank = table[[f"rank:{a}" for a in algos]].to_numpy(dtype=float)
    rank = np.where(avail & ~np.isnan(rank), rank, np.inf)
    heur = np.argmin(rank, axis=1)
    no_rank = ~np.isfinite(rank.min(axis=1))
    none |= unmodelled_first(pred, heur, no_rank)
    first, fallback = (algos.index(a) for a in DEFAULTS[op])
    default = np.where(avail[:, first], first, fallback)
    default = np.where(
        avail[np.arange(len(default)), default], default, np.nanargmin(np.where(avail, meas, np.inf), axis=1)
    )
    model = np.where(none, heur, model)
    heur = np.where(no_rank, default, heur)
    within = inside[np.arange(len(model)), model]
    return pd.DataFrame(
        {
            "model": model,
            "cudnn_heuristic": heur,
            "fixed_default": default,
            "model_fallback": none,
            "model_inside": within,
        }
    ), pred


def _networks(table: pd.DataFrame) -> pd.DataFrame:
    """(row, network, count) for every network that runs each config."""
    rows = []
    uses = table["uses"] if "uses" in table else pd.Series("", index=table.index)
    for i, u in enumerate(uses.fillna("")):
        for part in str(u).split(";"):
            if ":" in part:
                net, k = part.split(":")
                rows.append((i, net, int(k)))
    return pd.DataFrame(rows, columns=["row", "network", "count"])


def selection_tables(table: pd.DataFrame, pk: pd.DataFrame, pred: np.ndarray) -> dict[str, pd.DataFrame]:
    meas = table[[f"t:{a}" for a in _algos(table)]].to_numpy(dtype=float)

    def block(rows: np.ndarray) -> dict:
        out = {}
        for m in METHODS:
            r = selection_metrics(meas[rows], pk[m].to_numpy()[rows])
            out.update({f"{m}:{k}": v for k, v in r.items()})
        return out

    groups: dict[str, dict[str, dict]] = {"overall": {}, "by_gpu": {}, "by_batch": {}, "by_network": {}}
    groups["overall"]["all"] = block(np.arange(len(table)))
    for g, idx in table.groupby("gpu").indices.items():
        groups["by_gpu"][g] = block(idx)
    for (g, b), idx in table.groupby(["gpu", "batch"]).indices.items():
        groups["by_batch"][f"{g}/batch {b}"] = block(idx)
    nets = _networks(table)
    for (net), sub in nets.groupby("network"):
        for (g, b), idx in table.iloc[sub["row"]].groupby(["gpu", "batch"]).indices.items():
            groups["by_network"][f"{g}/{net}/batch {b}"] = block(sub["row"].to_numpy()[idx])
    tables = {k: pd.DataFrame.from_dict(v, orient="index") for k, v in groups.items() if v}
    # whole-network convolution time: predicted vs measured, for the model's picks
    n = np.arange(len(table))
    t_pick = meas[n, pk["model"].to_numpy()]
    p_pick = pred[n, pk["model"].to_numpy()]
    rows = []
    for net, sub in nets.groupby("network"):
        for (g, b), idx in table.iloc[sub["row"]].groupby(["gpu", "batch"]).indices.items():
            r = sub["row"].to_numpy()[idx]
            w = sub["count"].to_numpy()[idx]
            meas_sum = float(np.sum(w * t_pick[r]))
            pred_sum = float(np.nansum(w * p_pick[r]))
            best_sum = float(np.sum(w * np.nanmin(meas[r], axis=1)))
            rows.append(
                {
                    "gpu": g,
                    "network": net,
                    "batch": b,
                    "layers": int(w.sum()),
                    "measured_ms": meas_sum,
                    "predicted_ms": pred_sum,
                    "error": abs(pred_sum - meas_sum) / meas_sum,
                    "vs_oracle": meas_sum / best_sum - 1,
                }
            )
    if rows:
        tables["network_time"] = pd.DataFrame(rows)
    missed = misses(table, pk, pred)
    if not missed.empty:
        tables["misses"] = missed
    return tables


MISS = 0.10  # a pick this much slower than the fastest is a miss (within_10pct's complement)
_MISS_FIELDS = ("gpu", "layer", "batch", "c_in", "c_out", "h_in", "w_in", "kh", "kw", "stride_h", "pad_h", "groups")


def misses(table: pd.DataFrame, pk: pd.DataFrame, pred: np.ndarray) -> pd.DataFrame:
    """The layers whose model pick runs more than MISS slower than the fastest measured, worst
    first: each with the pick and the fastest, predicted and measured, and whether the pick's
    configuration lies beyond the trust distance of its algorithm's training data (a miss there
    is the data's to mend, one within it the model's)."""
    algos = np.asarray(_algos(table), dtype=object)
    meas = table[[f"t:{a}" for a in algos]].to_numpy(dtype=float)
    n = np.arange(len(table))
    pick = pk["model"].to_numpy()
    best = np.nanargmin(meas, axis=1)  # every layer has a measured algorithm (measured_table)
    slow = meas[n, pick] / meas[n, best] - 1
    rows = np.flatnonzero(slow > MISS)
    rows = rows[np.argsort(-slow[rows], kind="stable")]
    out = table.iloc[rows][[c for c in _MISS_FIELDS if c in table]].reset_index(drop=True)
    p, b = pick[rows], best[rows]
    out["slowdown"] = slow[rows]
    out["pick"], out["pick_pred_ms"], out["pick_ms"] = algos[p], pred[rows, p], meas[rows, p]
    out["fastest"], out["fastest_pred_ms"], out["fastest_ms"] = algos[b], pred[rows, b], meas[rows, b]
    out["beyond_trust"] = (
        ~pk["model_inside"].to_numpy(dtype=bool)[rows] & ~pk["model_fallback"].to_numpy(dtype=bool)[rows]
    )
    return out


def _show_misses(t: pd.DataFrame, most: int = 15) -> str:
    shown = t.head(most).copy()
    shown["slowdown"] = shown["slowdown"].map(lambda v: f"{100 * v:.0f}%")
    for c in ("pick_pred_ms", "pick_ms", "fastest_pred_ms", "fastest_ms"):
        shown[c] = shown[c].map(lambda v: f"{v:.3g}")
    text = shown.to_string(index=False)
    return text + (f"\n... and {len(t) - most} more (--out writes them all)" if len(t) > most else "")


def _show(t: pd.DataFrame) -> str:
    cols = [c for c in t.columns if c.split(":")[1] in ("n", "top1", "within_10pct", "slowdown_mean", "slowdown_max")]
    shown = t[cols].copy()
    for c in cols:
        if not c.endswith(":n"):
            shown[c] = shown[c].map(lambda v: f"{100 * v:.1f}%")
    shown.columns = [
        c.replace("cudnn_heuristic", "cudnn")
        .replace("fixed_default", "default")
        .replace("slowdown_", "slow_")
        .replace("within_10pct", "w10")
        for c in cols
    ]
    return shown.to_string()


def plot_slowdowns(table: pd.DataFrame, pk: pd.DataFrame, folder: Path, math: str = "fma") -> Path:
    plt = pyplot()
    op = table.attrs.get("op", "conv_fwd")
    where = [] if op == "conv_fwd" else [f"{CONV_DIRECTION[op]} gradient"]
    where += [f"{math.upper()} math"] if math in TENSOR_MATH else []
    meas = table[[f"t:{a}" for a in _algos(table)]].to_numpy(dtype=float)
    best = np.nanmin(meas, axis=1)
    n = np.arange(len(table))
    fig, ax = plt.subplots(figsize=(7, 4))
    for m, label in (("model", "seer's pick"), ("cudnn_heuristic", "cuDNN heuristic (Get_v7)")):
        slow = 100 * (meas[n, pk[m].to_numpy()] / best - 1)
        ax.plot(np.sort(slow)[::-1], label=label)
    ax.set(
        yscale="symlog",
        xlabel="configurations, sorted",
        ylabel="slowdown vs the fastest, %",
        title="Test-set-II: per-configuration slowdown of the pick" + (f" ({', '.join(where)})" if where else ""),
    )
    ax.legend()
    folder.mkdir(parents=True, exist_ok=True)
    name = ("" if op == "conv_fwd" else f"_{op}") + (f"_{math}" if math in TENSOR_MATH else "")
    out = folder / f"set2_slowdown{name}.png"
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# ---------------------------------------------------------------- the NeuSight check
def autotuner_agreement(rec: pd.DataFrame, fits_dir: Path, gpu: str | None = None) -> pd.DataFrame:
    """CPU-side check on NeuSight's conv data, where only the autotuner's pick was timed:
    how often the model's fastest algorithm is the autotuner's pick on held-out configs."""
    prep = prepare(rec[rec["op"] == "conv_fwd"])
    test = prep[prep["split"] == "test"]
    rows = []
    for name, g in test.groupby("gpu", sort=True):
        f = fits_for(gpus.lookup(name).slug, fits_dir, gpu)
        covered = g["algo"].isin(f.algorithms)
        best = f.best_algorithm(g.assign(op="conv_fwd")) if len(g) else np.array([])
        agree = best == g["algo"].to_numpy()
        rows.append(
            {
                "gpu": name,
                "n": len(g),
                "algorithms_fitted": len(f.algorithms),
                "pick_has_model": float(covered.mean()),
                "agreement": float(agree.mean()),
                "agreement_where_fitted": float(agree[covered.to_numpy()].mean()) if covered.any() else np.nan,
                "autotuner_picks": ", ".join(f"{a}:{c}" for a, c in g["algo"].value_counts().items()),
                "model_picks": ", ".join(f"{a}:{c}" for a, c in pd.Series(best).value_counts().items()),
            }
        )
    return pd.DataFrame(rows)


def run_set_two(args) -> int:
    data = args.data
    own: list[Path] = []
    if data is None:
        # the record files only: a collection's `<suite>.csv.superseded` blocks are no records
        own = [p for p in record_files(paths.OWN_DATA) if p.name.split(".")[0] in SCORED_SUITES]
    if data is not None or own:
        rec = pd.concat([records.load(p) for p in ([data] if data else own)], ignore_index=True)
        if "suite" in rec and rec["suite"].isin(list(SCORED_SUITES)).any():
            scored = [(rec["suite"] == suite) & rec["op"].isin(ops) for suite, ops in SCORED_SUITES.items()]
            rec = rec[np.logical_or.reduce(scored)]
        rec = gpus.rows_of(rec, args.gpu)
        if (rec["op"] == "conv_fwd").any() and rec["heuristic_rank"].notna().any():
            return _run_measured(rec, args)
    # no measurements of every algorithm: the CPU-side check on NeuSight
    if data is None:
        path = records.neusight_dir()
        if path is None:
            raise SeerError(
                "no Test-set-II measurements (they need a GPU: make collect) and no "
                "NeuSight data for the CPU-side check"
            )
        rec = records.load(path / "conv")
    else:
        path = data
    rec = rec[rec["op"] == "conv_fwd"]
    rec = gpus.rows_of(rec, args.gpu)
    if rec.empty:
        raise SeerError(
            f"no convolution rows{' of GPU ' + repr(args.gpu) if args.gpu else ''} in "
            f"{path}: Test-set-II scores the algorithm picked for each convolution"
        )
    print(
        "seer has no Test-set-II measurements of every algorithm yet (collecting them needs a GPU: "
        "make collect); showing the CPU-side check on NeuSight's conv data instead.\n"
    )
    t = autotuner_agreement(rec, Path(args.fits), args.gpu)
    print(
        "How often the model's fastest algorithm is the one cuDNN's autotuner (cudnnFind, "
        "PyTorch benchmark mode) picked, on the held-out configs of each GPU. Only the pick was "
        "timed, so this is agreement, not slowdown; an algorithm is fitted only where the autotuner "
        "chose it often enough to train on.\n"
    )
    shown = t.copy()
    for c in ("pick_has_model", "agreement", "agreement_where_fitted"):
        shown[c] = shown[c].map(lambda v: f"{100 * v:.1f}%")
    print(shown.drop(columns=["autotuner_picks", "model_picks"]).to_string(index=False))
    for _, r in t.iterrows():
        print(
            f"\n{r['gpu']}: autotuner picked {r['autotuner_picks']}\n"
            f"{' ' * len(r['gpu'])}  model picked {r['model_picks']}"
        )
    if args.out:
        payload = {
            "set": "II",
            "kind": "neusight autotuner agreement",
            "by_gpu": {
                r["gpu"]: {k: r[k] for k in ("n", "agreement", "agreement_where_fitted", "pick_has_model")}
                for _, r in t.iterrows()
            },
            "overall": {"n": int(t["n"].sum()), "agreement": float((t["agreement"] * t["n"]).sum() / t["n"].sum())},
        }
        write_out(Path(args.out), payload, {"agreement": t})
        print(f"\nwrote {args.out}")
    return 0


def _run_measured(rec: pd.DataFrame, args) -> int:
    rec = rec[rec["gpu"].isin(fitted_gpus(sorted(pd.unique(rec["gpu"])), Path(args.fits)))]
    ops = [op for op in CONV_OPS if (rec["op"] == op).any()]
    fits_by_gpu = {g: fits_for(gpus.lookup(g).slug, Path(args.fits), args.gpu) for g in pd.unique(rec["gpu"])}
    payload: dict[str, Any] = {"set": "II"}
    written: dict[str, pd.DataFrame] = {}
    for op in ops:
        whole = measured_table(rec, args.workspace_limit, op)
        # each math mode its own report: FMA first, the models' own; then the tensor-core modes
        for math, idx in sorted(whole.groupby("math").indices.items(), key=lambda kv: kv[0] in TENSOR_MATH):
            table = whole.iloc[idx].reset_index(drop=True)
            table.attrs = {**whole.attrs, "unverified_layers": whole.attrs["unverified_by_math"].get(math, 0)}
            pk, pred = picks(table, {g: fits_by_gpu[g] for g in pd.unique(table["gpu"])})
            tables = selection_tables(table, pk, pred)
            part = _report(op, str(math), table, pk, tables, args)
            name = op if math not in TENSOR_MATH else f"{op}_{math}"
            if name == "conv_fwd":  # the forward's FMA keys at the top level, as before the gradients
                payload.update(part)
            else:
                payload.setdefault("gradients" if op != "conv_fwd" else "tensor_math", {})[name] = part
            written.update({(k if name == "conv_fwd" else f"{name}_{k}"): t for k, t in tables.items()})
            if args.plots:
                print(f"wrote {plot_slowdowns(table, pk, Path(args.plots), str(math))}")
    if args.out:
        write_out(Path(args.out), payload, written)
        print(f"\nwrote {args.out}")
    return 0


def _report(op: str, math: str, table: pd.DataFrame, pk: pd.DataFrame, tables: dict[str, pd.DataFrame], args) -> dict:
    """Print one direction's Test-set-II report in one math mode; its JSON part."""
    what = "Test-set-II" if op == "conv_fwd" else f"Test-set-II's {CONV_DIRECTION[op]} gradients (conv_bwd)"
    tensor = math in TENSOR_MATH
    if tensor:
        what += f" in {math.upper()} math (tensor cores)"
    print(
        f"{what}: {len(table)} configurations, every algorithm measured; picks scored against "
        "the fastest measured algorithm (oracle)."
    )
    if table.attrs.get("unverified_layers"):
        print(
            f"{table.attrs['unverified_layers']} more layers not scored: a call's event time exceeds its kernels' "
            "span and their launch geometry cannot say whether cuDNN chunked the batch (time_basis unverified)."
        )
    data = Path(args.data) if args.data is not None else paths.OWN_DATA
    floor = pd.DataFrame() if tensor else selection_floor(data, op)
    if not floor.empty:
        print(floor_line(floor))
    if tensor:
        print(
            "seer's models learn FMA (FP32) times only (seer.data.prepare.TENSOR_MATH; no tensor-core "
            "grid is measured yet): the model column is cuDNN's heuristic."
        )
    elif pk["model_fallback"].all():
        print(
            f"The fits have no models of {op} (its training grid, conv_bwd_grid, is not measured yet): "
            "the model column is cuDNN's heuristic."
        )
    print()
    for name in ("overall", "by_gpu", "by_batch", "by_network"):
        if name in tables:
            print(f"{name}:\n{_show(tables[name])}\n")
    if "network_time" in tables and not pk["model_fallback"].all():
        nt = tables["network_time"].copy()
        for c in ("error", "vs_oracle"):
            nt[c] = nt[c].map(lambda v: f"{100 * v:.2f}%")
        what = "convolution" if op == "conv_fwd" else f"{CONV_DIRECTION[op]} gradient"
        print(f"Whole-network {what} time with the model's picks, predicted vs measured:\n")
        print(nt.to_string(index=False))
    if "misses" in tables and not pk["model_fallback"].all():
        m = tables["misses"]
        print(
            f"\nMisses: the {len(m)} layers whose pick runs more than {100 * MISS:.0f}% slower than the fastest, "
            f"worst first; {int(m['beyond_trust'].sum())} of them picked beyond the trust distance of the "
            "algorithm's training data (beyond_trust: the data's to mend, the others the model's):\n"
        )
        print(_show_misses(m))
    if pk["model_fallback"].any() and not pk["model_fallback"].all():
        print(
            f"\n{int(pk['model_fallback'].sum())} configs had no available algorithm with a model, or "
            "cuDNN's heuristic ranked first one the model has no time for: the heuristic's pick stands there."
        )
    print()
    part: dict[str, Any] = {"unverified_layers": int(table.attrs.get("unverified_layers", 0))}
    part["model_fallback"] = int(pk["model_fallback"].sum())
    if not floor.empty:
        part["noise_floor"] = floor.to_dict(orient="records")
    for name, t in tables.items():
        if name in ("network_time", "misses"):
            part[name] = t.to_dict(orient="records")
            continue
        part[name] = {
            idx: {m: {k: row[f"{m}:{k}"] for k in SELECTION_KEYS} for m in METHODS} for idx, row in t.iterrows()
        }
    part["overall"] = part["overall"]["all"]
    return part
