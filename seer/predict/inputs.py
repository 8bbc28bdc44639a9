"""The one entry check of every prediction: configs in (one as keywords, or a DataFrame), a
checked frame out, with defaults filled and misspelt keywords refused (scikit-learn's
`check_array` at the front door, not in every predictor)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TypeAlias

import pandas as pd

from seer.data.configs import LT_SPLITK, LT_TILE
from seer.data.records import CONV_DEFAULTS, CONV_OPS, GEMM_OPS, MEMORY_OPS, OPS
from seer.errors import SeerError

DEFAULTS = {**CONV_DEFAULTS, "dtype": "float32", "algo": ""}
# cuDNN's letters for a convolution's sizes, the likeliest "misspelling" of seer's names
CONV_LETTERS = {"N": "batch", "C": "c_in", "H": "h_in", "W": "w_in", "K": "c_out", "R": "kh", "S": "kw"}
# fields an op takes beyond its configuration (OPS): the function, dtype, algorithm, and the
# embedding kernel's rows per block (the DLRM model's warps per SM)
EXTRA = (
    {op: ("fn", "dtype") for op in MEMORY_OPS}
    | {
        "embedding_fwd": ("dtype", "rows_per_block"),
        "embedding_bwd_sgd": ("dtype", "rows_per_block"),
    }
    # a GEMM may give its cuBLASLt configuration (seer.models.lt_config) and operand layout
    | {op: ("dtype", "algo", "trans", LT_TILE, LT_SPLITK) for op in GEMM_OPS}
)

Configs: TypeAlias = "pd.DataFrame | Mapping | None"


def frame(configs: Configs, config: Mapping) -> tuple[pd.DataFrame, bool]:
    """(checked frame, whether one config was given): `configs` a DataFrame or a mapping, and
    `config` keywords added to it (a DataFrame keeps its own columns where both give one)."""
    if configs is None or isinstance(configs, Mapping):
        one = {**(dict(configs) if configs else {}), **config}
        if "op" not in one:
            raise SeerError("a config needs an 'op' (" + ", ".join(OPS) + ")")
        df = pd.DataFrame([one])
        single = True
    elif isinstance(configs, pd.DataFrame):
        df = configs.reset_index(drop=True)
        for k, v in config.items():
            if k not in df:
                df = df.assign(**{k: v})
        single = False
    else:
        raise SeerError(f"configs must be a DataFrame or a dict, not {type(configs).__name__}")
    keywords = list(df.columns) if single else list(config)  # a DataFrame may carry other columns
    if len(df) == 0:
        raise SeerError("no configs to predict")
    if "op" not in df:
        raise SeerError("configs need an 'op' column (" + ", ".join(OPS) + ")")
    missing = {k: v for k, v in DEFAULTS.items() if k not in df}
    if missing:
        df = df.assign(**missing)
    for k, v in DEFAULTS.items():
        if k not in missing and df[k].hasnans:
            df[k] = df[k].fillna(v)
    if df["op"].isin(CONV_OPS).any():
        for a, b in (("h_in", "w_in"), ("w_in", "h_in"), ("kh", "kw"), ("kw", "kh")):
            if a not in df and b in df:
                df[a] = df[b]
    unknown = sorted(set(map(str, pd.unique(df["op"]))) - set(OPS))
    if unknown:
        raise SeerError(f"unknown op {unknown[0]!r}; seer knows {', '.join(OPS)}")
    check_keywords(keywords, [str(op) for op in pd.unique(df["op"])])
    return df, single


def vocabulary(op: str) -> tuple[str, ...]:
    """The keywords a config of `op` may give."""
    return tuple(dict.fromkeys(("op", *OPS[op], *EXTRA.get(op, ("dtype", "algo")))))


def check_keywords(keys: Iterable, ops: list[str]) -> None:
    """Refuse a keyword no op of the configs takes: a misspelt one (K=7, stride=2) would
    otherwise be ignored or replaced by its default. Names the closest known keyword."""
    vocab = tuple(dict.fromkeys(k for op in ops for k in vocabulary(op)))
    for key in keys:
        if key in vocab:
            continue
        name = str(key)
        close = CONV_LETTERS.get(name) if set(ops) & set(CONV_OPS) else None
        close = close or next(iter(difflib.get_close_matches(name.lower(), vocab, n=1)), None)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise SeerError(f"unknown config keyword {key!r}{hint}; configs of {', '.join(ops)} take {', '.join(vocab)}")


def algorithm_list(algorithms: Iterable[str] | str | None) -> list[str] | None:
    """A list of algorithm names (one name is one algorithm, not its letters)."""
    if algorithms is None:
        return None
    return [algorithms] if isinstance(algorithms, str) else list(algorithms)
