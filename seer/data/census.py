"""Reading a GPU's census: cuDNN's workspace queries, heuristic order and captured kernels, no timing.

`python -m cudnn_bench census` writes `data/<gpu>/census/census-NNNNNN.csv.gz` (one row per
configuration, direction and algorithm: the configuration's sizes, `op`, `algo`, `math`,
`workspace_bytes`, `heuristic_rank`, `status`, and where the call was captured into a CUDA graph
without running (cudnn_bench.capture), `capture` "ok" or why not, `launches` and `kernels`). A
part's kernel names are written once, in `kernels-NNNNNN.csv.gz` beside it, and its rows name them
by number (a name is 100-300 characters, repeated on most of a million rows). seer.fit reads the
census here to label configurations with the kernel cuDNN would launch (seer.models.gate). The
records loader reads no subfolder, so these rows never pass for timed calls.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from seer.errors import SeerError

DIMS: tuple[str, ...] = ("batch", "c_in", "h_in", "w_in", "c_out", "kh", "kw", "stride_h", "stride_w")
DIMS += ("pad_h", "pad_w", "dil_h", "dil_w", "groups")
CAPTURED = ("capture", "launches", "kernels")  # absent from parts written before captures
COLUMNS = (*DIMS, "op", "algo", "math", "workspace_bytes", "heuristic_rank", "status", "gpu", "cudnn_version")
COLUMNS += CAPTURED
PARTS = "census-*.csv.gz"
FOLDER = "census"


def legend_of(part: Path) -> Path:
    """The file of kernel names beside a part (census-000003.csv.gz: kernels-000003.csv.gz)."""
    return part.with_name("kernels-" + part.name.removeprefix("census-"))


def read(path: Path) -> pd.DataFrame:
    """A part file, or a folder of them, as one frame (empty, with the columns, where none);
    `kernels` a tuple of kernel names (in the order the call first launched them) where the call
    was captured, else None."""
    if path.is_dir():
        parts = sorted(path.glob(PARTS))
        return pd.concat([read(p) for p in parts], ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    df = pd.read_csv(
        path,
        dtype={"workspace_bytes": "Int64", "heuristic_rank": "Int64", "launches": "Int64", "kernels": "string"},
        keep_default_na=False,
        na_values={"workspace_bytes": [""], "heuristic_rank": [""], "launches": [""], "capture": [""]},
    )
    for col in CAPTURED:
        if col not in df:
            df[col] = pd.Series(pd.NA, index=df.index, dtype="Int64" if col == "launches" else object)
    legend = legend_of(path)
    names = pd.read_csv(legend, keep_default_na=False)["name"].tolist() if legend.exists() else []
    df["kernels"] = [_names(ids, names) for ids in df["kernels"]]
    return df


def captured(rows: pd.DataFrame, op: str, algo: str, math: str = "fma") -> pd.DataFrame:
    """The census's calls of one algorithm that it captured into a graph (none where its parts
    predate captures)."""
    if rows.empty or not {"capture", "launches"} <= set(rows.columns):
        return rows.iloc[:0]
    mine = (rows["op"] == op) & (rows["algo"] == algo) & (rows["status"] == "ok") & (rows["math"] == math)
    return rows[mine & (rows["capture"] == "ok")]


def without(rows: pd.DataFrame, held: pd.DataFrame) -> pd.DataFrame:
    """The census rows of configurations other than `held`'s (rows with the DIMS columns): a
    check that holds configurations out of a fit holds their census labels out too."""
    if rows.empty or held.empty:
        return rows
    out = pd.MultiIndex.from_frame(held[list(DIMS)].apply(pd.to_numeric).dropna().astype("int64"))
    mine = pd.MultiIndex.from_frame(rows[list(DIMS)].apply(pd.to_numeric).astype("int64"))
    return rows[~mine.isin(out)]


def _names(ids, names: list[str]) -> tuple[str, ...] | None:
    """A row's kernel numbers as names (None where the call was not captured)."""
    if not isinstance(ids, str) or ids == "":
        return None
    return tuple(names[int(i)] for i in ids.split())


def folder_of(data: Path, slug: str) -> Path | None:
    """The census folder GPU `slug` is labelled from, under a data folder (data/ or
    data/<slug>/), if any: its own, else that of another GPU of its architecture (shared)."""
    where = shared(data.parent if data.name == slug else data, slug)
    return where if where.is_dir() and any(where.glob(PARTS)) else None


def shared(root: Path, slug: str) -> Path:
    """The census folder of GPU `slug` under `root` (data/): its own where it has parts, else the
    first (by name) of a GPU of the same compute capability that has, else its own (new). One
    census serves an architecture: cuDNN 9.19 launched the same kernels and asked for the same
    workspace on the H100 and the H200 on all 29,095 configuration x algorithm pairs both ran
    (`python tools/direct_fallback.py data/h100-sxm data/h200`); and a whole census with its
    captured kernels would take about 10 MB (9 bytes a row written from the H200's timed calls,
    about 1.1 million rows) of a repository whose files travel to the GPU machine within 64 MiB."""
    from seer.hardware import gpus

    own = root / slug / FOLDER
    if any(own.glob(PARTS)):
        return own
    try:
        cc = gpus.lookup(slug).cc
    except SeerError:
        return own
    for other in sorted(p for p in root.glob(f"*/{FOLDER}") if p.parent.name != slug):
        try:
            same = gpus.lookup(other.parent.name).cc == cc
        except SeerError:
            continue
        if same and any(other.glob(PARTS)):
            return other
    return own
