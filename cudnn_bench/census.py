"""The census: which kernel cuDNN would launch, asked of its descriptors alone, for many configurations.

cuDNN runs some of its legacy algorithms as a direct fallback kernel (conv2d_grouped_direct,
wgrad2d_grouped_direct) on configurations nothing in their sizes singles out, 10-20x slower than
the kernel it runs on their neighbours. Which one it runs is the library's own deterministic
choice, and its workspace query shows it for two algorithms: the forward GEMM algorithm and the
backward-filter ALGO_1 ask for no workspace exactly when they run the direct kernel
(`python tools/direct_fallback.py data/h100-sxm data/h200`: all 6,622 and 923 of the H100's
timed calls; no kernel changed in 2,867 repeated configuration x algorithm pairs, nor between
the H100 and the H200 on the 29,095 pairs both ran). seer.fit's variant choosers learn the
choice from labelled configurations, and a timed configuration costs about a tenth of a second
where a workspace query costs microseconds; on the forward GEMM's 4,612 ungrouped FP32
configurations a tree's cross-validated error fell from 10.7% to 4.7% as its training
configurations grew eightfold, to about 3,690 (same command).

So this step asks, for every configuration of a space-filling design and every real layer at
every batch size of its family, each direction's workspace query for every algorithm and cuDNN's
heuristic order (cudnnGetConvolution<Direction>Algorithm_v7), and captures each call cuDNN accepts
into a CUDA graph without running it (cudnn_bench.capture): the kernels it would launch, for every
algorithm, where the workspace tells for two. No timing; the captured calls' pointers lie in one
scratch allocation nothing reads or writes. Rows go to `<data>/<gpu>/census/census-<n>.csv.gz`,
one part per chunk of configurations (a stopped run keeps what it asked; a later run asks the
rest), outside the timed records (seer.data.records reads no subfolder). A driver that cannot
name captured kernels leaves `capture` empty, and the workspace rows stand alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from seer.data.census import COLUMNS, DIMS, PARTS, legend_of, read, shared
from seer.data.records import CONV_OPS
from seer.data.variants import CONV_OP_ALGOS

from .capture import Capture, GraphCapture
from .configs import ConvConfig
from .conv_grid import _hash, sobol_config, sobol_indices, structure_of, structures, weights_of
from .cudnn import ConvProblem, Cudnn
from .errors import BenchError, CudaError, CudnnError, DeviceOutOfMemory, status_of
from .families import FAMILIES
from .maths import MATH_DTYPE
from .runtime import Backend

SOBOL_POINTS = 1 << 15  # the space-filling design's points (a whole base-2 net)
CHUNK = 4096  # configurations a part file holds at most
WRITE_EVERY_S = 15.0  # a part at least this often (a killed run loses less)
PART = "census-{:06d}.csv.gz"  # seer.data.census.PARTS
SCRATCH_SHARE = 0.5  # of the device memory free at the start: the most the captured calls' tensors take
ALIGN = 256  # bytes: where each of a captured call's buffers starts in the scratch allocation
GIVE_UP = 200  # captures failing in a row: the driver or library cannot capture here, stop trying


@dataclass(frozen=True)
class Census:
    """The configurations asked about, in the order asked: real layers and design points
    alternating, so a run stopped anywhere has asked about both."""

    configs: tuple[ConvConfig, ...]

    def left(self, folder: Path) -> list[ConvConfig]:
        """The configurations `folder` (a GPU's census folder) holds no answers of yet."""
        done = asked(folder)
        return [c for c in self.configs if dims_of(c) not in done]


def dims_of(cfg: ConvConfig) -> tuple[int, ...]:
    return tuple(int(getattr(cfg, f)) for f in DIMS)


def design(sobol_points: int = SOBOL_POINTS, exclude: Sequence[ConvConfig] = ()) -> Census:
    """The census's configurations: every distinct real layer (cudnn_bench.families) at every
    batch size of its family, and the conv_grid design's space-filling points continued to
    `sobol_points`, less `exclude` (Test-set-II's layers: their labels stay held out)."""
    held = {dims_of(c) for c in exclude}
    shapes: dict[tuple, tuple] = {}
    for fam in FAMILIES:
        for hw in fam.sizes:
            for layer in fam.build(hw):
                shapes.setdefault(layer.shape(), (layer, fam.batches, f"{layer.name}@{hw[0]}x{hw[1]}"))
    ordered = sorted(shapes.values(), key=lambda t: _hash(t[2]))
    rounds = max(len(b) for _, b, _ in ordered)
    layers = [  # round r: every layer at the r-th batch of its list, each layer's list starting elsewhere
        layer.config(batches[(i + r) % len(batches)], name)
        for r in range(rounds)
        for i, (layer, batches, name) in enumerate(ordered)
        if r < len(batches)
    ]
    cats = structures()
    cum = weights_of(cats, [structure_of(layer) for layer, _, _ in ordered])
    points = [sobol_config(v, cats, cum, i) for i, v in enumerate(sobol_indices(sobol_points, 7))]
    out: list[ConvConfig] = []
    seen = set(held)
    for pair in _alternate(layers, points):
        d = dims_of(pair)
        if pair.valid and d not in seen:
            seen.add(d)
            out.append(pair)
    return Census(tuple(out))


def _alternate(a: list, b: list) -> Iterator:
    for i in range(max(len(a), len(b))):
        if i < len(a):
            yield a[i]
        if i < len(b):
            yield b[i]


def _base(cfg: ConvConfig, math: str, gpu: str, version: str) -> dict:
    """The fields every row of a configuration carries."""
    return {**{f: getattr(cfg, f) for f in DIMS}, "math": math, "gpu": gpu, "cudnn_version": version}


@dataclass
class Scratch:
    """One device allocation the captured calls' buffers lie in (nothing runs: nothing reads or
    writes it), grown to the largest call asked, up to `cap` bytes."""

    backend: Backend
    cap: int
    ptr: int = 0
    size: int = 0

    def pointers(self, sizes: Sequence[int]) -> tuple[int, ...] | None:
        """A pointer for a buffer of each of `sizes` bytes, none overlapping; None beyond the cap."""
        offsets, total = [], 0
        for n in sizes:
            offsets.append(total)
            total += -(-max(int(n), 1) // ALIGN) * ALIGN
        if total > self.cap:
            return None
        if total > self.size:
            grown = min(max(total, 2 * self.size), self.cap)
            self.close()
            try:
                self.ptr, self.size = self.backend.alloc(grown), grown
            except DeviceOutOfMemory:  # what the device would not give: ask for less from now on
                self.cap = grown // 2
                return None
        return tuple(self.ptr + o for o in offsets)

    def close(self) -> None:
        if self.ptr:
            self.backend.free(self.ptr)
        self.ptr = self.size = 0


@dataclass
class Capturing:
    """What capturing a census's calls needs: the capture, its scratch memory, the stream cuDNN's
    handle launches on."""

    capture: Capture
    scratch: Scratch
    stream: int
    failed: int = 0  # captures failed in a row (GIVE_UP of them: no more tried)

    @property
    def live(self) -> bool:
        return self.failed < GIVE_UP

    def kernels(self, dnn: Cudnn, handle, p: ConvProblem, cfg: ConvConfig, op: str, algo: int, ws: int) -> dict:
        """The captured call's row fields: `capture` "ok" (or why not), `launches`, `kernels` (its
        distinct kernel names in launch order)."""
        t = cfg.tensor_bytes(p.dtype)
        ptrs = self.scratch.pointers([t["x"], t["w"], t["y"], ws])
        if ptrs is None:
            return {"capture": "too_large"}
        x, w, y, space = ptrs
        try:
            got = self.capture.kernels(
                self.stream, lambda: dnn.convolve(op, handle, (p.x, p.w, p.y), (x, w, y), p.conv, algo, space, ws)
            )
        except CudnnError as exc:
            return {"capture": status_of(exc)}
        except CudaError as exc:  # an invalidated capture (the call synchronized): not this row's answer
            self.failed += 1
            return {"capture": f"capture_failed {exc.name}"}
        self.failed = 0
        return {"capture": "ok", "launches": len(got), "kernels": tuple(dict.fromkeys(k.name for k in got))}


def answers(
    dnn: Cudnn, handle, cfg: ConvConfig, math: str, gpu: str, version: str, capturing: Capturing | None = None
) -> list[dict]:
    """One configuration's rows: for each direction and algorithm, the workspace it asks for
    (status not_supported where cuDNN refuses it), its place in cuDNN's heuristic order, and where
    `capturing`, the kernels the call would launch."""
    base = _base(cfg, math, gpu, version)
    rows = []
    with ConvProblem(dnn, **cfg.dims(), math=math, layout=cfg.layout) as p:
        for op in CONV_OPS:
            try:
                order = dnn.heuristic(handle, p.x, p.w, p.conv, p.y, op=op)
            except CudnnError:
                order = []
            rank = {a.algo: i for i, a in enumerate(order)}
            for algo, name in CONV_OP_ALGOS[op].items():
                try:
                    ws, status = dnn.workspace_size(handle, p.x, p.w, p.conv, p.y, algo, op=op), "ok"
                except CudnnError as exc:
                    ws, status = None, status_of(exc)
                row = {
                    **base,
                    "op": op,
                    "algo": name,
                    "workspace_bytes": ws,
                    "heuristic_rank": rank.get(algo),
                    "status": status,
                }
                if capturing is not None and capturing.live and ws is not None:
                    row.update(capturing.kernels(dnn, handle, p, cfg, op, algo, ws))
                rows.append(row)
    return rows


def refused(cfg: ConvConfig, math: str, gpu: str, version: str, status: str) -> list[dict]:
    """The rows of a configuration whose descriptors cuDNN refused: each call, that status."""
    base = _base(cfg, math, gpu, version)
    return [
        {**base, "op": op, "algo": name, "workspace_bytes": None, "heuristic_rank": None, "status": status}
        for op in CONV_OPS
        for name in CONV_OP_ALGOS[op].values()
    ]


def asked(folder: Path) -> set[tuple[int, ...]]:
    """The configurations the census parts in `folder` answer."""
    done: set[tuple[int, ...]] = set()
    for part in sorted(folder.glob(PARTS)):
        done.update(map(tuple, read(part)[list(DIMS)].drop_duplicates().itertuples(index=False, name=None)))
    return done


def _write(folder: Path, rows: list[dict]) -> Path:
    """A new part (named after the parts before it, so parts of several runs never collide), its
    kernel names first, in the legend file beside it (seer.data.census)."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(list(folder.glob(PARTS)))
    path = folder / PART.format(n)
    while path.exists() or legend_of(path).exists():
        n += 1
        path = folder / PART.format(n)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in ("workspace_bytes", "heuristic_rank", "launches"):
        frame[col] = frame[col].astype("Int64")
    names: dict[str, int] = {}
    frame["kernels"] = [
        " ".join(str(names.setdefault(k, len(names))) for k in ks) if isinstance(ks, tuple) else None
        for ks in frame["kernels"]
    ]
    if names:
        _atomic(legend_of(path), pd.DataFrame({"id": list(names.values()), "name": list(names)}))
    _atomic(path, frame)
    return path


def _atomic(path: Path, frame: pd.DataFrame) -> None:
    tmp = path.with_suffix(".tmp")
    frame.to_csv(tmp, index=False, compression={"method": "gzip", "mtime": 0})
    tmp.replace(path)


def run(env, out: Path, math: str = "fma", stop_after: float | None = None, limit: int | None = None, log=print) -> int:
    """Ask about the census's configurations `out` lacks (at most `limit`, until `stop_after`
    seconds); returns how many were asked."""
    from seer.hardware import gpus

    folder = shared(Path(out), gpus.slug_for(env.device.name))  # one census an architecture
    todo = design(exclude=held_out()).left(folder)
    if limit is not None:
        todo = todo[:limit]
    dnn, handle = env.cudnn()
    version = dnn.version_str()
    capturing = _capturing(env, log)
    log(
        f"census: {len(todo)} configurations to ask about ({MATH_DTYPE[math]}, {math}), into {folder}"
        + ("" if capturing else ", without captured kernels")
    )
    t0 = last = time.monotonic()
    rows: list[dict] = []
    done = 0
    try:
        for cfg in todo:
            now = time.monotonic()
            if stop_after is not None and now - t0 >= stop_after:
                log(f"census: --stop-after reached after {done} configurations")
                break
            if rows and (done % CHUNK == 0 or now - last >= WRITE_EVERY_S):
                _write(folder, rows)
                rows, last = [], now
                log(f"census: {done} asked, {done / (now - t0):.0f} a second")
            try:
                rows += answers(dnn, handle, cfg, math, env.device.name, version, capturing)
                if capturing is not None and not capturing.live:
                    log(f"census: {GIVE_UP} captures failed in a row; the rest without captured kernels")
                    capturing.scratch.close()
                    capturing = None
            except CudnnError as exc:  # descriptors cuDNN refuses (a tensor too large): every call refused
                rows += refused(cfg, math, env.device.name, version, status_of(exc))
            done += 1
    finally:
        if rows:
            _write(folder, rows)
        if capturing is not None:
            capturing.scratch.close()
    log(f"census: {done} configurations in {time.monotonic() - t0:.1f} s; {len(todo) - done} left")
    return done


def _capturing(env, log) -> Capturing | None:
    """Capturing on `env` (its own capture, a simulated GPU's; else the driver's graph capture),
    or None, with the reason logged, where the driver cannot name captured kernels."""
    capture = env.capture
    if capture is None:
        try:
            capture = GraphCapture.open()
        except (BenchError, OSError, AttributeError) as exc:
            log(f"census: no captured kernels ({exc})")
            return None
    free, _ = env.backend.mem_info()
    return Capturing(capture, Scratch(env.backend, int(free * SCRATCH_SHARE)), env.stream)


def held_out() -> list[ConvConfig]:
    from .suites import test_set_ii

    return test_set_ii()
