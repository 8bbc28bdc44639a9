"""SEER's Excel workbooks (sheets train and test, SEER's 19 columns) as records, and back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.data.records.files import atomic_write, data_path
from seer.data.records.schema import conform, conv_output_hw, fill_launch
from seer.data.records.split import seer_split
from seer.data.records.validate import first_bad, numeric, validate
from seer.data.variants import CONV_ALGO_ID, CONV_ALGOS
from seer.errors import DataError, SeerError, UnknownGPUError
from seer.hardware import gpus

SEER_COLUMNS = (
    "batch_size",
    "in_chan",
    "in_wid",
    "out_chan",
    "out_wid",
    "ker_wid",
    "stride",
    "padding",
    "algo",
    "time",
    "inst_fp_32",
    "dram_read_transactions",
    "dram_write_transactions",
    "#block-max",
    "#block-launch",
    "#iter",
    "single_precision_fu_utilization",
    "dram_utilization",
    "type",
)
COUNTERS = SEER_COLUMNS[SEER_COLUMNS.index("inst_fp_32") : SEER_COLUMNS.index("type")]  # optional
_SEER_TYPES = {0: "compute", 1: "memory", 2: "under", -1: ""}
SECTOR = 32  # bytes per DRAM transaction (sector)


def read_seer_excel(path: str | Path, gpu: str | None = None) -> pd.DataFrame:
    """A SEER workbook (sheets train and test, the 19 columns of SEER's README) as records.

    SEER's files carry no GPU name: pass `gpu`, else rows say "unspecified". Utilizations are
    nvprof's 0-10 levels, stored here as percent (x10).
    """
    from openpyxl import load_workbook

    path = data_path(path, "an existing file")
    file = str(path)
    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several types for a non-workbook
        raise DataError(file, None, None, f"an .xlsx workbook ({type(exc).__name__})") from None
    frames = []
    try:
        for sheet in ("train", "test"):
            if sheet not in wb.sheetnames:
                raise DataError(file, None, None, f"a sheet named '{sheet}' (SEER format)")
            rows = list(wb[sheet].iter_rows(values_only=True))
            if not rows:
                raise DataError(file, 1, None, f"a header row in sheet '{sheet}'", where="row")
            header = [str(h).strip() if h is not None else "" for h in rows[0]]
            for j, want in enumerate(SEER_COLUMNS):
                got = header[j] if j < len(header) else None
                if got is None or got.lower() != want:
                    raise DataError(
                        f"{file} [{sheet}]",
                        1,
                        want,
                        f"column {j + 1} of SEER's format to be '{want}'",
                        got,
                        where="row",
                    )
            body = [r[: len(SEER_COLUMNS)] for r in rows[1:] if any(v is not None for v in r)]
            raw = pd.DataFrame(body, columns=list(SEER_COLUMNS), dtype=object)
            raw["_sheet"] = sheet
            raw["_line"] = np.arange(len(raw)) + 2
            frames.append(raw)
    finally:
        wb.close()
    raw = pd.concat(frames, ignore_index=True)
    return _seer_records(raw, file, gpu)


def _seer_records(raw: pd.DataFrame, file: str, gpu: str | None) -> pd.DataFrame:
    lines = raw["_line"].to_numpy()
    where_file = [f"{file} [{s}]" for s in raw["_sheet"]]
    pos = np.arange(len(raw))  # errors are raised at a position, then named by sheet and row

    def located(e: DataError) -> DataError:
        i = e.row or 0
        return DataError(where_file[i], int(lines[i]), e.column, e.expected, e.value, where="row")

    def num(c, **kw):
        try:
            return numeric(raw[c], file, c, pos, where="row", **kw)
        except DataError as e:
            raise located(e) from None

    ints = {
        c: num(c, integer=True, minimum=1)
        for c in ("batch_size", "in_chan", "in_wid", "out_chan", "out_wid", "ker_wid", "stride")
    }
    pad = num("padding", integer=True, minimum=0)
    algo_id = num("algo", integer=True, minimum=0)
    bad = ~algo_id.isin(list(CONV_ALGOS)).to_numpy()
    if (i := first_bad(bad)) is not None:
        raise DataError(
            where_file[i],
            int(lines[i]),
            "algo",
            "a cuDNN forward algorithm number 0-7",
            raw["algo"].iloc[i],
            where="row",
        )
    t = num("time", minimum=0)
    if (i := first_bad((t <= 0).to_numpy())) is not None:
        raise DataError(where_file[i], int(lines[i]), "time", "a time in ms > 0", raw["time"].iloc[i], where="row")
    opt = {c: num(c, required=False, minimum=0) for c in COUNTERS}
    typ = num("type", integer=True, required=False).fillna(-1)
    name = gpu or "unspecified"
    try:
        cc = gpus.lookup(name).cc if gpu else ""
    except UnknownGPUError:
        cc = ""
    df = pd.DataFrame(
        {
            "source": Path(file).name,
            "suite": "seer",
            "gpu": name,
            "cc": cc,
            "op": "conv_fwd",
            "call_id": np.arange(len(raw)),
            "batch": ints["batch_size"],
            "c_in": ints["in_chan"],
            "h_in": ints["in_wid"],
            "w_in": ints["in_wid"],
            "c_out": ints["out_chan"],
            "kh": ints["ker_wid"],
            "kw": ints["ker_wid"],
            "stride_h": ints["stride"],
            "stride_w": ints["stride"],
            "pad_h": pad,
            "pad_w": pad,
            "dil_h": 1,
            "dil_w": 1,
            "groups": 1,
            "dtype": "float32",
            "layout": "NCHW",
            "algo": algo_id.astype(int).map(CONV_ALGOS),
            "math": "fma",
            "role": "main",
            "time_ms": t,
            "fp32_inst": opt["inst_fp_32"],
            "dram_read_bytes": opt["dram_read_transactions"] * SECTOR,
            "dram_write_bytes": opt["dram_write_transactions"] * SECTOR,
            "b_max": opt["#block-max"],
            "blocks": opt["#block-launch"],
            "waves": opt["#iter"],
            "fp32_util_pct": opt["single_precision_fu_utilization"] * 10,
            "dram_util_pct": opt["dram_utilization"] * 10,
            "kernel_type": typ.astype(int).map(_SEER_TYPES).fillna(""),
            "status": "ok",
            "split": raw["_sheet"],
        }
    )
    out_w = ints["out_wid"].to_numpy(dtype=float)
    try:
        rec = validate(df, file, pos, where="row")
    except DataError as e:
        raise located(e) from None
    _, w = conv_output_hw(rec)
    if (i := first_bad(w != out_w)) is not None:
        raise DataError(
            where_file[i],
            int(lines[i]),
            "out_wid",
            f"the output width of the convolution ({int(w[i])})",
            raw["out_wid"].iloc[i],
            where="row",
        )
    return rec


def write_seer_excel(df: pd.DataFrame, path: str | Path) -> Path:
    """Write convolution records of one variant as a SEER workbook (sheets train, test).

    Rows go to the sheet their `split` names; rows without one are split by SEER's rule in
    their current order.
    """
    from openpyxl import Workbook

    rec = fill_launch(conform(df))  # #block-launch from the grid where only the grid was recorded
    if (rec["op"] != "conv_fwd").any():
        raise SeerError("SEER workbooks hold convolution rows only (op conv_fwd)")
    split = rec["split"].where(rec["split"] != "", pd.Series(seer_split(len(rec)), index=rec.index))
    _, w_out = conv_output_hw(rec)
    types = {v: k for k, v in _SEER_TYPES.items()}

    def cell(v):
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            return None
        return v

    def rows_of(part: pd.DataFrame, wo: np.ndarray):
        for r, o in zip(part.itertuples(index=False), wo):
            yield [
                int(r.batch),
                int(r.c_in),
                int(r.w_in),
                int(r.c_out),
                int(o),
                int(r.kw),
                int(r.stride_w),
                int(r.pad_w),
                CONV_ALGO_ID[r.algo],
                float(r.time_ms),
                cell(r.fp32_inst),
                cell(r.dram_read_bytes / SECTOR),
                cell(r.dram_write_bytes / SECTOR),
                cell(None if r.b_max is pd.NA else int(r.b_max)),
                cell(None if r.blocks is pd.NA else int(r.blocks)),
                cell(None if r.waves is pd.NA else int(r.waves)),
                cell(r.fp32_util_pct / 10),
                cell(r.dram_util_pct / 10),
                types.get(r.kernel_type, -1),
            ]

    def write(tmp: Path):
        wb = Workbook()
        wb.remove(wb.active)
        for sheet in ("train", "test"):
            ws = wb.create_sheet(sheet)
            ws.append(list(SEER_COLUMNS))
            sel = (split == sheet).to_numpy()
            for row in rows_of(rec[sel], w_out[sel]):
                ws.append(row)
        wb.save(tmp)

    return atomic_write(path, write)
