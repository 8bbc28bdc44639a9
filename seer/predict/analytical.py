"""Predictors of the ops timed by closed forms: memory-bound kernels (with their fitted bandwidth
and floors where the fits have them, the datasheet elsewhere) and embedding-bag lookups (the
DLRM performance model on the GPU's datasheet peaks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seer.data.records import MEMORY_OPS
from seer.errors import SeerError
from seer.hardware.gpus import GPUSpec
from seer.models.memory import MemoryBoundFit
from seer.predict.protocol import AlgorithmTimes


class _NoAlgorithms:
    """Ops without algorithms to rank."""

    gpu: GPUSpec
    extrapolates = True

    def algorithms(self, op: str) -> list[str]:
        return []

    def dtypes(self, op: str) -> tuple[str, ...] | None:
        return None  # bytes follow the element size

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        raise NotImplementedError

    def predict_in_range(self, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Closed forms have no fitted range to leave."""
        return self.predict(df), np.ones(len(df), dtype=bool)

    def algorithm_times(self, df: pd.DataFrame, op: str, algos: Sequence[str] | None = None) -> AlgorithmTimes:
        raise SeerError(f"{op} has no algorithms to rank on {self.gpu.name}")


@dataclass
class MemoryPredictor(_NoAlgorithms):
    """Element-wise, softmax, layer norm, concat, transpose and memcpy kernels: a roofline with a
    launch floor (seer.analytical.memory), with the GPU's fitted parameters where it has them."""

    gpu: GPUSpec
    fit: MemoryBoundFit | None = None  # None: datasheet figures

    def __repr__(self) -> str:
        return f"MemoryPredictor({self.gpu.slug}, {'fitted' if self.fitted else 'datasheet'})"

    @property
    def fitted(self) -> bool:
        return self.fit is not None and self.gpu.slug in self.fit.gpus

    @property
    def ops(self) -> tuple[str, ...]:
        return MEMORY_OPS

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        from seer.analytical import predict_memory_bound

        cols = [c for c in ("op", "rows", "cols", "fn", "dtype") if c in df]
        configs = df[cols].reset_index(drop=True)
        if self.fit is None:
            return np.asarray(predict_memory_bound(configs, None, self.gpu), dtype=float)
        return self.fit.predict(configs, self.gpu)


EMBEDDING_OPS = ("embedding_fwd", "embedding_bwd_sgd")


@dataclass
class EmbeddingPredictor(_NoAlgorithms):
    """Embedding-bag forward (with the L2 hit-rate model) and backward with SGD: the DLRM
    performance model on the GPU's datasheet peaks (seer.analytical.embedding)."""

    gpu: GPUSpec
    fitted = False  # closed forms on datasheet figures

    def __repr__(self) -> str:
        return f"EmbeddingPredictor({self.gpu.slug})"

    @property
    def ops(self) -> tuple[str, ...]:
        return EMBEDDING_OPS

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        from seer.analytical import embedding_backward_sgd, embedding_forward

        op = str(df["op"].iat[0])
        fn = embedding_forward if op == "embedding_fwd" else embedding_backward_sgd
        cols = [
            c for c in ("batch", "num_embeddings", "num_tables", "bag_size", "emb_dim", "rows_per_block") if c in df
        ]
        return np.asarray(fn(df[cols].reset_index(drop=True), gpu=self.gpu), dtype=float)
