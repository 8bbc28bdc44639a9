"""python -m seer.evaluate: how good the predictions are.

--set I           Test-set-I: the held-out 30% of every variant (SEER's split), predicted from
                  the configuration alone (the fits choose the variant) and with the variant
                  known, per variant, algorithm family, op and overall.
--set II          Test-set-II: pick the fastest convolution algorithm (seer.selection).
--set analytical  the memory-bound predictors on NeuSight's element-wise, softmax and layer
                  norm data (seer.analytical).
--set noise       how far apart identical launches are in the data: the floor under any error.
--set models      whole models (torch.fx graphs with measured latencies, NeuSight's layout;
                  default ../shared/datasets/neusight-models): predicted vs measured whole-model
                  time, per-node error by op kind, beside NeuSight's own predictions where
                  they lie beside the graphs (seer.workload).
--set transfer    predict each GPU of the data (default: NeuSight's) from the fits of the OTHER
                  chips only (seer.transferred): leave-one-GPU-out on NeuSight's five GPUs.
--set traces      PyTorch profiler traces (default: data/*/traces and ../shared/datasets/traces):
                  kernel time linked to ops, step time replayed with measured and with
                  predicted kernel times (for GPUs seer has fits for).
Metrics are those of DESIGN.md (seer.metrics); --out writes them as JSON (fractions) or CSV.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import configs, fit, fitsfile, gpus, records
from .cli import data_path, run, writable_dir, writable_file
from .drift import position
from .errors import SeerError
from .metrics import ACCURACY_KEYS, accuracy, accuracy_table, format_table
from .report import fits_for, pyplot, write_out
from .selection import run_set_two

LEVELS = {"op": ["gpu", "op"], "algo": ["gpu", "op", "algo"], "variant": ["gpu", "op", "algo", "variant"]}


def test_set_one(rec: pd.DataFrame, fits_dir: Path, log=print) -> pd.DataFrame:
    """The Test-set-I rows with three predictions and the drift-corrected measurement:
    pred_config (variant chosen from the config), pred_variant (variant known)."""
    rec = rec.assign(position=position(rec)) if "call_id" in rec else rec
    prep = fit.prepare(rec[rec["op"].isin(fit.VARIANT_OPS)])
    test = prep[prep["split"] == "test"].copy()
    if test.empty:
        raise SeerError("no Test-set-I rows: the data has no convolution or GEMM measurements")
    parts = []
    for name, g in test.groupby("gpu", sort=True):
        slug = gpus.lookup(name).slug
        f = fits_for(slug, fits_dir)
        full = rec[rec["gpu"] == name]
        if f.meta.get("dataset", {}).get("content_sha256") != fit.content_hash(full):
            log(
                f"warning: the fits for {slug} were fitted on other data than this; "
                "Test-set-I rows may have been training rows there"
            )
        g = g.copy()
        g["pred_config"] = np.nan
        for op, rows in g.groupby("op").groups.items():
            sub = g.loc[rows]
            covered = sub["algo"].isin(f.algorithms) if op == "conv_fwd" else np.full(len(sub), op in f.ops)
            if covered.any():
                g.loc[sub.index[covered], "pred_config"] = f.predict(sub[covered])
        known = g["key"].isin(list(f.variants))
        g["pred_variant"] = np.nan
        if known.any():
            g.loc[known, "pred_variant"] = f.predict(g[known], variant=g.loc[known, "key"].to_numpy())
        factor = np.ones(len(g))
        for src, d in f.drift.items():
            m = (g["source"] == src).to_numpy()
            factor[m] = d.factor(g["position"].to_numpy()[m])
        g["time_dedrifted"] = g["time_ms"] / factor
        parts.append(g)
    return pd.concat(parts, ignore_index=True)


def set_one_tables(test: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Accuracy of config-only predictions at every level, plus known-variant and de-drifted."""
    ok = test["pred_config"].notna()
    tables = {lvl: accuracy_table(test[ok], "pred_config", "time_ms", by) for lvl, by in LEVELS.items()}
    kv = test["pred_variant"].notna()
    tables["op_known_variant"] = accuracy_table(test[kv], "pred_variant", "time_ms", LEVELS["op"])
    if (test["time_dedrifted"] != test["time_ms"]).any():
        tables["op_dedrifted"] = accuracy_table(test[ok], "pred_config", "time_dedrifted", LEVELS["op"])
    return tables


