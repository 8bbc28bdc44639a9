"""cudnn_bench.capture against a fake driver library: a captured call's kernel nodes read back in
order, with their names (demangled) and launch geometry, and nothing left capturing on failure."""

from __future__ import annotations

import ctypes

import pytest

from cudnn_bench import capture as K
from cudnn_bench import errors as E
from cudnn_bench.runtime import Driver

DIRECT = b"_ZN5cudnn3cnn28conv2d_grouped_direct_kernelIfEEvPf"
XMMA = b"sm90_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize64x64x8_stage3_ffma"
KERNEL, MEMSET = 0, 2  # CUgraphNodeType
INVALIDATED = 901  # CUDA_ERROR_STREAM_CAPTURE_INVALIDATED


class FakeGraphDriver:
    """The driver calls GraphCapture makes. Nodes "launched" while capturing (`launch`) form the
    graph EndCapture returns; a node is (type, func, kern, grid, block), func and kern ids of
    `names`. `without` leaves calls out (an older driver); `end_status` is EndCapture's."""

    def __init__(self, without: tuple[str, ...] = (), end_status: int = 0):
        self.log: list[tuple] = []
        self.capturing: int | None = None
        self.pending: list[tuple] = []
        self.graphs: dict[int, list[tuple]] = {}
        self.destroyed: list[int] = []
        self.names = {0xF1: DIRECT, 0xF2: XMMA, 0xC1: XMMA}
        self.end_status = end_status
        calls = {
            "cuGetErrorName": self._error_name,
            "cuGetErrorString": lambda st, pp: self._text(pp, b"fake"),
            "cuInit": lambda flags: 0,
            "cuStreamBeginCapture_v2": self._begin,
            "cuStreamEndCapture": self._end,
            "cuGraphGetNodes": self._nodes,
            "cuGraphNodeGetType": lambda node, p: self._put(p, self._node(node)[0]),
            "cuGraphKernelNodeGetParams_v2": self._params,
            "cuGraphKernelNodeGetParams": self._params,
            "cuFuncGetName": lambda pp, f: self._text(pp, self.names[f.value]),
            "cuKernelGetName": lambda pp, k: self._text(pp, self.names[k.value]),
            "cuGraphDestroy": lambda g: self.destroyed.append(g.value) or 0,
        }
        self._keep: list[bytes] = []
        for name, fn in calls.items():
            if name not in without:
                setattr(self, name, self._logged(name, fn))

    def _logged(self, name, fn):
        def call(*args):
            self.log.append((name, args))
            return fn(*args)

        return call

    def launch(self, *nodes: tuple) -> None:
        assert self.capturing is not None, "launched outside a capture: it would have run"
        self.pending += nodes

    @staticmethod
    def _put(p, v) -> int:
        p.contents.value = v
        return 0

    def _text(self, pp, b: bytes) -> int:
        self._keep.append(b)
        pp[0] = b
        return 0

    def _error_name(self, st, pp) -> int:
        return self._text(pp, b"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED" if st == INVALIDATED else b"CUDA_ERROR_X")

    def _begin(self, stream, mode) -> int:
        self.capturing, self.pending = stream.value, []
        return 0

    def _end(self, stream, pgraph) -> int:
        assert stream.value == self.capturing
        self.capturing = None
        if self.end_status:
            return self.end_status
        gid = 0x6000 + len(self.graphs)
        self.graphs[gid] = self.pending
        pgraph.contents.value = gid
        return 0

    def _node(self, node) -> tuple:
        gid, i = divmod(node.value, 0x100)
        return self.graphs[gid][i]

    def _nodes(self, graph, nodes, count) -> int:
        n = len(self.graphs[graph.value])
        if nodes:
            for i in range(n):
                nodes[i] = graph.value * 0x100 + i
        count.contents.value = n
        return 0

    def _params(self, node, p) -> int:
        _, func, kern, grid, block = self._node(node)
        q = p.contents
        q.func, q.kern = func or None, kern or None
        q.gridDimX, q.gridDimY, q.gridDimZ = grid
        q.blockDimX, q.blockDimY, q.blockDimZ = block
        return 0


def _capture(lib) -> K.GraphCapture:
    drv = Driver(lib)
    return K.GraphCapture(drv)


def test_a_captured_call_names_its_kernels_in_order_and_runs_nothing():
    lib = FakeGraphDriver()
    cap = _capture(lib)
    got = cap.kernels(
        0x5100,
        lambda: lib.launch(
            (MEMSET, 0, 0, (0, 0, 0), (0, 0, 0)),
            (KERNEL, 0xF2, 0, (64, 2, 1), (128, 1, 1)),
            (KERNEL, 0xF1, 0, (9, 1, 1), (256, 1, 1)),
            (KERNEL, 0, 0xC1, (3, 1, 1), (32, 1, 1)),  # a library-managed kernel: named through its CUkernel
        ),
    )
    assert got == [
        K.Captured(XMMA.decode(), (64, 2, 1), (128, 1, 1)),
        K.Captured("void cudnn::cnn::conv2d_grouped_direct_kernel<float>(float*)", (9, 1, 1), (256, 1, 1)),
        K.Captured(XMMA.decode(), (3, 1, 1), (32, 1, 1)),
    ]
    (stream, mode), = [a for n, a in lib.log if n == "cuStreamBeginCapture_v2"]
    assert stream.value == 0x5100 and mode == K.CAPTURE_MODE_RELAXED
    assert lib.destroyed == [0x6000] and lib.capturing is None


def test_a_failed_call_ends_its_capture_and_raises_its_own_error():
    lib = FakeGraphDriver()
    cap = _capture(lib)

    def fails():
        lib.launch((KERNEL, 0xF1, 0, (1, 1, 1), (1, 1, 1)))
        raise E.CudnnError(5000, "CUDNN_STATUS_EXECUTION_FAILED", "capture invalidated", "cudnnConvolutionForward")

    with pytest.raises(E.CudnnError):
        cap.kernels(0x5100, fails)
    assert lib.capturing is None and lib.destroyed == [0x6000]


def test_an_invalidated_capture_is_a_cuda_error_not_a_fatal_one():
    lib = FakeGraphDriver(end_status=INVALIDATED)
    with pytest.raises(E.CudaError) as got:
        _capture(lib).kernels(0x5100, lambda: lib.launch((KERNEL, 0xF1, 0, (1, 1, 1), (1, 1, 1))))
    assert got.value.name == "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED" and lib.capturing is None


def test_an_older_driver_reads_the_v1_parameters_or_says_it_cannot_name_kernels():
    lib = FakeGraphDriver(without=("cuGraphKernelNodeGetParams_v2",))
    got = _capture(lib).kernels(0x5100, lambda: lib.launch((KERNEL, 0xF2, 0, (5, 1, 1), (64, 1, 1))))
    assert [k.name for k in got] == [XMMA.decode()]
    with pytest.raises(E.BenchError, match="cannot name captured kernels"):
        _capture(FakeGraphDriver(without=("cuFuncGetName", "cuKernelGetName")))


def test_the_parameter_struct_is_cudas_layout():
    p = K.KernelNodeParams
    assert p.gridDimX.offset == 8 and p.sharedMemBytes.offset == 32 and p.kernelParams.offset == 40
    assert p.kern.offset == 56 and ctypes.sizeof(p) == 72
