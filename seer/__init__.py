"""seer: GPU kernel time models without MATLAB.

Per-kernel-variant linear time models in the style of SEER, fitted with statsmodels, next to
analytical predictors (embedding lookups, memory-bound kernels, roofline). Everything here
runs on a CPU; nothing imports GPU modules.

    import seer
    f = seer.load("h100-sxm")                 # bundled fits (seer.available()) or a path
    h = seer.load("l4")                       # no fits of its own: transferred (h.transferred_from)
    f.predict(op="bmm", batch=8, m=512, n=512, k=512)          # ms, float
    f.predict(configs_df)                     # ms, a Series on the frame's index
    f.rank_algorithms(configs_df)             # every conv algorithm per config, rank 1 = fastest
    f.rank_algorithms(op="gemm", batch=1, m=4096, n=4096, k=4096)   # cuBLASLt's: f.algorithms_of("gemm")
    seer.best_algorithm(dict(op="conv_fwd", batch=32, c_in=64, h_in=56, w_in=56, c_out=64,
                             kh=3, kw=3, pad_h=1, pad_w=1), gpu="t4")
    with seer.fake_mode():                    # a live model, no weights allocated (pip install torch)
        net, x = MyNet(), torch.randn(32, 3, 224, 224)
    seer.predict_model(net, x, "h100-sxm", training=True).totals
    seer.predict_hf("config.json", "l4", batch=8, seq=512).totals

Times are in ms everywhere.
"""

from __future__ import annotations

__version__ = "0.1.0"

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from seer.errors import DataError, SeerError, SeerWarning, UnknownGPUError

if TYPE_CHECKING:
    import pandas as pd

    from seer.hardware.gpus import GPUSpec
    from seer.predict import Fits, available
    from seer.predict.inputs import Configs
    from seer.workload.capture import fake_mode, predict_model
    from seer.workload.hf import predict_hf
    from seer.workload.model_time import model_time

_LAZY = {
    "Fits": "seer.predict",
    "available": "seer.predict",
    "model_time": "seer.workload.model_time",
    "predict_model": "seer.workload.capture",  # a live PyTorch model (the torch extra)
    "fake_mode": "seer.workload.capture",
    "predict_hf": "seer.workload.hf",  # a Hugging Face architecture from its config
}


def __getattr__(name: str):
    """PEP 562: the prediction API (pandas, statsmodels, scipy) loads on first use, so that
    `import cudnn_bench` or `seer.data.records` on a GPU host starts light."""
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load(name: str | os.PathLike[str] | None = None) -> Fits:
    """Fits of a GPU: its own (bundled: seer.available(); or a fits file's path), else, for a GPU
    of seer.hardware.gpus without fits, fits transferred from the bundled GPUs (`source` ==
    'transferred', `transferred_from` lists them; see seer.transfer)."""
    if name is None:
        from seer.predict import load as own

        return own(None)
    from seer.predict.transfer import load_or_transfer

    return load_or_transfer(name)


def transfer(target: str | GPUSpec, sources: Iterable[str | os.PathLike[str] | Fits] | None = None) -> Fits:
    """Fits for `target` (a GPU of seer.hardware.gpus) moved from `sources` (fits names, paths or Fits;
    default: every bundled GPU of another chip): see seer.predict.transfer."""
    from seer.predict.transfer import transfer as _transfer

    return _transfer(target, sources)


def rank_algorithms(configs: Configs = None, *, gpu: str, **config: Any) -> pd.DataFrame:
    """Every fitted algorithm's predicted time per config, ranked from 1 (Fits.rank_algorithms):
    cuDNN's convolution algorithms, or cuBLASLt's for a GEMM where the GPU's data timed them."""
    return load(gpu).rank_algorithms(configs, **config)


def best_algorithm(config: Configs = None, *, gpu: str, **kw: Any) -> str | pd.Series:
    """The algorithm predicted fastest: a name for one config, a Series on a frame's index."""
    return load(gpu).best_algorithm(config, **kw)


__all__ = [
    "DataError",
    "Fits",
    "SeerError",
    "SeerWarning",
    "UnknownGPUError",
    "__version__",
    "available",
    "best_algorithm",
    "fake_mode",
    "load",
    "model_time",
    "predict_hf",
    "predict_model",
    "rank_algorithms",
    "transfer",
]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
