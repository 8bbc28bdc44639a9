"""default_data: without any data, one sentence that says what is missing, where seer looked and
what to do, in a clone and in an installed copy alike."""

from __future__ import annotations

import pytest

from seer.data import paths, prepare, records
from seer.errors import SeerError


@pytest.mark.parametrize("checkout", [True, False])
def test_no_data_says_what_is_missing_where_and_what_to_do(tmp_path, monkeypatch, checkout):
    monkeypatch.setattr(paths, "OWN_DATA", tmp_path / "data")
    monkeypatch.setattr(paths, "in_checkout", lambda: checkout)
    monkeypatch.setattr(records, "neusight_dir", lambda: None)
    with pytest.raises(SeerError) as exc:
        prepare.default_data()
    msg = str(exc.value)
    assert "\n" not in msg and "no measurements" in msg and "--data" in msg and "SEER_NEUSIGHT" in msg
    if checkout:
        assert f"{tmp_path / 'data'}/<gpu>/" in msg and "make collect" in msg
    else:
        assert "installed, not a clone" in msg and "data/<gpu>/" in msg


WN = (
    "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(Params)",
    "void cudnn::winograd_nonfused::winogradForwardFilter4x4<float, float>(Params)",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "void cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>(Params)",
)
EXPLICIT = (
    "void cudnn::engines_precompiled::im2col4d_kernel<float, long>(cudnn::engines_precompiled::im2col4d_params)",
    "void explicit_convolve_sgemm<float, int, 128, 6, 7, 3, 3, 5, 0, false>(int, int, int, float const*)",
)


def _call(call_id, kernels, main, source="a.csv"):
    import pandas as pd

    return pd.DataFrame(
        {
            "source": source,
            "call_id": call_id,
            "kernel": list(kernels),
            "role": ["main" if i == main else "pre" if i < main else "post" for i in range(len(kernels))],
        }
    )


def test_a_winograd_call_is_keyed_by_its_transform_whichever_kernel_is_longest():
    import pandas as pd

    rec = pd.concat(
        [
            _call(1, WN, main=2),  # the GEMM longest
            _call(2, WN, main=3),  # the output transform longest
            _call(1, EXPLICIT, main=0, source="b.csv"),  # the same call id in another file, no engine kernel
            _call(3, EXPLICIT, main=1),
        ],
        ignore_index=True,
    )
    rows = prepare.call_rows(rec)
    kept = rec[rows]
    assert kept.groupby(["source", "call_id"]).size().eq(1).all() and len(kept) == 4
    assert kept["kernel"].str.contains("winogradForwardData").sum() == 2
    assert kept.loc[kept["source"] == "b.csv", "kernel"].iloc[0] == EXPLICIT[0]  # its own main, as marked
    assert kept.loc[(kept["source"] == "a.csv") & (kept["call_id"] == 3), "kernel"].iloc[0] == EXPLICIT[1]
    assert prepare.call_rows(rec.drop(columns="call_id")).equals(rec["role"] == "main")  # no calls: the main rows


def test_a_winograd_call_looping_over_groups_is_one_row():
    import pandas as pd

    rec = pd.concat([_call(1, WN * 3, main=2), _call(2, WN, main=0)], ignore_index=True)  # 3 groups, 3 transforms
    kept = rec[prepare.call_rows(rec)]
    assert list(kept.index) == [0, 12] and kept["kernel"].str.contains("winogradForwardData").all()


def test_a_grouped_call_that_launches_its_kernel_once_per_group_is_keyed_per_group():
    import pandas as pd

    from seer.data.keys import VariantKey, key_column

    loop = _call(1, ["transpose", "sgemm", "sgemm", "sgemm", "sgemm", "transpose"], main=1)  # 4 groups, 4 launches
    direct = _call(2, ["grouped_direct"], main=0)  # 4 groups, one launch
    many = _call(3, ["fft", "gemm"], main=0).assign(launches=[32, 32])  # 32 groups; rows of 32 launches each
    chunked = _call(4, ["sgemm", "sgemm"], main=0)  # ungrouped: two launches are no loop over groups
    rec = pd.concat([loop.assign(groups=4), direct.assign(groups=4), many.assign(groups=32), chunked.assign(groups=1)])
    rec = rec.assign(op="conv_fwd", algo="A").reset_index(drop=True)
    keying = prepare.call_rows(rec)
    launched = prepare.main_launches(rec, keying)
    flag = prepare.group_loop(rec, launched)
    assert list(launched[keying]) == [4, 1, 32, 2] and list(flag[keying]) == [True, False, True, False]
    kept = rec[keying].assign(group_loop=flag[keying], variant="v")
    keys = [VariantKey.parse(k) for k in key_column(kept)]
    assert [k.per_group for k in keys] == [True, False, True, False] and {k.variant for k in keys} == {"v"}


