"""Memory-bound operations timed by the harness: PyTorch's kernels on the harness's own stream.

A model's element-wise, softmax, layer-norm, transpose (strided copy), concatenation and
embedding-lookup (gather) kernels are PyTorch's, so PyTorch launches them here too. They run on the harness's stream
(`torch.cuda.ExternalStream`) in the device's primary context, which the driver backend retains
as PyTorch does: the harness's CUDA events and its CUPTI tracer time them exactly as they time
cuDNN's calls (what the GPU did, not PyTorch's call time), and the L2 is flushed between
repetitions the same way. torch is imported only where a memory-bound suite runs. Not here: a
contiguous copy, which PyTorch makes with cudaMemcpyAsync (a copy-engine transfer, no kernel for
the tracer to name; the harness stops where a call has no kernel names).

`op_call` builds one configuration's tensors and call for any torch device (the tests run it on
the CPU); `TorchOps` binds it to the GPU and the harness's stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .configs import EmbConfig, TorchConfig
from .errors import BenchError, DeviceOutOfMemory, TorchError

PYTORCH_NEEDED = "the memory-bound suite launches PyTorch's kernels: install torch with CUDA in this Python"


def _unary(torch: Any) -> dict[str, Callable[[Any], Any]]:
    f = torch.nn.functional
    return {
        "relu": f.relu,
        "gelu": f.gelu,
        "silu": f.silu,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
        "exp": torch.exp,
    }


def op_call(torch: Any, cfg: TorchConfig, dtype: str, device: Any) -> Callable[[], Any]:
    """The call of one configuration, its tensors made (random values) on `device`: each call
    launches the op's kernels once and returns the result (freed when dropped: PyTorch's
    caching allocator hands the same block back, without a device allocation)."""
    if not cfg.valid:
        raise BenchError(f"not a memory-bound configuration the harness runs: {cfg}")
    dt = getattr(torch, dtype)
    if isinstance(cfg, EmbConfig):
        return _lookup(torch, cfg, dt, device)
    rows, cols = cfg.rows, cfg.cols

    def tensor(c: int = cols) -> Any:
        return torch.rand(rows, c, device=device, dtype=dt)

    x = tensor()
    if cfg.op == "elementwise":
        if cfg.fn in ("add", "mul", "div"):
            y, out = tensor() + 0.5, torch.empty_like(x)
            binary = {"add": torch.add, "mul": torch.mul, "div": torch.div}[cfg.fn]
            return lambda: binary(x, y, out=out)
        unary = _unary(torch)[cfg.fn]
        return lambda: unary(x)
    if cfg.op == "softmax":
        return lambda: torch.softmax(x, dim=-1)
    if cfg.op == "layer_norm":
        w, b = torch.ones(cols, device=device, dtype=dt), torch.zeros(cols, device=device, dtype=dt)
        return lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5)
    if cfg.op == "transpose":
        return lambda: x.t().contiguous()
    a, b = tensor(cols // 2), tensor(cols // 2)  # concat
    return lambda: torch.cat((a, b), dim=1)


def _lookup(torch: Any, cfg: EmbConfig, dt: Any, device: Any) -> Callable[[], Any]:
    """nn.Embedding's gather (bags of one row), or EmbeddingBag's sum over each bag."""
    f = torch.nn.functional
    table = torch.rand(cfg.num_embeddings, cfg.emb_dim, device=device, dtype=dt)
    idx = torch.randint(0, cfg.num_embeddings, (cfg.batch * cfg.bag_size,), device=device)
    if cfg.bag_size == 1:
        return lambda: f.embedding(idx, table)
    offsets = torch.arange(0, cfg.batch * cfg.bag_size, cfg.bag_size, device=device)
    return lambda: f.embedding_bag(idx, table, offsets, mode="sum")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class TorchOps:
    """PyTorch bound to the harness's device and stream (its current stream from here on)."""

    def __init__(self, ordinal: int, stream: int):
        try:
            import torch
        except ImportError:
            raise BenchError(f"PyTorch is not installed: {PYTORCH_NEEDED}") from None
        if not torch.cuda.is_available():
            raise BenchError(f"PyTorch {torch.__version__} sees no CUDA GPU: {PYTORCH_NEEDED}")
        self.torch = torch
        self.version = str(torch.__version__)
        try:
            self.device = torch.device("cuda", ordinal)
            torch.cuda.set_device(self.device)
            self.stream = torch.cuda.ExternalStream(stream, device=self.device)
            torch.cuda.set_stream(self.stream)
        except RuntimeError as exc:
            raise BenchError(
                f"PyTorch {self.version} cannot launch on the harness's stream: {_first_line(exc)}"
            ) from None

    def make(self, cfg: TorchConfig, dtype: str) -> Callable[[], None]:
        """The configuration's call; PyTorch's errors, in making or running it, become the
        harness's (out_of_memory or failed, recorded as the call's status; a sticky CUDA error
        then stops the run where the harness synchronizes)."""
        call = self._checked(lambda: op_call(self.torch, cfg, dtype, self.device))

        def run() -> None:
            self._checked(call)  # the result is dropped at once

        return run

    def _checked(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self.torch.cuda.OutOfMemoryError as exc:
            raise DeviceOutOfMemory(f"PyTorch: {_first_line(exc)}") from None
        except RuntimeError as exc:
            raise TorchError(-1, type(exc).__name__, _first_line(exc)) from None

    def release(self) -> None:
        """Hand cached blocks back to the driver: the convolution buffers come next."""
        self.torch.cuda.empty_cache()
