"""cudnn_bench.cupti: the activity record layout, demangling, the buffer callbacks, and
splitting a stream of kernel records into repeated calls."""
from __future__ import annotations

import ctypes

import pytest

from cudnn_bench import cupti as U
from cudnn_bench.cupti import KernelRecord

REC_BYTES = 248  # sizeof(CUpti_ActivityKernel13) in the CUPTI 13.5 header


def test_prefix_layout_matches_the_header():
    # offsetof printed by a C probe compiled against cupti_activity.h (CUPTI 13.5): identical in
    # CUpti_ActivityKernel4 ... CUpti_ActivityKernel13
    p = U.ActivityKernelPrefix
    want = {"kind": 0, "registersPerThread": 6, "start": 16, "end": 24, "completed": 32, "deviceId": 40,
            "streamId": 48, "gridX": 52, "gridY": 56, "gridZ": 60, "blockX": 64, "blockY": 68,
            "blockZ": 72, "staticSharedMemory": 76, "dynamicSharedMemory": 80, "correlationId": 92,
            "gridId": 96, "name": 104}
    assert {k: getattr(p, k).offset for k in want} == want
    assert ctypes.sizeof(p) == 112
    assert (U.CUPTI_ACTIVITY_KIND_KERNEL, U.CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == (3, 10)


def test_demangle():
    assert U.demangle("_Z3fooPfi") == "foo(float*, int)"
    name = U.demangle("_Z23implicit_convolve_sgemmIffLi128ELi5ELi5ELi3ELi3ELi3ELi1ELb0ELb0ELb1EEviiiPKT_iPT0_")
    assert name.startswith("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(")
    assert U.demangle("sm90_xmma_fprop_implicit_gemm_f32f32") == "sm90_xmma_fprop_implicit_gemm_f32f32"
    assert U.demangle("_Znot-a-name") == "_Znot-a-name"


def _write_record(buf_addr: int, names: list, kind: int = 10, start: int = 1000, end: int = 3000,
                  name: bytes = b"_Z3fooPf", grid=(4, 2, 1), block=(128, 1, 1), regs=40, ss=1024, sd=2048,
                  cluster=(2, 1, 1)):
    ctypes.memset(buf_addr, 0, REC_BYTES)
    r = U.ActivityKernelPrefix.from_address(buf_addr)
    s = ctypes.create_string_buffer(name)
    names.append(s)  # keep the string alive as CUPTI does
    r.kind, r.start, r.end, r.registersPerThread = kind, start, end, regs
    r.gridX, r.gridY, r.gridZ = grid
    r.blockX, r.blockY, r.blockZ = block
    r.staticSharedMemory, r.dynamicSharedMemory, r.correlationId = ss, sd, 77
    ctypes.c_void_p.from_address(buf_addr + 104).value = ctypes.addressof(s)
    for i, c in enumerate(cluster):  # clusterX/Y/Z, offsetof in CUpti_ActivityKernel8..13
        ctypes.c_uint32.from_address(buf_addr + 176 + 4 * i).value = c


def test_kernel_from_address():
    buf = ctypes.create_string_buffer(REC_BYTES)
    keep: list = []
    _write_record(ctypes.addressof(buf), keep)
    k = U.kernel_from_address(ctypes.addressof(buf))
    assert k == KernelRecord("foo(float*)", 1000, 3000, (4, 2, 1), (128, 1, 1), 40, 1024, 2048, 0, 77)
    assert k.duration_ms == pytest.approx(0.002) and k.blocks == 8 and k.threads == 128
    assert k.cluster is None  # not asked for: older record versions end before the cluster fields
    assert U.kernel_from_address(ctypes.addressof(buf), clusters=True).cluster == (2, 1, 1)


def test_cluster_offset_matches_the_header():
    # CUpti_ActivityKernel10 (CUPTI 13.0.85) and 13 (13.5.25): after name@104 come reserved0,
    # queued, submitted (8 each), 4 bytes, sharedMemoryExecuted, graphNodeId (8),
    # shmemLimitConfig, graphId, pAccessPolicyWindow (8), channelID, channelType, then clusterX
    assert 104 + 8 + 8 + 8 + 8 + 4 + 4 + 8 + 4 + 4 + 8 + 4 + 4 == U.CLUSTER_OFFSET == 176


class FakeCupti:
    """Calls the tracer's ctypes callbacks the way CUPTI does, with a buffer of real records."""

    def __init__(self, records: list[dict], version: int = 130001, dropped: int = 0):
        self.records, self.keep, self.enabled = records, [], []
        lib = self

        def get_version(out):
            out.contents.value = version
            return 0

        def num_dropped(ctx, stream, out):
            out.contents.value = dropped
            return 0

        def register(req, done):
            lib.req, lib.done = req, done
            return 0

        def get_next(buf, valid, rec):
            base = ctypes.addressof(buf.contents)
            cur = rec.contents.value
            nxt = base if cur is None else cur + REC_BYTES
            if nxt + REC_BYTES > base + valid:
                return U.CUPTI_ERROR_MAX_LIMIT_REACHED
            rec.contents.value = nxt
            return 0

        def flush(flag):
            bufp, size, maxr = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), ctypes.c_size_t()
            lib.req(ctypes.byref(bufp), ctypes.byref(size), ctypes.byref(maxr))
            assert size.value >= REC_BYTES * len(lib.records)
            addr = ctypes.addressof(bufp.contents)
            for i, r in enumerate(lib.records):
                _write_record(addr + i * REC_BYTES, lib.keep, **r)
            lib.done(None, 0, bufp, size.value, REC_BYTES * len(lib.records))
            lib.records = []
            return 0

        def result_string(status, out):
            return 0

        self.cuptiActivityRegisterCallbacks = register
        self.cuptiActivityGetNextRecord = get_next
        self.cuptiActivityFlushAll = flush
        self.cuptiGetResultString = result_string
        self.cuptiActivityEnable = lambda kind: self.enabled.append(kind) or 0
        self.cuptiActivityDisable = lambda kind: 0
        self.cuptiGetVersion = get_version
        self.cuptiActivityGetNumDroppedRecords = num_dropped


