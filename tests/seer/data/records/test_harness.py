"""A harness call's time: the kernels' GPU span where they cover the output, event time only
where cuDNN chunked the batch, flagged where the launch geometry cannot tell."""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.data.records import harness

XMMA = (
    "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage3_warpsize1x2x1_g1_"
    "ffma_aligna4_alignc4_execute_kernel__5x_cudnn"
)


def _call(call_id: int, algo: str, kernel: str, blocks: int, event: float, span: float) -> dict:
    # batch 2, 8x8 output (3x3, pad 1), 32 output channels: 2*8*8*32 = 4096 outputs = 4 tiles of 32x32
    return dict(op="conv_fwd", call_id=call_id, algo=algo, kernel=kernel, role="main", blocks=blocks, batch=2,
                c_in=16, h_in=8, w_in=8, c_out=32, kh=3, kw=3, stride_h=1, stride_w=1, pad_h=1, pad_w=1, dil_h=1,
                dil_w=1, groups=1, time_ms=event, gpu_span_ms=span, m=np.nan, n=np.nan)  # fmt: skip


def test_time_basis_from_the_kernels_cover_of_the_output():
    df = pd.DataFrame([
        _call(1, "IMPLICIT_PRECOMP_GEMM", XMMA, 4, 0.9, 0.05),  # covers the output: a host gap, not a chunk
        _call(2, "IMPLICIT_PRECOMP_GEMM", XMMA, 2, 0.9, 0.05),  # half the output: cuDNN chunked the batch
        _call(3, "FFT", "fft2d_r2c_32x32", 64, 0.9, 0.05),  # FFT: the grid says nothing
        _call(4, "IMPLICIT_PRECOMP_GEMM", XMMA, 4, 0.051, 0.05),  # events = span: nothing to explain
    ])  # fmt: skip
    out = harness.kernel_time(df)
    assert list(out["time_basis"]) == [harness.SPAN, harness.CHUNKED, harness.UNVERIFIED, harness.SPAN]
    np.testing.assert_allclose(out["time_ms"], [0.05, 0.9, 0.9, 0.05])
    assert list(out["span_partial"]) == [False, True, True, False]  # their kernel rows are not learned from
    assert harness.kernel_time(out) is out  # idempotent


def test_no_spans_no_basis():
    df = pd.DataFrame([_call(1, "GEMM", XMMA, 4, 0.9, np.nan)])
    assert "time_basis" not in harness.kernel_time(df)


def _kernels(call_id: int, times: list[float], launches: list[int], span: float, event: float) -> list[dict]:
    """The kernel rows of one FFT call (each row: a distinct launch, its launches' times summed)."""
    base = _call(call_id, "FFT", "fft2d_r2c_32x32", 64, event, span)
    return [{**base, "kernel_time_ms": t, "launches": n, "role": "main" if i == 0 else "post"}
            for i, (t, n) in enumerate(zip(times, launches))]  # fmt: skip


def test_a_span_with_the_hosts_gaps_between_launches_is_timed_by_its_kernels():
    gap = harness.LAUNCH_GAP_MS
    df = pd.DataFrame([
        *_kernels(1, [0.10, 0.20], [1, 24], span=0.50, event=0.52),  # the host held the GPU idle
        *_kernels(2, [0.30, 0.30], [1, 1], span=0.40, event=0.41),  # overlapping kernels: the span stands
        *_kernels(3, [0.10, np.nan], [1, 1], span=0.50, event=0.52),  # a kernel without time: the span stands
        *_kernels(4, [0.05], [1], span=0.06, event=0.07),  # one launch: its span is its kernel
    ])  # fmt: skip
    out = harness.kernel_time(df)
    busy = 0.30 + 24 * gap
    assert list(out["time_basis"]) == [harness.BUSY] * 2 + [harness.SPAN] * 5
    np.testing.assert_allclose(out["time_ms"], [busy, busy, 0.40, 0.40, 0.50, 0.50, 0.06])
    np.testing.assert_allclose(out["event_time_ms"], [0.52, 0.52, 0.41, 0.41, 0.52, 0.52, 0.07])
    np.testing.assert_allclose(out["gpu_span_ms"], df["gpu_span_ms"])  # the span is kept beside
    assert harness.kernel_time(out) is out


def test_the_harness_measured_busy_time_stands_where_it_has_one():
    gap = harness.LAUNCH_GAP_MS
    rows = [
        *_kernels(1, [0.30, 0.30], [1, 1], span=0.50, event=0.52),  # overlapping, then idle: measured 0.40, 1 gap
        *_kernels(2, [0.10, 0.20], [1, 24], span=0.50, event=0.52),  # an older record: the kernels summed
    ]
    df = pd.DataFrame(rows).assign(gpu_busy_ms=[0.40, 0.40, np.nan, np.nan], gpu_gaps=[1, 1, np.nan, np.nan])
    out = harness.kernel_time(df)
    np.testing.assert_allclose(out["time_ms"], [0.40 + gap] * 2 + [0.30 + 24 * gap] * 2)
    assert list(out["time_basis"]) == [harness.BUSY] * 4
