"""Test-set-I: the held-out 30% of every variant (SEER's split), predicted from the configuration
alone (the fits choose the variant) and with the variant known, per variant, algorithm, op."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import configs
from seer.data.prepare import VARIANT_OPS, content_hash, prepare
from seer.data.records import CONV_OPS
from seer.errors import SeerError
from seer.evaluate.coverage import COVERAGE_KEYS, coverage_table
from seer.evaluate.metrics import ACCURACY_KEYS, INTERVAL_KEYS, accuracy, accuracy_table, format_table
from seer.evaluate.naming import NAMING_KEYS, naming_table
from seer.evaluate.noise import rerun_line, rerun_table
from seer.evaluate.report import evaluation_records, fits_for, fitted_gpus, write_out
from seer.hardware import gpus
from seer.models.drift import position

LEVELS = {"op": ["gpu", "op"], "algo": ["gpu", "op", "algo"], "variant": ["gpu", "op", "algo", "variant"]}


def test_set_one(rec: pd.DataFrame, fits_dir: Path, log=print, gpu: str | None = None) -> pd.DataFrame:
    """The Test-set-I rows with three predictions and the drift-corrected measurement:
    pred_config (variant chosen from the config; `named`: the variant key it is the time of),
    pred_variant (variant known). Each GPU's rows
    are scored by that GPU's fits only, unless `gpu` (--gpu) chose the data (report.check_pairing)."""
    rec = rec.assign(position=position(rec)) if "call_id" in rec else rec
    prep = prepare(rec[rec["op"].isin(VARIANT_OPS)])
    test = prep[prep["split"] == "test"].copy()
    if test.empty:
        raise SeerError("no Test-set-I rows: the data has no convolution or GEMM measurements")
    parts = []
    test = test[test["gpu"].isin(fitted_gpus(sorted(pd.unique(test["gpu"])), fits_dir, log))]
    for name, g in test.groupby("gpu", sort=True):
        slug = gpus.lookup(name).slug
        f = fits_for(slug, fits_dir, gpu, log)
        full = rec[rec["gpu"] == name]
        if f.meta.get("dataset", {}).get("content_sha256") != content_hash(full):
            log(
                f"warning: the fits for {slug} were fitted on other data than this; "
                "Test-set-I rows may have been training rows there"
            )
        g = g.copy()
        g["pred_config"] = np.nan
        g["named"] = ""
        g["beyond"] = False
        for op, rows in g.groupby("op").groups.items():
            sub = g.loc[rows]
            covered = _covered(f, op, sub)
            if not covered.all():
                log(
                    f"note: {int((~covered).sum())} Test-set-I rows of {op} on {slug} are not scored: "
                    f"their algorithms ({', '.join(sorted(pd.unique(sub['algo'][~covered].astype(str))))}) "
                    "have no models (too few training rows of any variant)"
                )
            unseen = covered & _unseen_shapes(f, op, sub)
            if unseen.any():
                log(
                    f"note: {int(unseen.sum())} Test-set-I rows of {op} on {slug} are not scored: their "
                    "algorithm ran their filter shape in no training row (seer.models.support refuses it)"
                )
                covered = covered & ~unseen
            if covered.any():
                got = f.predict_frame(sub[covered])
                g.loc[sub.index[covered], "pred_config"] = got["time_ms"].to_numpy()
                g.loc[sub.index[covered], "named"] = got["kernel"].to_numpy()
                g.loc[sub.index[covered], "beyond"] = got["extrapolated"].to_numpy()
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


def _covered(f, op: str, sub: pd.DataFrame) -> np.ndarray:
    """Rows whose configuration-only prediction exists: an algorithm with models of `op` (a
    tensor-core GEMM algorithm whose variants each had too few rows has none), or, for a GEMM
    without an algorithm, the op's default family."""
    if op not in f.ops:
        return np.zeros(len(sub), dtype=bool)
    algo = sub["algo"].fillna("").astype(str)
    default = (algo == "") & (op != "conv_fwd")
    return (algo.isin(f.algorithms_of(op)) | default).to_numpy()


def _unseen_shapes(f, op: str, sub: pd.DataFrame) -> np.ndarray:
    """Rows whose algorithm the fits say never ran their filter shape (a shape every row of
    which fell in Test-set-I): predict refuses them, so they are left out with a note."""
    vp = f.variant_predictor
    support = vp.support_of(op) if vp is not None and op in CONV_OPS else None
    out = np.zeros(len(sub), dtype=bool)
    if support is None:
        return out
    logcfg = configs.log_config(sub, op)
    algo = sub["algo"].fillna("").astype(str).to_numpy()
    for a in pd.unique(algo):
        rows = algo == a
        out[rows] = support.never_runs(str(a), logcfg[rows])
    return out


