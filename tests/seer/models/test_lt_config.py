"""seer.models.lt_config: a GEMM query's cuBLASLt configuration (tile, split-K) names its kernel
and the slices of its reduction; a query without it is as before."""

import json

import numpy as np
import pandas as pd
import pytest

import seer
from seer import fitsfile
from seer.data.configs import LAYOUT, LAYOUTS, ConfigBatch, gemm_algorithm_config
from seer.errors import SeerError
from seer.fitsfile.check import check
from seer.models.lt_config import TileVariants, fit_tile_variants, splits


def _gemm(**cols) -> pd.DataFrame:
    n = len(next(iter(cols.values())))
    return pd.DataFrame({"op": "gemm", "batch": 1, "m": 256, "n": 256, "k": 512, **cols}, index=range(n))


def test_a_gemm_batch_carries_the_configuration_its_rows_give():
    extra = ConfigBatch.of(_gemm(lt_tile=[15, np.nan], lt_splitk=[4, 1], trans=["tn", "nn"])).extra
    assert np.array_equal(extra["lt_tile"], [15, np.nan], equal_nan=True)
    assert list(extra["lt_splitk"]) == [4, 1]
    assert [LAYOUTS[int(c)] for c in extra[LAYOUT]] == ["tn", "nn"]
    assert ConfigBatch.of(_gemm(trans=["tn"])).extra == {}  # no configuration: nothing to read


def test_the_given_split_k_replaces_the_guess_only_where_given():
    guessed = np.array([2.0, 2.0, 2.0])
    extra = gemm_algorithm_config(_gemm(lt_splitk=[4, np.nan, 0]))
    assert list(splits(extra, guessed)) == [4.0, 2.0, 2.0]  # 0 and NaN: not a count
    assert splits({}, guessed) is guessed


def test_a_tile_and_layout_name_the_variant_their_training_calls_ran():
    tiles = TileVariants({(15, "tn"): "gemm:lt:5:a_tn", (15, "nn"): "gemm:lt:5:a_nn", (20, "tn"): "gemm:lt:5:b_tn"})
    extra = gemm_algorithm_config(_gemm(lt_tile=[15, 15, 20, 20, np.nan], trans=["tn", "nn", "tn", "nn", "tn"]))
    assert list(tiles.named(extra, 5)) == ["gemm:lt:5:a_tn", "gemm:lt:5:a_nn", "gemm:lt:5:b_tn", "", ""]
    assert list(tiles.named(gemm_algorithm_config(_gemm(lt_splitk=[2])), 1)) == [""]  # no tile given
    assert list(tiles.named({}, 2)) == ["", ""]  # no configuration at all
    assert TileVariants.from_dict(tiles.to_dict()) == tiles


def test_each_tile_is_fitted_to_the_variant_its_calls_ran_most():
    train = pd.DataFrame(
        {
            "op": "gemm",
            "algo": ["lt:5"] * 5 + ["lt:6"],
            "key": ["gemm:lt:5:a_tn"] * 2 + ["gemm:lt:5:c_tn", "gemm:lt:5:b_nn", "gemm:lt:5:x_tn", "gemm:lt:6:d_tn"],
            "lt_tile": [15, 15, 15, 20, 20, 15],
            "trans": ["tn", "tn", "tn", "nn", "tn", "tn"],
            "role": ["main"] * 4 + ["post", "main"],
        }
    )
    got = fit_tile_variants(train)
    assert got["gemm:lt:5"].variants == {(15, "tn"): "gemm:lt:5:a_tn", (20, "nn"): "gemm:lt:5:b_nn"}
    assert got["gemm:lt:6"].variants == {(15, "tn"): "gemm:lt:6:d_tn"}
    assert fit_tile_variants(train.drop(columns="lt_tile")) == {}


def test_a_damaged_tile_section_is_refused(tmp_path):
    doc = json.loads(fitsfile.dumps(fitsfile.read(fitsfile.resolve("h100-sxm"))))
    doc["gemm_tiles"]["gemm:lt:55"][0]["trans"] = "xy"
    with pytest.raises(SeerError, match=r'gemm_tiles\["gemm:lt:55"\]\[0\].trans must be one of'):
        check(doc, tmp_path / "h.json")


def test_the_bundled_h100_fits_time_a_gemm_as_the_configuration_it_gives():
    h = seer.load("h100-sxm")
    shape = dict(op="gemm", batch=1, m=4096, n=4096, k=1024, algo="lt:55", trans="tn")
    big, small = (h.predict_frame(**shape, lt_tile=t, lt_splitk=1) for t in (20, 11))  # 128x128, 32x32
    assert big["kernel"].iat[0].endswith("128x128x8_s3_tn") and small["kernel"].iat[0].endswith("32x32x8_s3_tn")
    assert small["time_ms"].iat[0] > 1.2 * big["time_ms"].iat[0]
    assert h.predict(**shape, lt_tile=20, lt_splitk=4) != h.predict(**shape, lt_tile=20, lt_splitk=1)
