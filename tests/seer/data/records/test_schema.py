import time

import numpy as np
import pandas as pd
import pytest

from seer.data import records
from seer.errors import DataError

NS_HEADER = (
    "OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,"
    "Blocks per SM,Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,Kernels,B,M,N,K\n"
)
NS_ROW = "bmm,0.035,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,0.65,0.325,1,1,13,64,1,1,cu121,;volta_sgemm_64x64_nn,13,27,15,29\n"


def _ns(tmp_path, body, header=NS_HEADER, name="Tesla_T4.csv"):
    p = tmp_path / "bmm" / name
    p.parent.mkdir(exist_ok=True)
    p.write_text(header + body)
    return p


def test_neusight_bmm_semantics(tmp_path):
    df = records.read_neusight_csv(_ns(tmp_path, NS_ROW))
    r = df.iloc[0]
    # [B, M, N] x [B, N, K]: output M x K, reduction over N
    assert (r.op, r.batch, r.m, r.n, r.k) == ("bmm", 13, 27, 29, 15)
    assert (r.gpu, r.cc, r.blocks, r.time_ms) == ("Tesla T4", "7.5", 13, 0.035)
    assert r.cudnn_version == "8.9.2" and r.cuda_version == "12.1"


@pytest.mark.parametrize(
    "row,column,expected",
    [
        (NS_ROW.replace(",13,27,15,29", ",13,abc,15,29"), "M", "whole number"),
        (NS_ROW.replace("0.035", "0"), "Latency", "> 0"),
        (NS_ROW.replace("0.035", "-1"), "Latency", "> 0"),
        (NS_ROW.replace("0.035", "nan"), "Latency", "> 0"),
        (NS_ROW.replace("bmm,", "matmul,"), "OPName", "one of"),
        (NS_ROW.replace("Tesla T4", "Tesla K80"), "Device", "in seer's table"),
        (NS_ROW.replace(",13,27,15,29", ",13,27.5,15,29"), "M", "whole number"),
    ],
)
def test_neusight_bad_values_name_file_row_column(tmp_path, row, column, expected):
    p = _ns(tmp_path, NS_ROW + row)
    with pytest.raises(DataError) as e:
        records.read_neusight_csv(p)
    err = e.value
    assert err.row == 3 and err.column == column and err.file == str(p)
    assert expected in str(err) and "line 3" in str(err)


def test_neusight_missing_column(tmp_path):
    p = _ns(tmp_path, NS_ROW.replace(",29\n", "\n"), header=NS_HEADER.replace(",K\n", "\n"))
    with pytest.raises(DataError, match="column 'K'"):
        records.read_neusight_csv(p)


def test_neusight_conv_unknown_algorithm(tmp_path):
    header = NS_HEADER.replace("B,M,N,K", "B,Input_Channel,Output_Channel,Kernel_Szie,Input_Size,Stride,Padding")
    row = "conv,1.0,Tesla T4,p2.1.0,8902,mystery_conv,1,1,1,1,1,64,1,1,cu121,;mystery_conv,8,16,16,3,32,1,1\n"
    p = _ns(tmp_path, row, header=header)
    with pytest.raises(DataError, match="column 'Kernels'.*cuDNN forward algorithm"):
        records.read_neusight_csv(p)


def test_load_all_neusight_fast(neusight_path):
    t0 = time.perf_counter()
    df = records.load(neusight_path)
    took = time.perf_counter() - t0
    assert took < 30, f"loading NeuSight took {took:.1f} s"
    assert len(df) > 190_000
    assert set(df["op"]) == {"conv_fwd", "bmm", "linear", "elementwise", "softmax", "layer_norm"}
    assert df["gpu"].nunique() == 6  # A100 40GB and A100 80GB PCIe count apart
    assert (df["time_ms"] > 0).all()
    lin = df[df["op"] == "linear"]
    assert (lin["batch"] == 1).all()


