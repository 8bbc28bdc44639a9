"""What the framework launches, learnt from trace records (seer.models.launched)."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seer.data import configs, records, variants
from seer.data.prepare import prepare
from seer.fit import fit_all
from seer.models.launched import FASTEST, LAUNCHED, Launched, adopt_algorithms, fit_launched
from seer.predict.load import from_doc
from seer.workload.trace_records import read_trace_records

DATA = Path(__file__).parents[3] / "data" / "h100-sxm"


def _traced(keys, shapes, suite="trace"):
    rows = [dict(op="gemm", batch=b, m=m, n=n, k=k, key=key, role="main", suite=suite, source="t.json",
                 torch_version="2.11", cuda_version="13.0", cudnn_version="9.19.0")
            for key, (b, m, n, k) in zip(keys, shapes)]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_chooser_picks_the_kernel_seen_for_a_seen_shape():
    rec = _traced(["gemm:lt:55:a", "gemm:lt:55:a", "gemm:lt:20:b"], [(1, 2304, 4096, 768)] * 2 + [(96, 512, 512, 64)])
    (lc,) = fit_launched(rec)
    assert lc.versions == {"torch_version": "2.11", "cuda_version": "13.0", "cudnn_version": "9.19.0"}
    asked = pd.DataFrame(
        dict(op="gemm", batch=[96, 1, 1], m=[512, 2304, 2304 * 64], n=[512, 4096, 4096], k=[64, 768, 768])
    )
    keys = lc.choose(configs.log_config(asked, "gemm"), "gemm", radius=1.5)
    assert list(keys) == ["gemm:lt:20:b", "gemm:lt:55:a", ""]  # 64x the rows: too far to say
    back = Launched.from_dict(lc.to_dict())
    assert list(back.choose(configs.log_config(asked, "gemm"), "gemm", 1.5)) == list(keys)


def test_autotuned_traces_and_unfitted_variants_teach_nothing():
    rec = _traced(["gemm:lt:55:a"], [(1, 64, 64, 64)]).assign(autotuned=True)
    assert fit_launched(rec) == []
    assert fit_launched(_traced(["gemm:lt:55:a"], [(1, 64, 64, 64)]), fitted={"gemm:lt:55:other"}) == []
    assert fit_launched(_traced(["gemm:lt:55:a"], [(1, 64, 64, 64)], suite="seer_grid")) == []


def test_trace_gemms_adopt_the_harness_algorithm_of_their_variant():
    k64 = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"  # noqa: E501
    rec = pd.DataFrame(dict(op="gemm", kernel=[k64, k64, k64, "nvjet_unknown_1x1_1x1"], algo=["lt:55", "lt:55", "", ""],
                            suite=["gemm_layers", "gemm_layers", "trace", "trace"]))  # fmt: skip
    assert list(adopt_algorithms(rec)["algo"]) == ["lt:55", "lt:55", "lt:55", ""]


@pytest.fixture(scope="module")
def fits():
    trace = read_trace_records(DATA / "traces" / "gpt_b8.pt.trace.json.gz")
    rec = pd.concat([records.load(DATA / "gemm_layers.csv"), trace], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (doc,) = fit_all(rec, data_path="test", log=lambda _: None).values()
    return doc, from_doc(doc, Path("test")), prepare(trace)


def test_predictions_assume_the_launched_kernel_unless_autotuned(fits):
    doc, f, trace = fits
    assert doc["launched"] and doc["launched"][0]["sources"] == ["gpt_b8.pt.trace.json.gz"]
    seen = trace[(trace["op"] == "gemm") & (trace["role"] == "main")].drop_duplicates(["batch", "m", "n", "k"])
    asked = seen[["batch", "m", "n", "k"]].assign(op="gemm").reset_index(drop=True)
    table = f.predict_frame(asked)
    assert (table["assumed"] == LAUNCHED).all()
    got_variant = table["kernel"].str.rsplit(":", n=1).str[-1].to_numpy()
    assert list(got_variant) == [variants.classify(k).label for k in seen["kernel"]]
    tuned = f.predict_frame(asked, autotune=True)
    assert (tuned["assumed"] == FASTEST).all() and np.isfinite(tuned["time_ms"]).all()
    given = f.predict_frame(asked.assign(algo="lt:55"))
    assert (given["assumed"] == "given").all()
