"""The census's captured configurations labelled with the variant keys of the training calls
that launched the same kernels (seer.fit.census_keys)."""

import numpy as np
import pandas as pd

from seer.data import census
from seer.fit.census_keys import CHECK_MIN, MAJORITY_MIN, census_keys, signature_keys
from seer.models import chooser
from seer.models.candidates import Rule

OP, ALGO = "conv_fwd", "IMPLICIT_GEMM"
GEMM_KERNELS = ("implicit_convolve_sgemm_128", "nchw_to_nhwc")  # a call's kernel names (any order)
DIRECT_KERNELS = ("conv2d_grouped_direct_kernel",)
GEMM_KEY, DIRECT_KEY = f"{OP}:{ALGO}:implicit_convolve_sgemm_128", f"{OP}:{ALGO}:grouped_direct_010000_0_0"


def _configs(n: int, seed: int, groups: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    h = rng.choice([7, 10, 14, 20, 28, 40, 56], n)
    return pd.DataFrame(
        {
            "batch": rng.choice([1, 2, 4, 8, 16, 32], n),
            "c_in": rng.choice([64, 128, 256, 512], n),
            "h_in": h,
            "w_in": h,
            "c_out": rng.choice([16, 32, 64, 256, 512, 1024], n),
            "kh": 3,
            "kw": 3,
            "stride_h": 1,
            "stride_w": 1,
            "pad_h": 1,
            "pad_w": 1,
            "dil_h": 1,
            "dil_w": 1,
            "groups": groups,
        }
    ).drop_duplicates(ignore_index=True)


def _direct(df: pd.DataFrame) -> np.ndarray:
    """The synthetic library's rule: the direct kernel below 128 output channels."""
    return (df["c_out"] < 128).to_numpy()


def _timed(cfgs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the prepared training rows, one per call with its key; the timed records, a row per kernel)."""
    direct = _direct(cfgs)
    train = cfgs.assign(op=OP, algo=ALGO, gpu="H", source="conv_grid.csv", call_id=np.arange(len(cfgs)))
    train["call_id"] = train["call_id"].astype("Int64")
    train["key"] = np.where(direct, DIRECT_KEY, GEMM_KEY)
    rows = [
        {"op": OP, "algo": ALGO, "gpu": "H", "source": "conv_grid.csv", "call_id": i, "kernel": k}
        for i, d in enumerate(direct)
        for k in (DIRECT_KERNELS if d else GEMM_KERNELS)
    ]
    timed = pd.DataFrame(rows).astype({"call_id": "Int64"})
    return train, timed


def _census(cfgs: pd.DataFrame, kernels=None, launches=None) -> pd.DataFrame:
    direct = _direct(cfgs)
    if kernels is None:
        kernels = [DIRECT_KERNELS if d else GEMM_KERNELS[::-1] for d in direct]
    return cfgs.assign(
        op=OP,
        algo=ALGO,
        math="fma",
        status="ok",
        capture="ok",
        launches=[len(k) for k in kernels] if launches is None else launches,
        kernels=kernels,
    )


def test_captured_configurations_take_the_key_of_the_calls_that_launched_the_same_kernels():
    timed_cfgs = _configs(200, seed=0)
    train, timed = _timed(timed_cfgs)
    new = _configs(300, seed=1)
    new = new.merge(timed_cfgs, how="left", indicator=True).query("_merge == 'left_only'").drop(columns="_merge")
    rows = pd.concat([_census(timed_cfgs), _census(new)], ignore_index=True)
    got = census_keys(rows, OP, ALGO, train, timed, train)
    # the configurations the calls timed are labelled by their calls alone
    assert len(got) == len(new) > 0
    assert got.merge(timed_cfgs, on=list(census.DIMS)).empty
    want = np.where(_direct(got), DIRECT_KEY, GEMM_KEY)
    assert (got["key"].to_numpy() == want).all()
    # another algorithm's, an uncaptured or a tensor-core call labels nothing
    assert census_keys(rows.assign(algo="GEMM"), OP, ALGO, train, timed, train).empty
    assert census_keys(rows.assign(capture="too_large"), OP, ALGO, train, timed, train).empty
    assert census_keys(rows.assign(math="tf32"), OP, ALGO, train, timed, train).empty
    assert census_keys(None, OP, ALGO, train, timed, train).empty


def test_a_kernel_set_the_calls_ran_under_two_keys_labels_nothing():
    train, timed = _timed(_configs(200, seed=0))
    keys = signature_keys(train, timed, OP, ALGO)
    assert set(keys.values()) == {GEMM_KEY, DIRECT_KEY}
    # the GEMM's calls of large images keyed by another kernel (which ran longest, say)
    big = (train["h_in"] >= 28) & ~_direct(train)
    other = f"{OP}:{ALGO}:nchw_to_nhwc"
    assert set(signature_keys(train.assign(key=train["key"].where(~big, other)), timed, OP, ALGO).values()) == {
        DIRECT_KEY
    }


def test_a_kernel_set_nearly_always_under_one_key_labels_the_census_with_it():
    # two of the GEMM's ~100 calls keyed by another kernel: its kernel set is no longer one key's,
    # yet dropping it would leave the tree the direct kernel's labels alone
    timed_cfgs = _configs(200, seed=0)
    train, timed = _timed(timed_cfgs)
    odd = np.flatnonzero(~_direct(train))[:2]
    train.loc[odd, "key"] = f"{OP}:{ALGO}:nchw_to_nhwc"
    assert set(signature_keys(train, timed, OP, ALGO).values()) == {DIRECT_KEY}
    assert set(signature_keys(train, timed, OP, ALGO, MAJORITY_MIN).values()) == {GEMM_KEY, DIRECT_KEY}
    new = _census(_configs(300, seed=1).assign(c_in=3))  # none of them timed
    got = census_keys(pd.concat([_census(timed_cfgs), new]), OP, ALGO, train, timed, train)
    assert len(got) == len(new)
    assert (got["key"].to_numpy() == np.where(_direct(got), DIRECT_KEY, GEMM_KEY)).all()
    # a split nearer even labels nothing
    gemm = np.flatnonzero(~_direct(train))
    train.loc[gemm[: int(len(gemm) * (1 - MAJORITY_MIN)) + 2], "key"] = f"{OP}:{ALGO}:nchw_to_nhwc"
    got = census_keys(pd.concat([_census(timed_cfgs), new]), OP, ALGO, train, timed, train)
    assert set(got["key"]) == {DIRECT_KEY}


def test_an_algorithm_whose_captures_misname_the_timed_calls_is_not_labelled():
    timed_cfgs = _configs(200, seed=0)
    train, timed = _timed(timed_cfgs)
    new = _census(_configs(300, seed=1).assign(c_in=3))  # none of them timed
    swapped = [GEMM_KERNELS if d else DIRECT_KERNELS for d in _direct(timed_cfgs)]
    wrong = _census(timed_cfgs, kernels=swapped)
    assert census_keys(pd.concat([wrong, new]), OP, ALGO, train, timed, train).empty
    # the rule is checked on CHECK_MIN timed and captured configurations at least
    few = _census(timed_cfgs.iloc[: CHECK_MIN - 1])
    assert census_keys(pd.concat([few, new]), OP, ALGO, train, timed, train).empty
    enough = _census(timed_cfgs.iloc[:CHECK_MIN])
    assert len(census_keys(pd.concat([enough, new]), OP, ALGO, train, timed, train)) == len(new)


def test_a_grouped_capture_that_launched_once_a_group_takes_the_loops_key():
    cfgs = _configs(300, seed=0, groups=4)
    train, timed = _timed(cfgs)
    loop = ~_direct(train)  # the GEMM's calls loop over the 4 groups
    train["key"] = train["key"].where(~loop, GEMM_KEY + "/per_group")
    asked = _census(cfgs, launches=np.where(_direct(cfgs), 1, 4 * len(GEMM_KERNELS)))
    new = _census(
        _configs(300, seed=1, groups=4).assign(c_in=8), launches=np.where(_direct(_configs(300, 1, 4)), 1, 8)
    )
    got = census_keys(pd.concat([asked, new], ignore_index=True), OP, ALGO, train, timed, train)
    assert len(got) == len(new)
    assert (got["key"].to_numpy() == np.where(_direct(got), DIRECT_KEY, GEMM_KEY + "/per_group")).all()
    once = new.assign(launches=len(GEMM_KERNELS))  # launched once: no loop, a signature no call had
    assert set(census_keys(pd.concat([asked, once]), OP, ALGO, train, timed, train)["key"]) == {DIRECT_KEY}


def test_the_labels_grow_the_tree_not_the_nearest_rule():
    train, _ = _timed(_configs(60, seed=0))
    # the library's threshold lies between the timed calls' 64 and 256 output channels, at 80:
    # the labelled configurations of 96 ran the GEMM
    labelled = _configs(400, seed=3).assign(c_out=96, key=GEMM_KEY)
    rule = {False: Rule(True, 3)}
    plain = chooser.fit_chooser(train.assign(op=OP), OP, ALGO, train["key"], 1, rule)
    grown = chooser.fit_chooser(train.assign(op=OP), OP, ALGO, train["key"], 1, rule, labelled=labelled)
    assert len(grown.points) == len(plain.points)  # the nearest rule's and the trust distance's points
    q = _configs(50, seed=4).assign(op=OP, c_out=96)
    assert (plain.choose(q) == DIRECT_KEY).all()
    assert (grown.choose(q) == GEMM_KEY).all()


def test_a_check_that_holds_configurations_out_holds_their_census_rows_out():
    cfgs = _configs(100, seed=0)
    rows = _census(cfgs)
    held = cfgs.iloc[:30].astype({"batch": "Int64"})  # records' nullable integers
    kept = census.without(rows, held)
    assert len(kept) == len(rows) - 30
    assert kept.merge(held.astype({"batch": "int64"}), on=list(census.DIMS)).empty
    assert len(census.without(rows, held.iloc[:0])) == len(rows)
