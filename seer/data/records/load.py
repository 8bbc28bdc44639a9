"""Records from any supported source, told apart by their content."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from seer.data.records.files import data_path
from seer.data.records.harness import read_csv
from seer.data.records.neusight import read_neusight, read_neusight_csv
from seer.data.records.seer_excel import read_seer_excel
from seer.data.records.validate import drop_duplicates
from seer.errors import DataError


def load(path: str | Path, gpu: str | None = None) -> pd.DataFrame:
    """Read records from any supported source: a harness CSV (.csv, .csv.gz), a NeuSight CSV,
    a SEER .xlsx workbook, or a folder of any of these (see record_files)."""
    path = data_path(path)
    if path.is_dir():
        nested = any(path.glob("*/*.csv")) and not any(path.glob("*.csv*"))
        if nested and _is_neusight(next(path.glob("*/*.csv"))):
            return read_neusight(path)
        files = record_files(path)
        if not files:
            raise DataError(str(path), None, None, "data files (.csv, .csv.gz or .xlsx)")
        return drop_duplicates(pd.concat([load(f, gpu) for f in files], ignore_index=True), str(path))
    if path.suffix == ".xlsx":
        return read_seer_excel(path, gpu)
    if _is_neusight(path):
        return read_neusight_csv(path)
    return read_csv(path)


def record_files(folder: Path) -> list[Path]:
    """The record files of a folder: its own, else those of its GPU folders (data/ holds
    data/<gpu-slug>/). Deeper folders are not records: traces/, ncu/ reports, and repeat/, a
    second measurement of the same calls kept apart for the noise floor (evaluate --set noise)."""
    own = sorted(p for p in folder.glob("*") if p.is_file() and _is_record_file(p))
    if own:
        return own
    return sorted(p for p in folder.glob("*/*") if p.is_file() and _is_record_file(p))


def _is_record_file(path: Path) -> bool:
    return path.name.endswith((".csv", ".csv.gz", ".xlsx")) and not path.name.startswith(".")


def _is_neusight(path: Path) -> bool:
    if path.suffix != ".csv" or not path.is_file():
        return False
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline().startswith("OPName,")
