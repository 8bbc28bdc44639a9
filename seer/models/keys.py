"""Typed names: which features a variant's model uses (and, from seer.data.keys, which variant).

Written to fits files as the strings they always were ("waves+helpers+clock"); in code they are
objects, built and split in this one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seer.data.keys import DEFAULT_ALGO, VariantKey, family_column, family_key, key_column

BASES = ("seer", "waves", "types")
_FEATURE_SET = re.compile(r"(seer|waves|types)(\+helpers)?(\+clock)?(\+loops)?")


@dataclass(frozen=True)
class FeatureSet:
    """The terms of a variant's model.

    base "seer": SEER's terms (waves x work per block, waves, compulsory bytes); "waves": those
    plus partial waves at SM granularity and tile traffic; "types": SEER's typed regimes, one
    form per measured kernel type. `helpers` adds the helper kernels' terms, `clock` the
    sustained-clock law (not with types), `loops` counts a block's reduction over the outputs
    its grid does not reach (features.output_loops; not with types)."""

    base: str
    helpers: bool = False
    clock: bool = False
    loops: bool = False

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise ValueError(f"feature set base must be one of {', '.join(BASES)}, got {self.base!r}")

    def __str__(self) -> str:
        return self.base + "+helpers" * self.helpers + "+clock" * self.clock + "+loops" * self.loops

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
            raise ValueError(f"not a feature set: {text!r} (seer, waves or types, optionally +helpers, +clock, +loops)")
        return cls(m[1], bool(m[2]), bool(m[3]), bool(m[4]))

    @staticmethod
    def candidates(helpers: bool = True, types: bool = False, loops: bool = False) -> list[FeatureSet]:
        """The candidates, simplest first (near-ties go to the first); "+helpers" only where
        helper kernels ran, SEER's typed regimes only where utilizations were measured,
        "+loops" only where a block's loop over outputs varies over the training rows."""
        hs = (False, True)[: 1 + helpers]
        ls = (False, True)[: 1 + loops]
        out = [FeatureSet(b, h, c, lp) for lp in ls for b in ("seer", "waves") for h in hs for c in (False, True)]
        return out + ([FeatureSet("types", h) for h in hs] if types else [])


__all__ = ["DEFAULT_ALGO", "FeatureSet", "VariantKey", "family_column", "family_key", "key_column"]
