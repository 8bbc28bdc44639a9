"""Which kernel variant a record is of: op, algorithm family and variant label, typed.

Written to fits files and data frames as the strings they always were ("conv_fwd:GEMM:sgemm_128x64");
in code they are objects, built and split in this one place.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

DEFAULT_ALGO = "default"  # the algorithm part of a key where the op has no algorithms (GEMMs)


PER_GROUP = "/per_group"  # a key's ending where the variant's calls loop over a convolution's groups
PER_BIN = "_per_bin"  # a variant label's ending where an FFT call ran its GEMM once per frequency bin


@dataclass(frozen=True, order=True)
class VariantKey:
    """One kernel variant: op, algorithm (empty for GEMMs) and the variant label; `per_group`:
    its grouped calls, which run the kernel once per group (their own model, of one group)."""

    op: str
    algo: str
    variant: str
    per_group: bool = False

    def __str__(self) -> str:
        return f"{self.family}:{self.variant}{PER_GROUP if self.per_group else ''}"

    @property
    def family(self) -> str:
        """'op:algo', the key of the chooser that picks among this family's variants."""
        return family_key(self.op, self.algo)

    @property
    def per_bin(self) -> bool:
        """Whether the variant's calls launched their complex GEMM once per frequency bin
        (seer.data.prepare.per_bin_variants)."""
        return self.variant.endswith(PER_BIN)

    @classmethod
    def parse(cls, text: str) -> VariantKey:
        op, algo, variant = text.split(":", 2)
        per_group = variant.endswith(PER_GROUP)
        return cls(op, "" if algo == DEFAULT_ALGO else algo, variant.removesuffix(PER_GROUP), per_group)


def family_key(op: str, algo: str) -> str:
    return f"{op}:{algo or DEFAULT_ALGO}"


def family_column(rec: pd.DataFrame) -> pd.Series:
    """Each record's family_key (columns op, algo) as text: DataFrames group by it."""
    return rec["op"] + ":" + rec["algo"].where(rec["algo"] != "", DEFAULT_ALGO)


def key_column(rec: pd.DataFrame) -> pd.Series:
    """Each record's variant key as text (columns op, algo, variant, and group_loop where the
    data has it): DataFrames group by it."""
    key = family_column(rec) + ":" + rec["variant"]
    if "group_loop" in rec:
        key = key.where(~rec["group_loop"].fillna(False).astype(bool), key + PER_GROUP)
    return key
