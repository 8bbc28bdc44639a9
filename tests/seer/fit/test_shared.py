import pandas as pd

from seer.fit.shared import shared_variant, with_shared

V = "grouped_direct_010000_1_3"


def _rec():
    rows = [  # (algo, variant, split, config)
        ("GEMM", V, "train", "x1"),
        ("GEMM", "explicit_convolve_sgemm", "train", "x2"),
        ("GEMM", V, "test", "x3"),
        ("IMPLICIT_GEMM", V, "train", "x1"),  # GEMM ran it there: its own row speaks
        ("IMPLICIT_GEMM", V, "train", "x2"),  # GEMM ran another kernel: learnt from
        ("IMPLICIT_PRECOMP_GEMM", V, "train", "x2"),  # the same configuration once
        ("IMPLICIT_GEMM", V, "train", "x3"),  # held out by GEMM: never
        ("IMPLICIT_GEMM", V, "test", "x4"),  # held out by its own algorithm
        ("IMPLICIT_GEMM", V + "/per_group", "train", "x5"),  # a loop over groups is another call
    ]
    return pd.DataFrame(
        [
            {"op": "conv_fwd", "algo": a, "key": f"conv_fwd:{a}:{v}", "split": s, "config_key": c, "math": "fma"}
            for a, v, s, c in rows
        ]
    )


def test_a_direct_kernel_learns_from_the_other_algorithms_where_its_own_ran_another():
    rec = _rec()
    shared = shared_variant(rec["key"])
    assert shared.tolist()[:2] == [f"conv_fwd:{V}", ""] and shared.iat[-1] == ""
    key = f"conv_fwd:GEMM:{V}"
    own = rec[(rec["key"] == key) & (rec["split"] == "train")]
    got = with_shared(rec, key, own, shared)
    assert got["config_key"].tolist() == ["x1", "x2"] and (got["key"] == key).all() and (got["algo"] == "GEMM").all()
    other = rec[rec["key"] == "conv_fwd:GEMM:explicit_convolve_sgemm"]
    assert with_shared(rec, other["key"].iat[0], other, shared) is other  # not a direct kernel
    assert shared_variant(pd.Series(["conv_bwd_filter:ALGO_1:wgrad_grouped_direct_01_", "gemm:lt:1:x"])).tolist() == [
        "conv_bwd_filter:wgrad_grouped_direct_01_",
        "",
    ]