def test_tracer_reads_kernel_records_through_the_callbacks():
    lib = FakeCupti([{"start": 50, "end": 90, "name": b"_Z1bv"},
                     {"kind": 2},  # a memset record: not a kernel
                     {"start": 10, "end": 40, "name": b"sm90_xmma_gemm", "regs": 168}])
    tr = U.CuptiTracer(lib)
    assert lib.enabled == [U.CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]
    got = tr.take()
    assert [k.name for k in got] == ["sm90_xmma_gemm", "b()"]  # sorted by start time
    assert got[0].regs == 168 and got[1].duration_ms == pytest.approx(40e-6)
    assert tr.take() == [] and tr._buffers == {}  # buffers are handed back
    assert got[0].cluster == (2, 1, 1) and tr.dropped == 0


def test_tracer_counts_dropped_records_and_reads_clusters_by_version():
    lib = FakeCupti([{"start": 10, "end": 40, "name": b"k"}], version=17, dropped=3)
    tr = U.CuptiTracer(lib)
    got = tr.take()
    assert tr.version == 17 and tr.dropped == 3
    assert got[0].cluster is None  # CUDA 11.6's records end before the cluster fields


def _recs(names: list[str], t0: int = 0) -> list[KernelRecord]:
    out, t = [], t0
    for n in names:
        out.append(KernelRecord(n, t, t + 100, (1, 1, 1), (32, 1, 1), 32, 0, 0))
        t += 200
    return out


def test_split_calls_at_the_calls_launch_count():
    recs = _recs(["A", "B"] * 3)
    assert [[k.name for k in c] for c in U.split_calls(recs, 3)] == [["A", "B"]] * 3
    # a call that loops over 3 chunks of the batch: the chunk repeats, and is not taken for the call
    chunked = _recs(["A", "B"] * 3 * 4)
    assert [len(c) for c in U.split_calls(chunked, 4)] == [6] * 4
    # a call that launches the same kernel twice is not mistaken for two calls
    assert [len(c) for c in U.split_calls(_recs(["A", "A"] * 4), 4)] == [2] * 4
    # set-up kernels are no longer guessed away: the warm-up calls are traced apart from the timed ones
    assert U.split_calls(_recs(["init", "A", "B", "A", "B", "A", "B"]), 3) is None
    assert U.split_calls(_recs(["A", "B", "A", "C"]), 2) is None  # the calls must repeat the names
    assert U.split_calls(_recs(["A", "B", "C"]), 2) is None
    assert U.split_calls([], 3) is None