def _json_groups(table: pd.DataFrame, by: list[str]) -> dict:
    out = {}
    for _, r in table.iterrows():
        key = "overall" if r[by[0]] == "overall" else "/".join(str(r[b]) for b in by)
        out[key] = {k: (int(r[k]) if k == "n" else float(r[k])) for k in ACCURACY_KEYS}
    return out


def plots_one(test: pd.DataFrame, folder: Path) -> list[Path]:
    plt = pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    ok = test[test["pred_config"].notna()]
    gpus_ = sorted(pd.unique(ok["gpu"]))
    fig, axes = plt.subplots(1, len(gpus_), figsize=(4.2 * len(gpus_), 4.2), squeeze=False)
    for ax, name in zip(axes[0], gpus_):
        g = ok[ok["gpu"] == name]
        for op, h in g.groupby("op"):
            ax.scatter(h["time_ms"], h["pred_config"], s=3, alpha=0.4, label=op)
        lo, hi = g["time_ms"].min() / 1.5, g["time_ms"].max() * 1.5
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.set(
            xscale="log",
            yscale="log",
            xlim=(lo, hi),
            ylim=(lo, hi),
            xlabel="measured ms",
            ylabel="predicted ms",
            title=name,
        )
        ax.legend(markerscale=4, fontsize=8)
    fig.tight_layout()
    out.append(folder / "set1_predicted_vs_measured.png")
    fig.savefig(out[-1], dpi=110)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    err = 100 * (ok["pred_config"] - ok["time_ms"]) / ok["time_ms"]
    for op, e in err.groupby(ok["op"]):
        ax.hist(e.clip(-60, 60), bins=np.linspace(-60, 60, 61), histtype="step", label=op)
    ax.set(
        xlabel="prediction error, % of measured (clipped at +-60)",
        ylabel="rows",
        title="Test-set-I: configuration-only predictions",
    )
    ax.legend()
    fig.tight_layout()
    out.append(folder / "set1_error_histogram.png")
    fig.savefig(out[-1], dpi=110)
    if "position" in ok:  # is the measurement order (GPU state) behind the errors?
        keys = sorted({(g, o) for g, o in zip(ok["gpu"], ok["op"])})
        fig, axes = plt.subplots(len(keys), 1, figsize=(8, 1.9 * len(keys)), squeeze=False, sharex=True)
        for ax, (name, op) in zip(axes[:, 0], keys):
            h = ok[(ok["gpu"] == name) & (ok["op"] == op)].sort_values("position")
            r = h["time_ms"] / h["pred_config"]
            ax.scatter(h["position"], r, s=1, alpha=0.3)
            ax.plot(h["position"], r.rolling(51, center=True, min_periods=10).median(), "r", lw=1)
            ax.set(ylim=(0.5, 2), yscale="log", ylabel="meas/pred")
            ax.set_title(f"{name} {op}", fontsize=8, loc="left")
        axes[-1, 0].set_xlabel("position of the row in its file (measurement order)")
        fig.tight_layout()
        out.append(folder / "set1_ratio_vs_measurement_order.png")
        fig.savefig(out[-1], dpi=90)
    plt.close("all")
    return out