def test_fft_tilings_calls_of_one_dimensional_filters_are_variants_of_their_own():
    import numpy as np
    import pandas as pd

    gemm = "sm80_xmma_gemm_cf32cf32_f32f32_cf32_nt_n_tilesize64x64x8_stage3_warpsize2x2x1_ffma"
    rows = pd.DataFrame(
        {
            "op": ["conv_fwd"] * 5 + ["gemm", "conv_bwd_data", "conv_bwd_filter"],
            "algo": ["FFT_TILING"] * 4 + ["IMPLICIT_GEMM", "lt:1", "FFT_TILING", "FFT_TILING"],
            "kh": [3, 1, 7, 1, 1, np.nan, 1, 1],
            "kw": [3, 1, 1, 1, 1, np.nan, 1, 1],
            "variant": ["xmma_gemm_64x64x8_s3_nt"] * 3
            + ["fft1d_r2c_32", "implicit", "sgemm", "xmma_gemm_64x64x8_s3_nt", "xmma_gemm_64x64x8_s3_nt"],
            "kernel": [gemm] * 3 + ["fft1d_r2c_32", "implicit", "sgemm", gemm, gemm],
        }
    )
    got = list(prepare.one_d_variants(rows))
    assert got == [
        "xmma_gemm_64x64x8_s3_nt",  # 2-D tiles
        "xmma_gemm_64x64x8_s3_nt_1d",  # 1x1: pieces of the width
        "xmma_gemm_64x64x8_s3_nt_1d",  # 7x1: pieces of the height
        "fft1d_r2c_32",  # already named for its 1-D transform
        "implicit",
        "sgemm",
        "xmma_gemm_64x64x8_s3_nt_1d",  # the data gradient's pieces too (configs.FFT_TILED_OPS)
        "xmma_gemm_64x64x8_s3_nt",  # the filter gradient's calls stay as they are
    ]


def test_an_fft_call_that_runs_its_gemm_once_per_frequency_bin_is_a_variant_of_its_own():
    import pandas as pd

    gemm = "sm80_xmma_gemm_cf32cf32_f32f32_cf32_tn_n_tilesize32x32x8_stage3_warpsize2x2x1_ffma_execute_kernel"
    fft = ["void flip_filter<float, float>(float*)", "void fft2d_r2c_64x64<float>(float2*)"]
    c2r = "void fft2d_c2r_64x64<float, false>(float*)"
    per_bin = _call(1, [*fft, gemm, c2r], main=2).assign(launches=[1, 1, 2112, 1])  # once a bin
    batched = _call(2, [*fft, gemm, c2r], main=2)  # one launch over all bins
    grouped = _call(3, [*fft, gemm], main=2).assign(launches=4, groups=4)  # 4 launches: one a group
    other = _call(4, ["sgemm", "sgemm"], main=0)  # two launches of another algorithm's GEMM
    rec = pd.concat([per_bin, batched, grouped], ignore_index=True).assign(algo="FFT")
    rec = pd.concat([rec, other.assign(algo="GEMM")], ignore_index=True).assign(op="conv_fwd")
    rec["groups"] = rec["groups"].fillna(1)
    keying = prepare.call_rows(rec)
    launched = prepare.main_launches(rec, keying)
    looped = prepare.group_loop(rec, launched)
    flag = prepare.bin_loop(rec, launched, looped)[keying.to_numpy()]
    assert list(flag) == [True, False, False, False]
    kept = rec[keying].assign(bin_loop=flag, variant="xmma_gemm_32x32x8_s3_tn")
    got = list(prepare.per_bin_variants(kept["variant"], kept))
    assert got == ["xmma_gemm_32x32x8_s3_tn_per_bin"] + ["xmma_gemm_32x32x8_s3_tn"] * 3


def test_one_configuration_measured_on_two_gpus_is_two_calls():
    """The harness's call id hashes the configuration, and each GPU's folder has the same file
    names: an H100 and an H200 call of one configuration are two calls of one launch each."""
    import pandas as pd

    gemm = "sm80_xmma_gemm_cf32cf32_f32f32_cf32_tn_n_tilesize32x32x8_stage3_warpsize2x2x1_ffma_execute_kernel"
    fft = ["void fft2d_r2c_32x32<float>(float2*)", gemm, "void fft2d_c2r_32x32<float, false>(float*)"]
    direct = ["void cudnn::cnn::conv2d_grouped_direct_kernel<float>(float*)"]
    calls = [_call(7, fft, main=1).assign(algo="FFT", groups=1), _call(8, direct, main=0).assign(algo="GEMM", groups=2)]
    one = pd.concat(calls, ignore_index=True).assign(op="conv_fwd")
    rec = pd.concat([one.assign(gpu="NVIDIA H100 80GB HBM3"), one.assign(gpu="NVIDIA H200")], ignore_index=True)
    keying = prepare.call_rows(rec)
    launched = prepare.main_launches(rec, keying)
    assert list(launched[keying.to_numpy()]) == [1.0] * 4
    looped = prepare.group_loop(rec, launched)
    assert not looped.any()
    assert not prepare.bin_loop(rec, launched, looped).any()
