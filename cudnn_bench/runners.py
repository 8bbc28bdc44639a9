"""Runners: one configuration's descriptors and buffers on the GPU, and the calls it offers.

A runner offers its calls one at a time, each as a `Call` (record fields, a workspace query,
and how to make it), so one measure loop (measure.py) times cuDNN's algorithms and cuBLASLt's
alike, and the ncu worker (ncu_pass.py) makes one of them again under the profiler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from seer.data.variants import CONV_OP_ALGOS

from .configs import TORCH_CONFIGS, ConvConfig, GemmConfig, TorchConfig
from .cublaslt import COMPUTE_NAMES, RECORD_FIELDS, GemmProblem, LtAlgo, compute_types
from .cudnn import DIRECTIONS, AlgoPerf, ConvProblem
from .env import Env
from .errors import BenchError, CublasError, CublasNotSupported, CudnnError
from .maths import MATH_DTYPE
from .options import Options
from .plan import PlanItem

R = TypeVar("R", bound="Runner")


@dataclass(frozen=True)
class Call:
    """One call a runner offers: its record fields, its workspace and how to make it."""

    fields: dict
    workspace: Callable[[], int]  # bytes it needs; a library error here is recorded, not timed
    make: Callable[[int, int], Callable[[], None]]  # (workspace pointer, bytes) -> the call


class Runner:
    """A measured problem's buffers and descriptors, closed on leaving a `with` block."""

    def shared(self) -> dict:
        """Fields every row of the configuration carries (the library's own pick)."""
        raise NotImplementedError

    def calls(self, opts: Options) -> Iterator[Call]:
        """The calls to time, in order."""
        raise NotImplementedError

    def close(self) -> None:
        """Free the descriptors (the buffers stay in the pool for the next configuration)."""
        raise NotImplementedError

    def __enter__(self: R) -> R:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ====================================================================== convolution
# each direction's buffers (pool names), forward's order (x, w, y): the written one is its own, so
# the operands keep their random contents whichever direction ran before
CONV_BUFFERS = {"conv_fwd": ("x", "w", "y"), "conv_bwd_data": ("dx", "w", "dy"), "conv_bwd_filter": ("x", "dw", "dy")}


def conv_fields(algo: int, op: str = "conv_fwd") -> dict:
    name = CONV_OP_ALGOS[op][algo]
    return {"algo": name, "call_suffix": name}


def conv_algos(op: str, opts: Options) -> tuple[int, ...]:
    """The algorithms timed of a convolution: those asked for (--algos) of the forward, every
    one of a gradient's direction."""
    return opts.algos if op == "conv_fwd" else tuple(CONV_OP_ALGOS[op])


class ConvRunner(Runner):
    """One convolution configuration on the GPU, in its direction (`cfg.op`): descriptors,
    buffers, and a call per algorithm."""

    def __init__(self, env: Env, cfg: ConvConfig, math_mode: str):
        self.env, self.cfg, self.math, self.op = env, cfg, math_mode, cfg.op
        self.dnn, self.handle = env.cudnn()
        self.dtype = MATH_DTYPE[math_mode]
        self.ranked: list[AlgoPerf] = []  # cuDNN's heuristic, best first (filled by `shared`)
        self.prob = ConvProblem(self.dnn, **cfg.dims(), math=math_mode, layout=cfg.layout)
        try:
            n, c, h, w = self.prob.out
            if (n, c, (h, w)) != (cfg.batch, cfg.c_out, cfg.out_hw):
                raise BenchError(
                    f"cuDNN's output shape {self.prob.out} differs from the "
                    f"configuration's ({cfg.batch}, {cfg.c_out}, {cfg.out_hw})"
                )
            tb = cfg.tensor_bytes(self.dtype)
            written = DIRECTIONS[self.op].order[-1]  # of the forward's x, w, y
            x, w, y = (
                env.pool.get(name, tb[t], None if t == written else self.dtype)
                for name, t in zip(CONV_BUFFERS[self.op], ("x", "w", "y"))
            )
            self.ptrs = (x, w, y)
        except BaseException:
            self.prob.close()
            raise

    def close(self) -> None:
        self.prob.close()

    def heuristic(self) -> list[AlgoPerf]:
        p = self.prob
        return self.dnn.heuristic(self.handle, p.x, p.w, p.conv, p.y, op=self.op)

    def workspace(self, algo: int) -> int:
        p = self.prob
        return self.dnn.workspace_size(self.handle, p.x, p.w, p.conv, p.y, algo, op=self.op)

    def fn(self, algo: int, ws_ptr: int, ws_bytes: int) -> Callable[[], None]:
        p, dnn, h, op, ptrs = self.prob, self.dnn, self.handle, self.op, self.ptrs
        return lambda: dnn.convolve(op, h, (p.x, p.w, p.y), ptrs, p.conv, algo, ws_ptr, ws_bytes)

    def shared(self) -> dict:
        try:
            self.ranked = self.heuristic()
        except CudnnError as exc:
            self.ranked = []
            return {"message": f"heuristic: {exc}", "heuristic_pick": ""}
        return {"heuristic_pick": next((p.name for p in self.ranked if p.status == 0), "")}

    def call(self, algo: int) -> Call:
        rank = {p.algo: i for i, p in enumerate(self.ranked)}
        hmath = {p.algo: p.math_type for p in self.ranked}
        fields = {**conv_fields(algo, self.op), "heuristic_rank": rank.get(algo), "heuristic_math": hmath.get(algo)}
        return Call(fields, lambda: self.workspace(algo), lambda ptr, nbytes: self.fn(algo, ptr, nbytes))

    def calls(self, opts: Options) -> Iterator[Call]:
        """Every algorithm of the direction (of the forward: those asked for, --algos), with
        cuDNN's heuristic ranking."""
        for algo in conv_algos(self.op, opts):
            yield self.call(algo)