def set_one_tables(test: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Accuracy of config-only predictions at every level, plus known-variant and de-drifted."""
    ok = test["pred_config"].notna()
    # RMSPE's bootstrap interval per op and per algorithm, where it is read against targets
    tables = {
        lvl: accuracy_table(test[ok], "pred_config", "time_ms", by, interval=lvl in ("op", "algo"))
        for lvl, by in LEVELS.items()
    }
    tables["algo_naming"] = naming_table(test, LEVELS["algo"])
    tables["algo_coverage"] = coverage_table(test, LEVELS["algo"])
    kv = test["pred_variant"].notna()
    tables["op_known_variant"] = accuracy_table(test[kv], "pred_variant", "time_ms", LEVELS["op"])
    if (test["time_dedrifted"] != test["time_ms"]).any():
        tables["op_dedrifted"] = accuracy_table(test[ok], "pred_config", "time_dedrifted", LEVELS["op"])
    return tables


METRIC_KEYS = tuple(dict.fromkeys((*ACCURACY_KEYS, *INTERVAL_KEYS, *NAMING_KEYS, *COVERAGE_KEYS)))


def _json_groups(table: pd.DataFrame, by: list[str]) -> dict:
    out = {}
    for _, r in table.iterrows():
        key = "overall" if r[by[0]] == "overall" else "/".join(str(r[b]) for b in by)
        out[key] = {k: (int(r[k]) if k in ("n", "as_forward") else float(r[k])) for k in METRIC_KEYS if k in r}
    return out


def run_set_one(args) -> int:
    path, rec = evaluation_records(args, "Test-set-I scores the per-variant models of those kernels")
    test = test_set_one(rec, Path(args.fits), gpu=args.gpu)
    tables = set_one_tables(test)
    print(
        f"Test-set-I on {path}: the held-out 30% of every variant (SEER's split), {len(test)} rows.\n"
        "Predicted from the configuration alone (the fits choose the variant the library launches).\n"
    )
    print(format_table(tables["op"]))
    try:
        rerun = rerun_table(Path(path))  # read once, for the line and the JSON
    except SeerError:
        rerun = pd.DataFrame()
    scored = rerun["op"].isin(pd.unique(test["op"])) & rerun["gpu"].isin(pd.unique(test["gpu"])) if len(rerun) else None
    floor = rerun_line(rerun[scored] if scored is not None else rerun)  # the GPUs and ops scored here
    if floor:
        print(f"\n{floor}")
    if args.by in ("algo", "variant"):
        print(f"\nper {args.by}:\n")
        print(format_table(tables[args.by]))
    if args.by == "algo":
        print(
            "\nWhere the error lies, per algorithm: the variant named from the configuration, or its model "
            "(named_right: rows named the variant the library ran, of those not timed as the forward; "
            "wrong_err_share: the share of the squared error on the rows named wrong; rmspe_known: every row "
            "timed by the model of the variant it ran; seer.evaluate.naming):\n"
        )
        print(format_table(tables["algo_naming"], NAMING_KEYS[2:]))
        print(
            "\nWhere the rows lie, per algorithm: within the trust distance of the training configurations "
            "their prediction drew on, or beyond it (beyond: the share of the rows beyond; beyond_err_share: "
            "the share of the squared error on them; seer.evaluate.coverage):\n"
        )
        print(format_table(tables["algo_coverage"], COVERAGE_KEYS[1:]))
    print("\nWith the variant known (SEER's Test-set-I per variant):\n")
    print(format_table(tables["op_known_variant"]))
    if "op_dedrifted" in tables:
        print(
            "\nAgainst measurements with the collection's drift removed (seer.models.drift; the drift was "
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
            **{name: _json_groups(t, [c for c in t.columns if c not in METRIC_KEYS]) for name, t in tables.items()},
        }
        if floor:
            payload["noise_floor"] = rerun.to_dict(orient="records")
        payload["overall"] = accuracy(test["pred_config"].dropna(), test.loc[test["pred_config"].notna(), "time_ms"])
        write_out(Path(args.out), payload, tables)
        print(f"\nwrote {args.out}")
    if args.plots:
        from seer.evaluate.plots import set_one_plots

        for p in set_one_plots(test, Path(args.plots)):
            print(f"wrote {p}")
    return 0
