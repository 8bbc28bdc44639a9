"""The measurement record: one row per kernel launch, as docs/data.md describes it, and its loaders.

Every source (the project's harness CSV, NeuSight's CSVs, SEER's Excel workbooks) is turned
into one tidy DataFrame with the columns of `FIELDS`. Loaders validate as they go and raise
`DataError` naming the file, the row, the column and what was expected.

  schema      the fields, the ops and their configuration fields, `conform`
  validate    `validate` and `numeric`: every failure names file, line and column
  files       atomic writes, safe paths, warnings
  blocks      the harness store's block format (torn writes are recognised)
  harness     the harness's CSV     neusight  NeuSight's CSVs     seer_excel  SEER's workbooks
  split       SEER's train/test split
  load        any of these, told apart by content
"""

from seer.data.records.blocks import BLOCK_KEY, Blocks, is_block_file, read_raw, scan_blocks
from seer.data.records.files import atomic_write, data_path, read_bytes, read_json, read_text, warn
from seer.data.records.harness import kernel_time, read_csv, write_csv
from seer.data.records.load import load
from seer.data.records.neusight import NEUSIGHT_OPS, neusight_dir, read_neusight, read_neusight_csv
from seer.data.records.schema import (
    ALWAYS,
    COLUMNS,
    CONV_DEFAULTS,
    CONV_FIELDS,
    CONV_OPS,
    FIELD,
    FIELDS,
    GEMM_OPS,
    MEMORY_OPS,
    OPS,
    STATUSES,
    VARIANT_OPS,
    Field,
    conform,
    conv_output_hw,
    fill_launch,
)
from seer.data.records.seer_excel import SEER_COLUMNS, read_seer_excel, write_seer_excel
from seer.data.records.split import seer_split, split_rows
from seer.data.records.validate import drop_duplicates, numeric, validate

__all__ = [
    "ALWAYS",
    "BLOCK_KEY",
    "COLUMNS",
    "CONV_DEFAULTS",
    "CONV_FIELDS",
    "CONV_OPS",
    "FIELD",
    "FIELDS",
    "GEMM_OPS",
    "MEMORY_OPS",
    "NEUSIGHT_OPS",
    "OPS",
    "SEER_COLUMNS",
    "STATUSES",
    "VARIANT_OPS",
    "Blocks",
    "Field",
    "atomic_write",
    "conform",
    "conv_output_hw",
    "data_path",
    "drop_duplicates",
    "fill_launch",
    "is_block_file",
    "kernel_time",
    "load",
    "neusight_dir",
    "numeric",
    "read_bytes",
    "read_csv",
    "read_json",
    "read_neusight",
    "read_neusight_csv",
    "read_raw",
    "read_seer_excel",
    "read_text",
    "scan_blocks",
    "seer_split",
    "split_rows",
    "validate",
    "warn",
    "write_csv",
    "write_seer_excel",
]
