"""Which template of cuDNN's direct kernel a configuration runs.

cuDNN's direct convolution kernels (conv2d_grouped_direct_kernel forward,
dgrad2d_grouped_direct_kernel for the data gradient) are C++ templates specialised for a count
of channels per group and a filter size; the variant key names both, last
(`grouped_direct_010000_<channels>_<filter>`, `dgrad_grouped_direct_01_<channels>_<filter>`), 0
for "any". On the H100's training rows every call of a specialised template ran that count of
channels per group (the forward's input channels, the data gradient's output channels: 1 is
depthwise) and that square filter, 1x1 or 3x3, and a configuration that has a specialised
template of its kind ran it (docs/results.md, "The direct kernel's template is the
configuration's"). The variant choosers learnt the direct kernel among the other variants, and
named a template the configuration cannot run: a depthwise 3x3 template for a 5x5 depthwise
layer (predicted 0.4x its time), a depthwise template for a grouped layer of 24 channels a
group. `admitted` says which templates can run a configuration; Chooser.by_template keeps a
chooser's direct candidates to the most specialised of those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from seer.data import configs

_NAME = re.compile(r"grouped_direct_\d+_(\d+)_(\d+)$")
# the log-config column of the channels a direction's direct template counts per group
_CHANNELS = {"conv_fwd": configs.CHANNEL_COLUMNS[0], "conv_bwd_data": configs.CHANNEL_COLUMNS[1]}


@dataclass(frozen=True)
class Template:
    """A direct kernel's specialisation: channels per group and square filter side (0: any)."""

    channels: int
    filter: int

    @classmethod
    def of(cls, key: str) -> Template | None:
        """The template a variant key names (None: not a direct kernel's, or one without)."""
        m = _NAME.search(key)
        return cls(int(m.group(1)), int(m.group(2))) if m else None

    @property
    def rank(self) -> int:
        """How specialised, 0-3 (more is more): by channels first, then by filter."""
        return 2 * (self.channels != 0) + (self.filter != 0)

    def admits(self, logcfg: np.ndarray, op: str) -> np.ndarray:
        """Whether each configuration (log-configurations of `op`) can run this template."""
        ok = np.ones(len(logcfg), dtype=bool)
        if self.channels:
            grouped = logcfg[:, configs.GROUPS_COLUMN] > 0
            per_group = logcfg[:, _CHANNELS[op]] - logcfg[:, configs.GROUPS_COLUMN]
            ok &= grouped & np.isclose(per_group, np.log2(self.channels), atol=1e-3)
        if self.filter:
            r, s = logcfg[:, configs.FILTER_COLUMNS].T
            side = np.log2(self.filter)
            ok &= np.isclose(r, side, atol=1e-3) & np.isclose(s, side, atol=1e-3)
        return ok


def templates(labels: list[str], op: str) -> dict[int, Template]:
    """The label indices of a chooser's direct-kernel templates, for the directions that have them."""
    if op not in _CHANNELS:
        return {}
    out = {i: Template.of(k) for i, k in enumerate(labels)}
    return {i: t for i, t in out.items() if t is not None}
