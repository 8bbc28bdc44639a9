"""seer.data.records on bad input: one sentence naming file, line and column; duplicates; the split."""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cudnn_bench import __main__ as M
from seer.data import records
from seer.errors import DataError, SeerError
from seer.fit import __main__ as fit_cli

import synthetic


def _csv(tmp_path: Path, name: str = "a.csv", n: int = 12) -> Path:
    return records.write_csv(synthetic.gemm_records(n), tmp_path / name)


# ---------------------------------------------------------------- one sentence per bad file
def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, text its error must contain)."""
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    folder = tmp_path / "folder"
    folder.mkdir()
    _csv(folder, "good.csv")
    (folder / "zero.csv").write_bytes(b"")
    gz = gzip.compress(_csv(tmp_path, "g.csv").read_bytes())
    corrupt = tmp_path / "bad.csv.gz"
    corrupt.write_bytes(gz[:20] + bytes(b ^ 0x5A for b in gz[20:200]) + gz[200:])
    big = _csv(tmp_path, "big.csv")
    raw = pd.read_csv(big, dtype=str, keep_default_na=False)
    raw.loc[3, "m"] = "1e30"
    raw.to_csv(big, index=False)
    slow = _csv(tmp_path, "slow.csv")
    raw = pd.read_csv(slow, dtype=str, keep_default_na=False)
    raw.loc[2, "time_ms"] = "1e30"  # would be trained on
    raw.to_csv(slow, index=False)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    return {
        "slow": (slow, "line 4, column 'time_ms': expected a time in ms > 0 and below 1e+07"),
        "empty": (empty, "empty file"),
        "folder": (folder, "zero.csv: expected a CSV file with a header row"),
        "gzip": (corrupt, "expected a readable file"),
        "huge": (big, "line 5, column 'm': expected a whole number below 2**63 (the value is out of range)"),
        "fifo": (fifo, "not a FIFO"),
    }


def test_bad_files_end_in_one_sentence(tmp_path, capsys):
    for name, (path, text) in _bad_files(tmp_path).items():
        with pytest.raises(DataError) as e:
            records.load(path)
        msg = str(e.value)
        assert text in msg and "\n" not in msg and str(path) in msg, (name, msg)
        for cmd in (["report", str(path)], ["export-excel", str(path), "--out", str(tmp_path / "xl")]):
            assert M.main(cmd) == 2, (name, cmd)
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and text in err, (name, cmd, err)


@pytest.mark.parametrize("empty", ["", "  ", None])
def test_no_data_path_is_refused(empty, capsys):
    with pytest.raises(SeerError, match="no data path given"):
        records.load(empty)
    if empty is not None:
        assert M.main(["report", empty]) == 2 and "no data path given" in capsys.readouterr().err


def test_a_huge_count_in_a_frame_names_the_column():
    df = synthetic.gemm_records(5)
    df["k"] = df["k"].astype("float64")
    df.loc[2, "k"] = 1e30
    with pytest.raises(DataError, match=r"line 4, column 'k': expected a whole number below 2\*\*63"):
        records.validate(df)


# ---------------------------------------------------------------- duplicates
def test_exact_duplicate_rows_are_dropped_with_a_warning(tmp_path, capsys):
    p = _csv(tmp_path, n=10)
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines + lines[3:5]))  # two rows appended again
    df = records.read_csv(p)
    assert len(df) == 10
    err = capsys.readouterr().err
    assert "2 row(s) repeat an earlier measurement exactly (first at line 12)" in err and str(p) in err
    folder = tmp_path / "f"
    folder.mkdir()
    _csv(folder, "x.csv", n=10)
    _csv(folder, "y.csv", n=10)  # the same measurements under another name
    assert len(records.load(folder)) == 10
    assert "10 row(s) repeat" in capsys.readouterr().err


def _old_split(df, by, order):
    """The split before configurations were ranked: row rank mod 10 (the reference)."""
    keys = df[order].astype("float64")
    idx = keys.sort_values(order, kind="stable").index
    grp = df.loc[idx, by].astype(str).agg("|".join, axis=1)
    rank = grp.groupby(grp, sort=False).cumcount().to_numpy()
    out = pd.Series("", index=df.index, dtype=object)
    out[idx] = np.where(rank % 10 < 7, "train", "test")
    return out.to_numpy()


def test_split_of_a_duplicate_free_frame_is_unchanged():
    rec = synthetic.gemm_records(400)
    assert not rec.duplicated(["m", "n", "k", "batch"]).any()
    rec["v"] = np.arange(len(rec)) % 3
    order = ["batch", "m", "n", "k", "time_ms"]
    assert (records.split_rows(rec, ["v"], order) == _old_split(rec, ["v"], order)).all()
    conv = synthetic.conv_records(60)
    assert (
        records.split_rows(conv, ["algo"])
        == records.split_rows(conv.sample(frac=1, random_state=2), ["algo"])[
            np.argsort(conv.sample(frac=1, random_state=2).index)
        ]
    ).all()


def test_split_never_puts_one_configuration_on_both_sides():
    rec = synthetic.gemm_records(200)
    again = rec.sample(80, random_state=1).assign(time_ms=lambda d: d["time_ms"] * 1.03)  # re-measured
    both = pd.concat([rec, again], ignore_index=True)
    side = pd.Series(records.split_rows(both, ["op"]), index=both.index)
    cfg = both[["batch", "m", "n", "k"]].astype(str).agg("|".join, axis=1)
    assert (side.groupby(cfg).nunique() == 1).all()
    train_cfgs = cfg[side == "train"].nunique() / cfg.nunique()
    assert 0.65 < train_cfgs < 0.75  # 7 of every 10 configurations, as SEER's rule


# ---------------------------------------------------------------- SEER workbooks
def _conv_variant(n=200):
    rec = synthetic.conv_records(n)
    return rec[(rec["algo"] == "IMPLICIT_GEMM") & (rec["status"] == "ok")].reset_index(drop=True)


def test_seer_can_fit_the_workbook_it_writes(tmp_path):
    rec = _conv_variant()
    assert rec["blocks"].isna().all() and rec["grid_x"].notna().all()  # harness rows: the grid only
    x = records.write_seer_excel(rec, tmp_path / "x.xlsx")
    back = records.read_seer_excel(x)
    grid = (rec["grid_x"] * rec["grid_y"] * rec["grid_z"]).to_numpy(dtype=float)
    assert (np.sort(back["blocks"].to_numpy(dtype=float)) == np.sort(grid)).all()  # sheets reorder rows
    assert fit_cli.main(["--data", str(x), "--gpu", "t4", "--out", str(tmp_path / "fits"), "--quiet"]) == 0
    assert (tmp_path / "fits" / "t4.json").is_file()


def test_a_workbook_without_block_counts_is_one_sentence(tmp_path, capsys):
    rec = _conv_variant()
    rec[["grid_x", "grid_y", "grid_z"]] = np.nan
    x = records.write_seer_excel(rec, tmp_path / "x.xlsx")
    assert fit_cli.main(["--data", str(x), "--gpu", "t4", "--out", str(tmp_path / "fits"), "--quiet"]) == 2
    assert "#block-launch" in capsys.readouterr().err
    assert not (tmp_path / "fits" / "t4.json").exists()


@pytest.mark.parametrize("col,value", [(1, "x"), (9, 0), (4, 99)])
def test_a_bad_cell_of_the_test_sheet_names_the_test_sheet(tmp_path, col, value):
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    row = [128, 16, 40, 16, 38, 3, 1, 0, 1, 2.5, 1e7, 1000, 200, 120, 500, 5, 8, 3, -1]
    for sheet in ("train", "test"):
        ws = wb.create_sheet(sheet)
        ws.append(list(records.SEER_COLUMNS))
        for _ in range(3):  # the train sheet has a row 3 too
            ws.append(row)
    wb["test"].cell(row=3, column=col + 1).value = value
    p = tmp_path / "bad.xlsx"
    wb.save(p)
    with pytest.raises(DataError) as e:
        records.read_seer_excel(p)
    assert e.value.file.endswith("[test]") and e.value.row == 3, str(e.value)
    assert e.value.column == records.SEER_COLUMNS[col]


# ---------------------------------------------------------------- numbers parsed once per distinct cell
def test_cells_parse_as_numbers_padded_blank_or_missing():
    from seer.data.records.validate import numeric

    raw = pd.Series(["3", " 5 ", "", "  ", None, "3", "2.5", "5"], dtype=object, name="m")
    lines = np.arange(len(raw)) + 2
    got = numeric(raw, "f.csv", "m", lines, required=False)
    assert got.name == "m" and got.dtype == "float64"
    np.testing.assert_array_equal(got.to_numpy(), [3, 5, np.nan, np.nan, np.nan, 3, 2.5, 5])
    whole = numeric(pd.Series(["7", "8", "7"]), "f.csv", "k", lines[:3], integer=True)
    assert whole.tolist() == [7, 8, 7]
    with pytest.raises(DataError, match=r"f.csv, line 4, column 'm': expected a number"):
        numeric(pd.Series(["1", "2", "x"]), "f.csv", "m", lines[:3])
    with pytest.raises(DataError, match=r"line 4, column 'm': expected a number, got ''"):
        numeric(raw.iloc[:3], "f.csv", "m", lines[:3])  # blank where required
    with pytest.raises(DataError, match=r"line 3, column 'k': expected a whole number"):
        numeric(pd.Series(["1", "2.5"]), "f.csv", "k", lines[:2], integer=True)