def test_linear_grid_matches_reduction_semantics(neusight):
    """The README's check: ampere_sgemm_128x64_tn on linear has grid (ceil(n/128), ceil(m/64), 1)."""
    lin = neusight[(neusight["op"] == "linear") & (neusight["kernel"] == "ampere_sgemm_128x64_tn")]
    assert len(lin) > 100
    assert (lin["grid_x"] == np.ceil(lin["n"] / 128)).all()
    assert (lin["grid_y"] == np.ceil(lin["m"] / 64)).all()


def _conv_records(n=20):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "gpu": "NVIDIA TITAN Xp",
            "op": "conv_fwd",
            "batch": 128,
            "c_in": rng.choice([3, 16, 64], n),
            "h_in": 40,
            "w_in": 40,
            "c_out": rng.choice([16, 128], n),
            "kh": 3,
            "kw": 3,
            "stride_h": 1,
            "stride_w": 1,
            "pad_h": 0,
            "pad_w": 0,
            "dil_h": 1,
            "dil_w": 1,
            "groups": 1,
            "algo": "IMPLICIT_PRECOMP_GEMM",
            "time_ms": rng.uniform(1, 10, n),
            "fp32_inst": rng.uniform(1e6, 1e8, n),
            "dram_read_bytes": 32.0 * rng.integers(1000, 10**6, n),
            "dram_write_bytes": 32.0 * 500,
            "b_max": 120,
            "blocks": rng.integers(100, 1000, n),
            "fp32_util_pct": 80.0,
            "dram_util_pct": 30.0,
            "kernel_type": "compute",
        }
    )
    df["waves"] = np.ceil(df["blocks"] / 120).astype(int)
    return records.validate(df)


def test_seer_excel_round_trip(tmp_path):
    df = _conv_records()
    p = records.write_seer_excel(df, tmp_path / "algo1_128x64.xlsx")
    back = records.read_seer_excel(p, gpu="NVIDIA TITAN Xp")
    assert len(back) == len(df)
    assert list(back["split"]).count("train") == 14  # index mod 10 < 7
    train = back[back["split"] == "train"].reset_index(drop=True)
    expect = df[records.seer_split(len(df)) == "train"].reset_index(drop=True)
    for col in ("batch", "c_in", "c_out", "w_in", "kh", "blocks", "b_max", "waves"):
        assert (train[col].astype(int) == expect[col].astype(int)).all(), col
    for col in ("time_ms", "fp32_inst", "dram_read_bytes", "fp32_util_pct"):
        assert np.allclose(train[col], expect[col]), col
    assert (train["algo"] == "IMPLICIT_PRECOMP_GEMM").all() and train["cc"].iloc[0] == "6.1"


def test_seer_excel_reads_seer_header_and_enum(tmp_path):
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for sheet in ("train", "test"):
        ws = wb.create_sheet(sheet)
        ws.append(list(records.SEER_COLUMNS))
        ws.append([128, 16, 40, 16, 38, 3, 1, 0, 7, 2.5, 1e7, 1000, 200, 120, 500, 5, 8, 3, -1])
    p = tmp_path / "algo7.xlsx"
    wb.save(p)
    df = records.read_seer_excel(p)
    assert list(df["algo"]) == ["WINOGRAD_NONFUSED"] * 2  # the real enum, not the README's table
    assert df["fp32_util_pct"].iloc[0] == 80 and df["dram_read_bytes"].iloc[0] == 32000


@pytest.mark.parametrize(
    "col,value,expected",
    [
        (8, 9, "algorithm number"),
        (9, 0, "> 0"),
        (1, "x", "whole number"),
        (4, 99, "output width"),
    ],
)
def test_seer_excel_bad_values(tmp_path, col, value, expected):
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for sheet in ("train", "test"):
        ws = wb.create_sheet(sheet)
        ws.append(list(records.SEER_COLUMNS))
        row = [128, 16, 40, 16, 38, 3, 1, 0, 1, 2.5, 1e7, 1000, 200, 120, 500, 5, 8, 3, -1]
        ws.append(row)
        if sheet == "test":
            row = list(row)
            row[col] = value
            ws.append(row)
    p = tmp_path / "bad.xlsx"
    wb.save(p)
    with pytest.raises(DataError) as e:
        records.read_seer_excel(p)
    assert "[test]" in e.value.file and e.value.row == 3
    assert e.value.column == records.SEER_COLUMNS[col] and expected in str(e.value)


