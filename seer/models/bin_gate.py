"""Whether cuDNN's FFT loops its complex GEMM over the frequency bins: a gate the census labels.

cuDNN's FFT mostly runs one batched GEMM over all the bins of its transform, but for some
configurations it launches the GEMM once per bin (F x (F/2 + 1) launches, 10-100x the batched
call's time: seer.data.prepare.per_bin_variants), on a rule its sizes do not show plainly. Without
labels beyond the timed calls the choosers name a loop only where a row's nearest training
configurations looped (Chooser.by_bins). A classification tree grown on the timed calls alone
names loops no better: over 5 folds of the H100's 2,061 ungrouped forward FFT configurations (100
of them loops) it missed 31 and named 34 false ones, the rule 56 and 5 (a false loop costs
10-100x, a missed one 90%); the H200's 1,916 (98 loops): 36 and 31 against 52 and 10. But the
tree's errors fell as its training folds grew from a quarter to a half to all of them (H100 90,
88, 65; H200 86, 78, 67; `python tools/direct_fallback.py data/<gpu>` prints both): it wants
labels, which the census gives: 24,238 of its 47,540 configurations are ungrouped, unstrided
and undilated, as cuDNN's FFT wants them (cudnn_bench.census.design), ten times the timed calls.

The census captures each call into a CUDA graph without running it (cudnn_bench.capture) and
records its launches: a loop launches its GEMM at least once per bin (144 at the least, for a
16 x 16 transform), a batched call a handful of kernels. So an ungrouped FFT call that launched
at least its configuration's bins (configs: FB) looped. Grouped calls are left out: cuDNN loops
over their groups too (seer.models.variant, per_group), and a launch count does not tell one loop
from the other. Where the census captured FFT calls of a direction (FitOptions.gates "loops")
and gives GATE_MIN labelled configurations with both answers, the gate, a tree of that one
question (seer.models.gate.fit_gate), answers for every ungrouped row in place of the
nearest-configuration rule: a loop where it says so and the nearest training configuration
looped, the same kernel batched elsewhere (Chooser._bin_gated; on the timed calls alone the two
together missed 46 of the H100's loops and named 8 false ones, 51 and 4 on the H200).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.data import census
from seer.data.configs import ConfigBatch
from seer.data.keys import PER_BIN
from seer.models.gate import call_labels

LOOPING_ALGO = "FFT"  # the algorithm whose calls may loop over bins (VariantKey.per_bin)


def is_loop(keys) -> np.ndarray:
    """Whether each variant key (an array of any shape) is a per-bin loop's."""
    return np.char.endswith(np.asarray(keys, dtype=str), PER_BIN)


def call_loops(train: pd.DataFrame) -> pd.DataFrame:
    """One row per timed ungrouped call of a family's training rows, `loop` whether the call
    looped over the bins (a key of it is a per-bin variant's)."""
    plain = train[pd.to_numeric(train["groups"], errors="coerce").fillna(1).to_numpy() == 1]
    return call_labels(plain, "loop", is_loop)


def census_loops(rows: pd.DataFrame, op: str, math: str = "fma") -> pd.DataFrame:
    """The census's ungrouped FFT calls of `op` that it captured, and `loop`: whether the call
    launched at least as many kernels as its transform has frequency bins."""
    columns = [*census.DIMS, "op", "loop"]
    mine = census.captured(rows, op, LOOPING_ALGO, math)
    mine = mine[pd.to_numeric(mine["groups"], errors="coerce") == 1] if len(mine) else mine
    if mine.empty:
        return pd.DataFrame(columns=columns)
    return mine.assign(loop=launched_bins(mine, op))[columns]


def launched_bins(captured: pd.DataFrame, op: str) -> np.ndarray:
    """Whether each captured FFT call of `op` launched at least as many kernels as its transform
    has frequency bins (configs: FB): a loop over the bins, not the handful of a batched call."""
    bins = ConfigBatch.of(captured.assign(op=op), op).sizes["FB"]
    return pd.to_numeric(captured["launches"], errors="coerce").to_numpy(dtype=float) >= bins