def noise_table(rec: pd.DataFrame) -> pd.DataFrame:
    """How far apart the times of identical launches are: rows with the same kernel, grid and
    reduction length per block, which a per-variant model must predict alike. Their median
    deviation from their group's median is the floor under any model's error on this data."""
    rows = []
    prep = fit.prepare(rec[rec["op"].isin(fit.VARIANT_OPS)])
    prep["gk"] = configs.sizes(prep)["gk"]
    for (gpu, op), g in prep.groupby(["gpu", "op"], sort=True):
        key = ["kernel", "grid_x", "grid_y", "grid_z", "gk"]
        grp = g.groupby(key, dropna=False)["time_ms"]
        size = grp.transform("size")
        dev = (g["time_ms"] / grp.transform("median") - 1).abs()[size >= 2]
        rows.append(
            {
                "gpu": gpu,
                "op": op,
                "rows": len(g),
                "rows_in_repeats": int((size >= 2).sum()),
                "median_dev": dev.median() if len(dev) else np.nan,
                "p90_dev": dev.quantile(0.9) if len(dev) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def rerun_table(path: Path) -> pd.DataFrame:
    """Run-to-run noise: calls measured again in a later run (a GPU folder's `repeat/`, same
    suites, same harness) against the first measurement, per GPU and op. Deviation = |t2/t1 - 1|
    of each successful call's time (the GPU span of its kernels)."""
    path = records.data_path(path)
    folders = [path / "repeat"] if (path / "repeat").is_dir() else sorted(path.glob("*/repeat"))
    rows = []
    for rep in folders:
        first, again = (records.load(p) for p in (rep.parent, rep))
        calls = []
        for r in (first, again):
            ok = r[(r["status"] == "ok") & r["call_key"].notna()] if "call_key" in r else r.iloc[:0]
            calls.append(ok.drop_duplicates("call_key").set_index("call_key")[["gpu", "op", "time_ms"]])
        both = calls[0].join(calls[1][["time_ms"]].rename(columns={"time_ms": "again"}), how="inner")
        for (gpu, op), g in both.groupby(["gpu", "op"], sort=True):
            dev = (g["again"] / g["time_ms"] - 1).abs()
            rows.append(
                {
                    "gpu": gpu,
                    "op": op,
                    "calls": len(g),
                    "median_dev": dev.median(),
                    "p90_dev": dev.quantile(0.9),
                    "p99_dev": dev.quantile(0.99),
                }
            )
    return pd.DataFrame(rows)


def evaluation_records(args, why: str) -> tuple[Path, pd.DataFrame]:
    """The data path (--data, else the default data) and its records that models may score:
    Test-set-II rows left out, only --gpu's if given, and at least one row of a per-variant op
    (else one sentence on `why` it is needed)."""
    path = args.data if args.data is not None else fit.default_data()
    rec = fit.training_records(records.load(path, gpu=args.gpu))
    rec = gpus.rows_of(rec, args.gpu)
    if not rec["op"].isin(fit.VARIANT_OPS).any():
        of = f" of GPU {args.gpu!r}" if args.gpu else ""
        raise SeerError(f"no {', '.join(fit.VARIANT_OPS)} rows{of} in {path}: {why}")
    return path, rec


def run_noise(args) -> int:
    path, rec = evaluation_records(args, "the noise floor compares repeated launches of those kernels")
    t = noise_table(rec)
    print(
        f"Repeated launches in {path}: rows whose kernel, grid and reduction length per block are the "
        "same (a per-variant model predicts them alike); deviation of each from its group's median.\n"
    )
    print(format_table(t, percent=("median_dev", "p90_dev")))
    rerun = rerun_table(Path(path))
    if len(rerun):
        print(
            "\nRun to run: the same calls measured again by a later run (repeat/), deviation |t2/t1 - 1| "
            "of each call's time:\n"
        )
        print(format_table(rerun, percent=("median_dev", "p90_dev", "p99_dev")))
    if args.out:
        payload = {"set": "noise", "groups": t.to_dict(orient="records"), "rerun": rerun.to_dict(orient="records")}
        write_out(Path(args.out), payload, {"noise": t, "rerun": rerun})
        print(f"\nwrote {args.out}")
    return 0


def run_set_one(args) -> int:
    path, rec = evaluation_records(args, "Test-set-I scores the per-variant models of those kernels")
    test = test_set_one(rec, Path(args.fits))
    tables = set_one_tables(test)
    print(
        f"Test-set-I on {path}: the held-out 30% of every variant (SEER's split), {len(test)} rows.\n"
        "Predicted from the configuration alone (the fits choose the variant the library launches).\n"
    )
    print(format_table(tables["op"]))
    if args.by in ("algo", "variant"):
        print(f"\nper {args.by}:\n")
        print(format_table(tables[args.by]))
    print("\nWith the variant known (SEER's Test-set-I per variant):\n")
    print(format_table(tables["op_known_variant"]))
    if "op_dedrifted" in tables:
        print(
            "\nAgainst measurements with the collection's drift removed (seer.drift; the drift was "
            "fitted on training rows only):\n"
        )
        print(format_table(tables["op_dedrifted"]))
    missed = test["pred_config"].isna().sum()
    if missed:
        print(
            f"\n{missed} rows not predicted: their algorithm has no fitted model on that GPU "
            "(too few training rows, or 'unmodelled' in its fits file)."
        )
    if args.out:
        payload = {
            "set": "I",
            "data": str(path),
            "prediction": "configuration only",
            **{name: _json_groups(t, [c for c in t.columns if c not in ACCURACY_KEYS]) for name, t in tables.items()},
        }
        payload["overall"] = accuracy(test["pred_config"].dropna(), test.loc[test["pred_config"].notna(), "time_ms"])
        write_out(Path(args.out), payload, tables)
        print(f"\nwrote {args.out}")
    if args.plots:
        for p in plots_one(test, Path(args.plots)):
            print(f"wrote {p}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer.evaluate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    ap.add_argument(
        "--set",
        required=True,
        choices=["I", "II", "analytical", "noise", "models", "traces", "transfer"],
        type=lambda s: s if s in ("analytical", "noise", "models", "traces", "transfer") else s.upper(),
        help="which evaluation",
    )
    ap.add_argument(
        "--data", type=data_path, help="records to evaluate on (default: as python -m seer.fit; --set models: graphs)"
    )
    ap.add_argument("--fits", default=str(fitsfile.FITS_DIR), help="fits folder or file (default: %(default)s)")
    ap.add_argument("--gpu", help="only this GPU")
    ap.add_argument("--by", choices=["op", "algo", "variant"], default="op", help="detail of the table (set I)")
    ap.add_argument("--out", help="write the metrics to this .json or .csv")
    ap.add_argument("--plots", help="write PNG plots into this folder")
    ap.add_argument(
        "--workspace-limit",
        type=float,
        default=None,
        help="set II: exclude algorithms needing more workspace than this many bytes",
    )
    args = ap.parse_args(argv)
    return run(lambda: _main(args), "seer.evaluate")


def _main(args: argparse.Namespace) -> int:
    if args.out:  # output paths are checked before the work, not after it
        writable_file(args.out, "--out", (".json", ".csv"))
    if args.plots:
        writable_dir(args.plots, "--plots")
        pyplot()
    if args.set == "I":
        return run_set_one(args)
    if args.set == "II":
        return run_set_two(args)
    if args.set == "noise":
        return run_noise(args)
    if args.set == "models":
        from .workload.evaluation import run_set_models

        return run_set_models(args, lambda gpu: fits_for(gpus.lookup(gpu).slug, Path(args.fits)))
    if args.set == "transfer":
        from .transfer_eval import run_set_transfer

        return run_set_transfer(args)
    if args.set == "traces":
        from .workload.evaluation import run_set_traces

        return run_set_traces(args)
    from .analytical import report

    return report(args.data, args.out)


if __name__ == "__main__":
    sys.exit(main())