def test_seer_excel_missing_sheet_and_column(tmp_path):
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.title = "train"
    wb.active.append(list(records.SEER_COLUMNS))
    p = tmp_path / "x.xlsx"
    wb.save(p)
    with pytest.raises(DataError, match="sheet named 'test'"):
        records.read_seer_excel(p)
    wb = Workbook()
    wb.remove(wb.active)
    for s in ("train", "test"):
        wb.create_sheet(s).append(list(records.SEER_COLUMNS[:10]))
    wb.save(p)
    with pytest.raises(DataError, match="column 'inst_fp_32'"):
        records.read_seer_excel(p)


def test_harness_csv_round_trip(tmp_path):
    df = _conv_records(5)
    p = records.write_csv(df, tmp_path / "a.csv.gz")
    back = records.read_csv(p)
    assert list(back.columns) == list(records.COLUMNS)
    assert np.allclose(back["time_ms"], df["time_ms"])
    assert (back["c_in"] == df["c_in"]).all()


@pytest.mark.parametrize(
    "col,value,expected",
    [
        ("time_ms", "-1", "> 0"),
        ("time_ms", "", "> 0"),
        ("c_in", "abc", "number"),
        ("op", "conv_bwd", "one of"),
        ("algo", "FASTEST", "cuDNN forward algorithm"),
        ("kh", "0", ">= 1"),
        ("status", "weird", "one of"),
    ],
)
def test_harness_csv_bad_values(tmp_path, col, value, expected):
    df = _conv_records(3)
    p = tmp_path / "a.csv"
    records.write_csv(df, p)
    raw = pd.read_csv(p, dtype=str, keep_default_na=False)
    raw.loc[1, col] = value
    raw.to_csv(p, index=False)
    with pytest.raises(DataError) as e:
        records.read_csv(p)
    assert e.value.row == 3 and e.value.column == col and expected in str(e.value)


def test_harness_csv_missing_column(tmp_path):
    p = tmp_path / "a.csv"
    records.write_csv(_conv_records(2), p)
    raw = pd.read_csv(p, dtype=str, keep_default_na=False).drop(columns=["c_out"])
    raw.to_csv(p, index=False)
    with pytest.raises(DataError, match="c_out"):
        records.read_csv(p)
    raw.drop(columns=["time_ms"]).to_csv(p, index=False)
    with pytest.raises(DataError, match="column 'time_ms'"):
        records.read_csv(p)


def test_failed_rows_need_no_time():
    df = _conv_records(2)
    df.loc[1, "time_ms"] = np.nan
    df.loc[1, "status"] = "not_supported"
    assert records.validate(df)["status"].tolist() == ["ok", "not_supported"]


def test_atomic_write_leaves_no_partial_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("old")

    def boom(tmp):
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        records.atomic_write(p, boom)
    assert p.read_text() == "old" and list(tmp_path.iterdir()) == [p]


def test_load_dispatch(tmp_path, neusight_path):
    assert records.load(neusight_path / "bmm" / "Tesla_T4.csv")["op"].eq("bmm").all()
    with pytest.raises(DataError, match="existing file"):
        records.load(tmp_path / "nope.csv")


def test_split_rows_is_seer_rule_within_groups():
    df = pd.DataFrame({"v": ["a"] * 10 + ["b"] * 5, "m": list(range(10, 0, -1)) + list(range(5)), "time_ms": 1.0})
    s = records.split_rows(df, ["v"], ["m"])
    a = df[df.v == "a"].assign(s=s[:10]).sort_values("m")
    assert list(a["s"]) == ["train"] * 7 + ["test"] * 3
    assert list(s[10:]) == ["train"] * 5
    shuffled = df.sample(frac=1, random_state=1)
    s2 = pd.Series(records.split_rows(shuffled, ["v"], ["m"]), index=shuffled.index)
    assert (s2.sort_index().to_numpy() == s).all()  # order of the input does not matter
