"""Typed names: which kernel variant a model is for, and which features it uses.

Both are written to fits files as the strings they always were ("conv_fwd:GEMM:sgemm_128x64",
"waves+helpers+clock"); in code they are objects, built and split in this one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

DEFAULT_ALGO = "default"  # the algorithm part of a key where the op has no algorithms (GEMMs)


@dataclass(frozen=True, order=True)
class VariantKey:
    """One kernel variant: op, algorithm (empty for GEMMs) and the variant label."""

    op: str
    algo: str
    variant: str

    def __str__(self) -> str:
        return f"{self.family}:{self.variant}"

    @property
    def family(self) -> str:
        """'op:algo', the key of the chooser that picks among this family's variants."""
        return family_key(self.op, self.algo)

    @classmethod
    def parse(cls, text: str) -> VariantKey:
        op, algo, variant = text.split(":", 2)
        return cls(op, "" if algo == DEFAULT_ALGO else algo, variant)


def family_key(op: str, algo: str) -> str:
    return f"{op}:{algo or DEFAULT_ALGO}"


def family_column(rec: pd.DataFrame) -> pd.Series:
    """Each record's family_key (columns op, algo) as text: DataFrames group by it."""
    return rec["op"] + ":" + rec["algo"].where(rec["algo"] != "", DEFAULT_ALGO)


def key_column(rec: pd.DataFrame) -> pd.Series:
    """Each record's variant key as text (columns op, algo, variant): DataFrames group by it."""
    return family_column(rec) + ":" + rec["variant"]


BASES = ("seer", "waves", "types")
_FEATURE_SET = re.compile(r"(seer|waves|types)(\+helpers)?(\+clock)?")


@dataclass(frozen=True)
class FeatureSet:
    """The terms of a variant's model.

    base "seer": SEER's terms (waves x work per block, waves, compulsory bytes); "waves": those
    plus partial waves at SM granularity and tile traffic; "types": SEER's typed regimes, one
    form per measured kernel type. `helpers` adds the helper kernels' terms, `clock` the
    sustained-clock law (not with types)."""

    base: str
    helpers: bool = False
    clock: bool = False

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise ValueError(f"feature set base must be one of {', '.join(BASES)}, got {self.base!r}")

    def __str__(self) -> str:
        return self.base + "+helpers" * self.helpers + "+clock" * self.clock

    @property
    def typed(self) -> bool:
        return self.base == "types"

    @property
    def seer_terms(self) -> bool:
        """SEER's compute and memory terms (seer, types) rather than the richer wave terms."""
        return self.base in ("seer", "types")

    @classmethod
    def parse(cls, text: str) -> FeatureSet:
        m = _FEATURE_SET.fullmatch(text)
        if m is None:
            raise ValueError(f"not a feature set: {text!r} (seer, waves or types, optionally +helpers, +clock)")
        return cls(m[1], bool(m[2]), bool(m[3]))

    @staticmethod
    def candidates(helpers: bool = True, types: bool = False) -> list[FeatureSet]:
        """The candidates, simplest first (near-ties go to the first); "+helpers" only where
        helper kernels ran, SEER's typed regimes only where utilizations were measured."""
        hs = (False, True)[: 1 + helpers]
        out = [FeatureSet(b, h, c) for b in ("seer", "waves") for h in hs for c in (False, True)]
        return out + ([FeatureSet("types", h) for h in hs] if types else [])