def test_split_calls_goes_by_launch_order_where_kernels_overlap():
    """A library's kernels on a stream of its own can start before those launched ahead of them:
    CUPTI's correlation ids, taken on the host at launch, keep each call's kernels together."""
    recs = []
    for call, starts in enumerate([(0, 50), (1000, 990), (2000, 2050)]):  # call 1: B starts first
        for j, (name, t) in enumerate(zip("AB", starts)):
            recs.append(KernelRecord(name, t, t + 100, (1, 1, 1), (32, 1, 1), 32, 0, 0, correlation=10 * call + j))
    by_start = sorted(recs, key=lambda r: (r.start, r.correlation))
    calls = U.split_calls(by_start, 3)
    assert [[k.name for k in c] for c in calls] == [["A", "B"]] * 3
    assert U.span_ms(calls, 3) == pytest.approx(150e-6)  # call 0's 150 ns, the median of 150, 110, 150


def test_summarize_uses_the_timed_calls():
    recs = []
    t = 0
    for i, dur in enumerate([900, 100, 110, 120, 130]):  # the first (warm-up) is slow
        recs.append(KernelRecord("A", t, t + dur, (i + 1, 1, 1), (64, 1, 1), 32, 0, 0))
        t += 1000
    s = U.summarize(U.split_calls(recs, 5), timed=4)
    assert len(s) == 1 and s[0].median_ms == pytest.approx(115e-6) and s[0].record.grid == (5, 1, 1)


def test_a_call_of_many_launches_gets_one_row_per_distinct_launch():
    """cuDNN runs FFT on a depthwise convolution as one loop per group: 2,500 launches made
    2,500 rows each naming all 2,500 kernels (1.7 GB of CSV on the H100). Repeats merge."""
    from cudnn_bench.measure import MAX_KERNEL_ROWS, kernel_rows

    def launch(name: str, t0: int, dur: int, grid=(4, 1, 1)) -> KernelRecord:
        return KernelRecord(name, t0, t0 + dur, grid, (128, 1, 1), 32, 0, 0)

    per_call = []
    t = 0
    for _ in range(3):  # three timed calls, each 2 x 20 launches (+ one of another geometry)
        call = []
        for _ in range(20):
            call += [launch("fft_r2c(float*)", t, 1000), launch("gemm(float*)", t + 1000, 3000)]
            t += 4000
        call.append(launch("gemm(float*)", t, 500, grid=(8, 1, 1)))
        t += 500
        per_call += call
    rows = kernel_rows([per_call[i * 41 : (i + 1) * 41] for i in range(3)], cc="9.0", sms=132)
    assert MAX_KERNEL_ROWS < 41 and len(rows) == 3
    by = {(r["kernel"], r["grid_x"]): r for r in rows}
    assert by[("fft_r2c(float*)", 4)]["launches"] == 20 and by[("gemm(float*)", 8)]["launches"] == 1
    assert by[("gemm(float*)", 4)]["kernel_time_ms"] == pytest.approx(20 * 0.003)
    assert by[("gemm(float*)", 4)]["role"] == "main"
    assert rows[0]["kernels"] == "fft_r2c(float*);gemm(float*);gemm(float*)"
    few = kernel_rows([per_call[:4]] * 3, cc="9.0", sms=132)  # 4 launches: kept apart
    assert few is not None and len(few) == 4 and all(r["launches"] == 1 for r in few)


def test_busy_is_the_time_some_kernel_ran_and_the_idle_gaps_between():
    """Three calls of three kernels: B overlaps A's tail by 20 ns, the host leaves the GPU idle
    before C (300, 500 and 400 ns); C ends inside nothing. Busy time is the union of their
    intervals, 250 ns, whatever the gap; the span holds the gap too."""
    calls = []
    for t, gap in ((0, 300), (10_000, 500), (20_000, 400)):
        a = KernelRecord("A", t, t + 100, (1, 1, 1), (32, 1, 1), 32, 0, 0)
        b = KernelRecord("B", t + 80, t + 180, (1, 1, 1), (32, 1, 1), 32, 0, 0)
        c = KernelRecord("C", t + 180 + gap, t + 250 + gap, (1, 1, 1), (32, 1, 1), 32, 0, 0)
        calls.append([a, b, c])
    ran, gaps = U.busy(calls, 3)
    assert ran == pytest.approx(250e-6) and gaps == 1
    assert U.span_ms(calls, 3) == pytest.approx(650e-6)  # 250 ns and the median gap, 400
    assert U.busy([], 3) == (pytest.approx(float("nan"), nan_ok=True),) * 2
