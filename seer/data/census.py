"""Reading a GPU's census: cuDNN's workspace queries and heuristic order, no timing.

`python -m cudnn_bench census` writes `data/<gpu>/census/census-NNNNNN.csv.gz` (one row per
configuration, direction and algorithm: the configuration's sizes, `op`, `algo`, `math`,
`workspace_bytes`, `heuristic_rank`, `status`); seer.fit reads it here to label configurations
with the kernel cuDNN would launch (seer.models.gate). The records loader reads no subfolder, so
these rows never pass for timed calls.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DIMS: tuple[str, ...] = ("batch", "c_in", "h_in", "w_in", "c_out", "kh", "kw", "stride_h", "stride_w")
DIMS += ("pad_h", "pad_w", "dil_h", "dil_w", "groups")
COLUMNS = (*DIMS, "op", "algo", "math", "workspace_bytes", "heuristic_rank", "status", "gpu", "cudnn_version")
PARTS = "census-*.csv.gz"
FOLDER = "census"


def read(path: Path) -> pd.DataFrame:
    """A part file, or a folder of them, as one frame (empty, with the columns, where none)."""
    if path.is_dir():
        parts = sorted(path.glob(PARTS))
        return pd.concat([read(p) for p in parts], ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path, dtype={"workspace_bytes": "Int64", "heuristic_rank": "Int64"})


def folder_of(data: Path, slug: str) -> Path | None:
    """The census folder of GPU `slug` under a data folder (data/ or data/<slug>/), if any."""
    for f in (data / slug / FOLDER, data / FOLDER if data.name == slug else None):
        if f is not None and f.is_dir() and any(f.glob(PARTS)):
            return f
    return None
