"""One GEMM under three names: each row goes to the GEMM op of the fits that times its product."""

import pandas as pd
import pytest

from seer.errors import SeerError
from seer.predict.gemms import folded, route, timed_as


def test_each_name_goes_to_the_op_that_times_the_same_product():
    assert timed_as("linear", 1, {"gemm"}) == "gemm"
    assert timed_as("bmm", 8, {"gemm", "bmm"}) == "bmm"
    assert timed_as("gemm", 1, {"bmm", "linear"}) == "linear"  # a 2-D GEMM: NeuSight's linear
    assert timed_as("gemm", 8, {"bmm", "linear"}) == "bmm"
    assert timed_as("bmm", 1, {"linear"}) == "linear"  # one product: any GEMM op times it
    assert timed_as("bmm", 8, {"linear"}) is None  # a batch of products is not one linear


def test_a_linear_layers_batch_is_folded_before_it_is_routed():
    df = pd.DataFrame(dict(op=["linear", "bmm", "softmax"], batch=[8, 8, 8], m=[64, 64, 64], n=[5, 5, 5], k=[7, 7, 7]))
    out = route(df, {"gemm", "softmax"}, "a GPU")
    assert list(out["op"]) == ["gemm", "gemm", "softmax"]
    # timed by cuBLAS's gemm: row-major m and n swapped (the linear's 512 rows are cuBLAS's n)
    assert list(out["n"]) == [512, 64, 5] and list(out["m"]) == [5, 5, 64] and list(out["batch"]) == [1, 8, 8]
    assert folded(df.iloc[1:]).equals(df.iloc[1:])  # nothing to fold: the same frame


def test_no_gemm_to_stand_for_a_row_is_one_sentence_naming_it():
    df = pd.DataFrame(dict(op=["bmm", "bmm"], batch=[1, 8], m=[4, 4], n=[4, 4], k=[4, 4]))
    with pytest.raises(
        SeerError, match=r"config row 1: the fits for X time no GEMM .* 'bmm' with batch 8 \(they cover linear\)"
    ):
        route(df, {"linear"}, "X")


def test_only_rows_timed_by_cublas_gemm_fits_are_swapped():
    df = pd.DataFrame(dict(op=["linear", "gemm"], batch=[1, 1], m=[4096, 10], n=[2304, 20], k=[768, 30]))
    out = route(df, {"gemm"}, "a GPU")
    assert list(out["m"]) == [2304, 10] and list(out["n"]) == [4096, 20]  # a gemm row is cuBLAS's already
    same = route(df.iloc[:1], {"linear"}, "a GPU")  # NeuSight's linear fits: row-major, as asked
    assert list(same["m"]) == [4096] and list(same["n"]) == [2304]