# ====================================================================== GEMM
def lt_fields(a: LtAlgo) -> dict:
    c = a.config
    return {
        "algo": a.name,
        "heuristic_rank": a.rank,
        "workspace_bytes": a.workspace,
        **{column: c.get(name) for column, name in RECORD_FIELDS},
        "lt_waves": a.waves,
        "call_suffix": f"lt{a.rank}:" + ",".join("" if v is None else str(v) for v in a.signature()),
    }


class GemmRunner(Runner):
    """One GEMM on the GPU: descriptors, buffers, and a call per cuBLASLt heuristic algorithm."""

    def __init__(self, env: Env, cfg: GemmConfig, math_mode: str, max_workspace: int, compute: int | None = None):
        self.env, self.cfg = env, cfg
        self.lt, self.handle = env.cublaslt()
        self.dtype = MATH_DTYPE[math_mode]
        self.algos: list[LtAlgo] = []  # the heuristic's offer to time (open_gemm fills it)
        self.prob = GemmProblem(
            self.lt, **cfg.dims(), trans=cfg.trans, math=math_mode, max_workspace=max_workspace, compute=compute
        )
        try:
            tb = cfg.tensor_bytes(self.dtype)
            self.a = env.pool.get("a", tb["a"], self.dtype)
            self.b = env.pool.get("b", tb["b"], self.dtype)
            self.c = env.pool.get("c", tb["c"])
        except BaseException:
            self.prob.close()
            raise

    def close(self) -> None:
        self.prob.close()

    def heuristics(self, count: int) -> list[LtAlgo]:
        return self.prob.heuristics(self.handle, count)

    def fn(self, algo: LtAlgo, ws_ptr: int) -> Callable[[], None]:
        p, lt, h, s = self.prob, self.lt, self.handle, self.env.stream
        return lambda: lt.matmul(h, p.op, p.a, self.a, p.b, self.b, p.c, self.c, algo.algo, ws_ptr, algo.workspace, s)

    def shared(self) -> dict:
        compute = self.prob.compute
        return {"heuristic_pick": self.algos[0].name, "compute_type": COMPUTE_NAMES.get(compute, str(compute))}

    def call(self, algo: LtAlgo) -> Call:
        return Call(lt_fields(algo), lambda: algo.workspace, lambda ptr, _nbytes: self.fn(algo, ptr))

    def calls(self, opts: Options) -> Iterator[Call]:
        """Up to --gemm-algos of cuBLASLt's heuristic algorithms, its first choice first."""
        for algo in self.algos:
            yield self.call(algo)


def open_gemm(env: Env, cfg: GemmConfig, math_mode: str, opts: Options) -> GemmRunner:
    """A runner with cuBLASLt's algorithms, trying the math family's compute types in order
    (cublaslt.compute_types) until the heuristic offers one; raises the last error, or
    CublasNotSupported where none offers an algorithm."""
    last: BenchError | None = None
    for compute in compute_types(math_mode):
        runner = GemmRunner(env, cfg, math_mode, opts.workspace_limit, compute)
        try:
            runner.algos = runner.heuristics(opts.gemm_algos)
        except CublasError as exc:
            runner.close()
            last = exc
            continue
        if runner.algos:
            return runner
        runner.close()
    raise last or CublasNotSupported(
        15,
        "CUBLAS_STATUS_NOT_SUPPORTED",
        "cuBLASLt's heuristic returned no usable algorithm",
        "cublasLtMatmulAlgoGetHeuristic",
    )


# ====================================================================== memory-bound
MEMORY_CALL = {"algo": "", "call_suffix": "torch"}  # one call: PyTorch's kernels for the op


class MemoryRunner(Runner):
    """One memory-bound operation: its tensors, and its one call (PyTorch's kernels)."""

    def __init__(self, env: Env, cfg: TorchConfig, math_mode: str):
        self.ops = env.memory_ops()
        self.fn: Callable[[], None] | None = self.ops.make(cfg, MATH_DTYPE[math_mode])

    def shared(self) -> dict:
        return {}

    def calls(self, opts: Options) -> Iterator[Call]:
        fn = self.fn
        assert fn is not None, "the runner is closed"
        yield Call(dict(MEMORY_CALL), lambda: 0, lambda _ptr, _nbytes: fn)

    def close(self) -> None:
        self.fn = None  # its tensors go back to PyTorch's cache, and the cache to the driver
        self.ops.release()


# ====================================================================== by plan item
def open_runner(env: Env, item: PlanItem, opts: Options) -> Runner:
    """The runner of one plan item; raises the library's error where it cannot be made."""
    if isinstance(item.config, ConvConfig):
        return ConvRunner(env, item.config, item.math)
    if isinstance(item.config, TORCH_CONFIGS):
        return MemoryRunner(env, item.config, item.math)
    return open_gemm(env, item.config, item.math, opts)


def unopened_calls(item: PlanItem, opts: Options) -> list[dict]:
    """The calls a configuration is recorded as where its runner cannot be made: every
    algorithm of a convolution, the heuristic of a GEMM, a memory-bound op's one call."""
    if isinstance(item.config, ConvConfig):
        return [conv_fields(a, item.config.op) for a in conv_algos(item.config.op, opts)]
    if isinstance(item.config, TORCH_CONFIGS):
        return [dict(MEMORY_CALL)]
    return [{"algo": "lt:-1", "call_suffix": "heuristic"}]
