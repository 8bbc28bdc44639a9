"""Kernel names -> kernel variants (op, algorithm family, tile sizes, math mode, role).

SEER fits one time model per kernel variant, so the variant must come from the kernel name
alone: `classify` parses one name; `conv_algorithm` reads which cuDNN forward algorithm a
convolution call ran from the list of kernels it launched. Names nothing matches are kind
"unknown" (counted by `annotate`), never a silent default.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import pandas as pd

# cudnnConvolutionFwdAlgo_t, the real enum (docs/reference.md, cuDNN convolution forward).
CONV_ALGOS: dict[int, str] = {
    0: "IMPLICIT_GEMM",
    1: "IMPLICIT_PRECOMP_GEMM",
    2: "GEMM",
    3: "DIRECT",
    4: "FFT",
    5: "FFT_TILING",
    6: "WINOGRAD",
    7: "WINOGRAD_NONFUSED",
}
CONV_ALGO_ID: dict[str, int] = {v: k for k, v in CONV_ALGOS.items()}
# cudnnConvolutionBwdDataAlgo_t and cudnnConvolutionBwdFilterAlgo_t (cudnn_cnn.h): the gradients
# of the input and of the filter. Fused WINOGRAD of the filter gradient is "not implemented".
CONV_BWD_DATA_ALGOS: dict[int, str] = {
    0: "ALGO_0",
    1: "ALGO_1",
    2: "FFT",
    3: "FFT_TILING",
    4: "WINOGRAD",
    5: "WINOGRAD_NONFUSED",
}
CONV_BWD_FILTER_ALGOS: dict[int, str] = {
    0: "ALGO_0",
    1: "ALGO_1",
    2: "FFT",
    3: "ALGO_3",
    4: "WINOGRAD",
    5: "WINOGRAD_NONFUSED",
    6: "FFT_TILING",
}
# a convolution's op in the record -> its direction's algorithms
CONV_OP_ALGOS: dict[str, dict[int, str]] = {
    "conv_fwd": CONV_ALGOS,
    "conv_bwd_data": CONV_BWD_DATA_ALGOS,
    "conv_bwd_filter": CONV_BWD_FILTER_ALGOS,
}
CONV_DIRECTION = {"conv_fwd": "forward", "conv_bwd_data": "backward-data", "conv_bwd_filter": "backward-filter"}
# Algorithm families of kernels: FFT covers FFT and FFT_TILING (same kernels, told apart by the
# call's kernel list); BLAS is a cuBLAS/cuBLASLt/CUTLASS GEMM kernel outside cuDNN.
FAMILIES = (
    "IMPLICIT_GEMM",
    "IMPLICIT_PRECOMP_GEMM",
    "GEMM",
    "FFT",
    "WINOGRAD",
    "WINOGRAD_NONFUSED",
    "BLAS",
    "LAYOUT",
    "ELEMENTWISE",
    "SOFTMAX",
    "LAYER_NORM",
)
ROLES = ("main", "pre", "post")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class KernelVariant:
    name: str
    kind: str  # short kernel category, e.g. "scudnn", "sgemm", "wn_data"; "unknown" if unparsed
    op: str  # conv_fwd, gemm, elementwise, softmax, layer_norm, copy, unknown
    family: str | None  # algorithm family; None where the name alone does not tell
    role: str = "main"
    arch: str | None = None  # name prefix: maxwell, volta, turing, ampere, sm80, sm90, ...
    tile_m: int | None = None
    tile_n: int | None = None
    tile_k: int | None = None
    math: str = "ffma"
    layout: str | None = None
    tag: str = ""  # what else tells variants apart: "relu_small", "tile148t", template args

    @property
    def label(self) -> str:
        """Short unique name of the variant, used as its key in fits."""
        parts = [self.kind]
        if self.tile_m and self.tile_n:
            parts.append(f"{self.tile_m}x{self.tile_n}" + (f"x{self.tile_k}" if self.tile_k else ""))
        if self.tag:
            parts.append(self.tag)
        if self.layout and self.op in ("gemm",):
            parts.append(self.layout)
        if self.math != "ffma":
            parts.append(self.math)
        return "_".join(parts)


def _math(n: str) -> str:
    if "bf16" in n:
        return "bf16"
    if "tf32" in n:
        return "tf32"
    if re.search(r"f16|hmma|h884|h1688|h16816", n):
        return "fp16"
    return "ffma"


def _ints(s: str) -> str:
    return "_".join(re.findall(r"\b\d+\b", s))


def _arch(prefix: str) -> str | None:
    m = re.search(r"(maxwell|pascal|volta|turing|ampere|hopper|sm\d+)$", prefix)
    return m.group(1) if m else None


def _strip_version(s: str) -> str:
    return re.sub(r"_v\d+$", "", s)


# Each rule: (regex on the lower-cased name, builder(match, name) -> KernelVariant).
def _kv(name, kind, op, family, **kw) -> KernelVariant:
    return KernelVariant(name=name, kind=kind, op=op, family=family, **kw)


_RULES: list[tuple[re.Pattern, Callable[..., KernelVariant]]] = []


def _rule(pattern: str):
    def deco(fn):
        _RULES.append((re.compile(pattern), fn))
        return fn

    return deco


@_rule(r"winograd_nonfused::winogradforward(data|filter|output)(\d+x\d+)")
def _wn(m, name):
    part, tile = m.group(1), m.group(2)
    return _kv(
        name, f"wn_{part}", "conv_fwd", "WINOGRAD_NONFUSED", role="post" if part == "output" else "pre", tag=tile
    )


@_rule(r"winograd_nonfused::winogradwgrad(data|delta|output)(\d+x\d+)")
def _wn_wgrad(m, name):
    """The filter gradient's Winograd non-fused pipeline: transforms of the data and of the
    output gradient, a GEMM, the inverse transform into the filter gradient."""
    part, tile = m.group(1), m.group(2)
    role = "post" if part == "output" else "pre"
    return _kv(name, f"wn_wgrad_{part}", "conv_bwd_filter", "WINOGRAD_NONFUSED", role=role, tag=tile)


@_rule(r"generatewinogradtileskernel<(\d+)")
def _wtiles(m, name):
    return _kv(name, "winograd_tiles", "conv_fwd", "WINOGRAD", role="pre", tag=m.group(1))


@_rule(r"^(?:cudnn_infer_|cudnn_)?(\w*?)_?scudnn_winograd_(\d+)x(\d+)_(.*)$")
def _wino(m, name):
    rest = m.group(4)
    tile = re.search(r"tile(\d+[a-z]?)", rest)
    tag = ("mobile_" if "mobile" in rest else "") + (f"tile{tile.group(1)}" if tile else _strip_version(rest))
    return _kv(
        name,
        "scudnn_winograd",
        "conv_fwd",
        "WINOGRAD",
        arch=_arch(m.group(1)),
        tile_m=int(m.group(2)),
        tile_n=int(m.group(3)),
        tag=tag,
    )


@_rule(r"^(?:cudnn_infer_|cudnn_)?(\w*?)_?scudnn_(\d+)x(\d+)_(.*)$")
def _scudnn(m, name):
    rest = _strip_version(m.group(4))
    layout = "nhwc" if "nhwc" in rest else "nchw"
    tag = re.sub(r"_(nn|nt|tn|tt)$", "", rest)
    return _kv(
        name,
        "scudnn",
        "conv_fwd",
        "IMPLICIT_PRECOMP_GEMM",
        arch=_arch(m.group(1)),
        tile_m=int(m.group(2)),
        tile_n=int(m.group(3)),
        layout=layout,
        tag=tag,
    )


@_rule(r"(computeoffsetskernel|computeboffsetskernel|kern_precompute_indices)")
def _offsets(m, name):
    return _kv(name, m.group(1), "conv_fwd", "IMPLICIT_PRECOMP_GEMM", role="pre")


@_rule(r"precomputed_convolve_sgemm<([^>]*)>")
def _precomp(m, name):
    return _kv(name, "precomputed_convolve_sgemm", "conv_fwd", "IMPLICIT_PRECOMP_GEMM", tag=_ints(m.group(1)))


@_rule(r"implicit_convolve(nd)?_sgemm<([^>]*)>")
def _implicit(m, name):
    return _kv(
        name, "implicit_convolve" + (m.group(1) or "") + "_sgemm", "conv_fwd", "IMPLICIT_GEMM", tag=_ints(m.group(2))
    )


@_rule(r"explicit_convolve_sgemm<([^>]*)>")
def _explicit(m, name):
    return _kv(name, "explicit_convolve_sgemm", "conv_fwd", "GEMM", tag=_ints(m.group(1)))


@_rule(r"im2col4d_kernel")
def _im2col(m, name):
    return _kv(name, "im2col4d", "conv_fwd", "GEMM", role="pre")


@_rule(r"(nchw|nhwc)to(nchw|nhwc)kernel")
def _layout(m, name):
    return _kv(
        name, f"{m.group(1)}_to_{m.group(2)}", "conv_fwd", "LAYOUT", role="pre" if m.group(2) == "nhwc" else "post"
    )


@_rule(r"flip_filter")
def _flip(m, name):
    return _kv(name, "flip_filter", "conv_fwd", "FFT", role="pre")


@_rule(r"fft2d_(r2c|c2r)_(\d+)x(\d+)")
def _fft(m, name):
    return _kv(
        name,
        f"fft_{m.group(1)}",
        "conv_fwd",
        "FFT",
        role="pre" if m.group(1) == "r2c" else "post",
        tag=f"{m.group(2)}x{m.group(3)}",
    )


@_rule(r"regular_fft_(pad|clip)<\s*\d+,\s*\d+,\s*(\d+),\s*(\d+),\s*(\d+)")
def _fft_dse(m, name):
    """cuDNN 9.19's FFT engine (namespace DSE): the padded forward transform before the
    pointwise product, the inverse transform clipped to the output after it."""
    return _kv(
        name,
        f"fft_{m.group(1)}",
        "conv_fwd",
        "FFT",
        role="pre" if m.group(1) == "pad" else "post",
        tag="x".join(m.group(i) for i in (2, 3, 4)),
    )


@_rule(r"vector_fft<\s*(\d+),\s*\d+,\s*(\d+),\s*(\d+),\s*(\d+)")
def _fft_dse_vector(m, name):
    """The same engine's complex-to-complex transform along the second axis, forward (first
    template argument 0, as in regular_fft_pad) or inverse (1); first seen on the H100 in 1x1
    and 128- or 256-point calls."""
    return _kv(
        name,
        "fft_vector",
        "conv_fwd",
        "FFT",
        role="pre" if m.group(1) == "0" else "post",
        tag="x".join(m.group(i) for i in (2, 3, 4)),
    )


@_rule(r"region_transform_abc")
def _region(m, name):
    return _kv(name, "fft_region_transform", "conv_fwd", "FFT", role="pre")


def _bits(template: str) -> str:
    """A template's bool arguments as bits ('true, false' -> '10')."""
    return "".join("1" if b == "true" else "0" for b in re.findall(r"\b(true|false)\b", template))


def _template_tag(template: str) -> str:
    """A template's bools as bits, then its integer arguments: what tells its instances apart."""
    return f"{_bits(template)}_{_ints(template)}"


@_rule(r"conv2d_grouped_direct_kernel<([^>]*)>")
def _grouped_direct(m, name):
    # cuDNN 9's direct kernel (sm_90 runs it for GEMM and IMPLICIT_GEMM on many shapes, and for
    # grouped convolutions); its bools and the two ints (filter-size specialisation) tell variants apart
    return _kv(name, "grouped_direct", "conv_fwd", None, tag=_template_tag(m.group(1)))


# The gradients' own kernels (cuDNN's backward-data and backward-filter, conv_bwd_* records);
# the FFT, Winograd non-fused and layout kernels they share with the forward have its rules.
# Family None: the call's algorithm is in its record, and one kernel serves several of them
# (wgrad_alg0_engine runs both ALGO_0 and ALGO_3 of the filter gradient on the H200).
_GRAD_OP = {"d": "conv_bwd_data", "w": "conv_bwd_filter"}


@_rule(r"([dw])grad2d_grouped_direct_kernel<([^>]*)>")
def _grad_grouped_direct(m, name):
    return _kv(name, f"{m.group(1)}grad_grouped_direct", _GRAD_OP[m.group(1)], None, tag=_template_tag(m.group(2)))


@_rule(r"\b(dgrad_engine|dgrad_alg1_engine|dgrad2d_alg1_1|wgrad_alg0_engine|wgrad_alg1_engine)<([^>]*)>")
def _grad_engine(m, name):
    return _kv(name, m.group(1), _GRAD_OP[m.group(1)[0]], None, tag=_template_tag(m.group(2)))


@_rule(r"sm(\d+)_xmma_([dw])grad_implicit_gemm(_indexed)?_(.*)")
def _xmma_grad(m, name):
    rest = m.group(4)
    t = re.search(r"tilesize(\d+)x(\d+)x(\d+)", rest)
    st = re.search(r"stage(\d+)", rest)
    return _kv(
        name,
        f"xmma_{m.group(2)}grad" + (m.group(3) or ""),
        _GRAD_OP[m.group(2)],
        None,
        arch=f"sm{m.group(1)}",
        tile_m=int(t.group(1)) if t else None,
        tile_n=int(t.group(2)) if t else None,
        tile_k=int(t.group(3)) if t else None,
        math=_math(rest),
        layout="nhwc" if "nhwc" in rest else "nchw",
        tag=f"s{st.group(1)}" if st else "",
    )


@_rule(r"sm(\d+)_xmma_depthwise_convolution_([dw])grad_tiling_\w*?tilesize([\dx_]+?)_stage")
def _xmma_depthwise_grad(m, name):
    # the tile of the output, the filter, the stride and the dilation (1x8x8_1x3x3_1x1x1_1x1x1)
    return _kv(
        name, f"xmma_depthwise_{m.group(2)}grad", _GRAD_OP[m.group(2)], None, arch=f"sm{m.group(1)}", tag=m.group(3)
    )


@_rule(r"sm(\d+)_xmma_depthwise_convolution_fprop_tiling_\w*?tilesize([\dx_]+?)_stage")
def _xmma_depthwise_fprop(m, name):
    # tensor-core depthwise forward (the H100's BF16/FP16 MobileNet layers): tiles as the gradients'
    return _kv(name, "xmma_depthwise_fprop", "conv_fwd", None, arch=f"sm{m.group(1)}", tag=m.group(2), math=_math(name))


@_rule(r"sm(\d+)_xmma_fprop_image_first_layer_\w*?_(k\d+c\d+r\d+s\d+)_stride(\d+x\d+)")
def _xmma_first_layer(m, name):
    """cuDNN's kernel for a network's first layer of few input channels (ResNet-50's conv1 in FP16)."""
    tag = f"{m.group(2)}_s{m.group(3)}"
    return _kv(name, "xmma_fprop_first_layer", "conv_fwd", None, arch=f"sm{m.group(1)}", tag=tag, math=_math(name))


@_rule(r"cutlass_tensorop_(?:\w+?_)?s(\d+)fprop_(optimized|analytic)_\w*?(\d+)x(\d+)_(\d+)x(\d+)_(nhwc|nchw)")
def _cutlass_fprop(m, name):
    """cuDNN's CUTLASS tensor-core implicit GEMMs (cutlass_tensorop_bf16_s16816fprop_optimized_bf16_
    64x64_64x5_nhwc_align8): threadblock tile m x n, then k x stages."""
    return _kv(
        name,
        "cutlass_fprop",
        "conv_fwd",
        "IMPLICIT_PRECOMP_GEMM",
        tile_m=int(m.group(3)),
        tile_n=int(m.group(4)),
        tile_k=int(m.group(5)),
        math=_math(name),
        layout=m.group(7),
        tag=f"s{m.group(6)}",
    )


@_rule(r"init_device_workspace_kernel<")
def _init_workspace(m, name):
    """The workspace set-up before a Hopper warp-specialized implicit GEMM (cuDNN's cask plugin)."""
    return _kv(name, "init_workspace", "conv_fwd", "LAYOUT", role="pre")


@_rule(r"tensortransformgeneric")
def _tensor_transform(m, name):
    return _kv(name, "tensor_transform", "conv_fwd", "LAYOUT", role="pre")


_ENGINE_LAYOUT = {
    "converttensor": "convert_tensor",
    "transposedirect": "transpose_direct",
    "scalepackedtensor": "scale_packed",
    "scaletensor": "scale_tensor",
}


@_rule(rf"engines_precompiled::({'|'.join(_ENGINE_LAYOUT)})_kernel")
def _engine_layout(m, name):
    """cuDNN's layout and scaling passes around a gradient's main kernel (beta scaling of dx or dw,
    conversions before FFT_TILING)."""
    return _kv(name, _ENGINE_LAYOUT[m.group(1)], "conv_fwd", "LAYOUT", role="pre")


@_rule(r"(nchwaddpadding|nchwtofoldednchw)kernel<")
def _fold(m, name):
    return _kv(name, "nchw_add_padding" if "padding" in m.group(1) else "nchw_fold", "conv_fwd", "LAYOUT", role="pre")


@_rule(r"pointwise_mult_and_sum_complex<([^>]*)>")
def _fft_pointwise(m, name):
    return _kv(name, "fft_pointwise", "conv_fwd", "FFT", tag=_ints(m.group(1)))


@_rule(r"fft1d_(r2c|c2r)_(\d+)")
def _fft1d(m, name):
    return _kv(
        name, f"fft1d_{m.group(1)}", "conv_fwd", "FFT", role="pre" if m.group(1) == "r2c" else "post", tag=m.group(2)
    )


@_rule(r"generictranspose_kernel")
def _transpose(m, name):
    return _kv(name, "generic_transpose", "conv_fwd", "LAYOUT", role="pre")


@_rule(r"^(\w*?)_?gcgemm_(\d+)x(\d+)_(nn|nt|tn|tt)")
def _gcgemm(m, name):
    return _kv(
        name,
        "gcgemm",
        "conv_fwd",
        "FFT",
        arch=_arch(m.group(1)),
        tile_m=int(m.group(2)),
        tile_n=int(m.group(3)),
        layout=m.group(4),
        tag=m.group(4),
    )


@_rule(r"sm(\d+)_xmma_fprop_implicit_gemm_(.*)")
def _xmma_fprop(m, name):
    rest = m.group(2)
    t = re.search(r"tilesize(\d+)x(\d+)x(\d+)", rest)
    st = re.search(r"stage(\d+)", rest)
    layout = "nhwc" if "nhwc" in rest else "nchw"
    return _kv(
        name,
        "xmma_fprop",
        "conv_fwd",
        "IMPLICIT_PRECOMP_GEMM",
        arch=f"sm{m.group(1)}",
        tile_m=int(t.group(1)) if t else None,
        tile_n=int(t.group(2)) if t else None,
        tile_k=int(t.group(3)) if t else None,
        math=_math(rest),
        layout=layout,
        tag=f"s{st.group(1)}" if st else "",
    )


@_rule(r"^(\w*?)_?sgemm_(\d+)x(\d+)(?:_(sliced\d+x\d+))?(?:_ldg\d+)?_(nn|nt|tn|tt)")
def _sgemm(m, name):
    return _kv(
        name,
        "sgemm",
        "gemm",
        "BLAS",
        arch=_arch(m.group(1)),
        tile_m=int(m.group(2)),
        tile_n=int(m.group(3)),
        layout=m.group(5),
        tag=m.group(4) or "",
    )


@_rule(r"^sgemm_(\d+)x(\d+)x(\d+)_(nn|nt|tn|tt)(_vec)?")
def _sgemm3(m, name):
    return _kv(
        name,
        "sgemm",
        "gemm",
        "BLAS",
        tile_m=int(m.group(1)),
        tile_n=int(m.group(2)),
        tile_k=int(m.group(3)),
        layout=m.group(4),
        tag="vec" if m.group(5) else "",
    )


@_rule(r"cutlass_(\d+)_(simt|tensorop)_(\w*?)gemm_(\d+)x(\d+)_(\d+)x(\d+)_(nn|nt|tn|tt)")
def _cutlass(m, name):
    math = "ffma" if m.group(2) == "simt" else _math(m.group(3) + "tf32" * (m.group(3)[:1] == "s"))
    return _kv(
        name,
        "cutlass_gemm",
        "gemm",
        "BLAS",
        arch=f"sm{m.group(1)}",
        tile_m=int(m.group(4)),
        tile_n=int(m.group(5)),
        tile_k=int(m.group(6)),
        math=math,
        layout=m.group(8),
        tag=f"s{m.group(7)}",
    )


@_rule(r"cutlass_(\d+)_((?:wmma_)?tensorop)_(\w*?)gemm_(?:([a-z]\w*?)_)?(\d+)x(\d+)(?:_(\d+)x(\d+))?_(nn|nt|tn|tt)")
def _cutlass_tensorop(m, name):
    """cuBLASLt's older CUTLASS tensor-core kernels (cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn,
    cutlass_75_wmma_tensorop_f16_s161616gemm_f16_32x32_64x1_tn): instruction shape and element
    types in the name, one tile."""
    types = f"{m.group(3)}{m.group(4) or ''}"
    k = f"_{m.group(7)}x{m.group(8)}" if m.group(7) else ""
    return _kv(
        name,
        "cutlass_" + m.group(2),
        "gemm",
        "BLAS",
        arch=f"sm{m.group(1)}",
        tile_m=int(m.group(5)),
        tile_n=int(m.group(6)),
        math=_math(types),
        layout=m.group(9),
        tag=f"{m.group(3).rstrip('_')}_{m.group(4) or ''}{k}",
    )


@_rule(r"sm(\d+)_xmma_gemm_(.*)")
def _xmma_gemm(m, name):
    rest = m.group(2)
    t = re.search(r"tilesize(\d+)x(\d+)x(\d+)", rest)
    st = re.search(r"stage(\d+)", rest)
    lay = re.search(r"_(nn|nt|tn|tt)_", rest)
    sk = "splitk_" if "splitk" in rest else ""
    return _kv(
        name,
        "xmma_gemm",
        "gemm",
        "BLAS",
        arch=f"sm{m.group(1)}",
        tile_m=int(t.group(1)) if t else None,
        tile_n=int(t.group(2)) if t else None,
        tile_k=int(t.group(3)) if t else None,
        math=_math(rest),
        layout=lay.group(1) if lay else None,
        tag=sk + (f"s{st.group(1)}" if st else ""),
    )


@_rule(r"nvjet_(\w+?)_(\d+)x(\d+)_(\d+)x(\d+)(.*)")
def _nvjet(m, name):
    return _kv(
        name,
        "nvjet",
        "gemm",
        "BLAS",
        arch="sm90",
        tile_m=int(m.group(2)),
        tile_n=int(m.group(3)),
        tile_k=int(m.group(4)),
        math=_math(m.group(1)),
        tag=f"{m.group(1)}_s{m.group(5)}{_strip_version(m.group(6)).lower()}",
    )


@_rule(r"(gemmsn_(?:nn|tn|nt)_kernel|gemv2[tn]_kernel|gemmk1_kernel|gemm_kernel)")
def _small_gemm(m, name):
    return _kv(name, m.group(1), "gemm", "BLAS")


@_rule(r"gemvnsp_kernel<([^>]*)>")
def _gemv_nsp(m, name):
    t = m.group(1)
    return _kv(name, "gemv_nsp", "gemm", "BLAS", tag=_template_tag(t) + ("_c" if "float2" in t else ""))


@_rule(r"\bscal_kernel<([^>]*)>")
def _scal(m, name):
    return _kv(name, "scal", "gemm", "BLAS", role="pre", tag=_template_tag(m.group(1)))


@_rule(r"gemvx::kernel<([^>]*)>")
def _gemvx(m, name):
    t = m.group(1)
    return _kv(name, "gemvx", "gemm", "BLAS", tag=_template_tag(t) + ("_c" if "float2" in t else ""))


@_rule(r"(magma_sgemmex_kernel|sgemm_largek_lds64)<([^>]*)>")
def _blas_template(m, name):
    kind = "magma_sgemm" if m.group(1).startswith("magma") else "sgemm_largek"
    return _kv(name, kind, "gemm", "BLAS", tag=_template_tag(m.group(2)))


@_rule(r"splitkreduce_kernel")
def _splitk(m, name):
    return _kv(name, "splitk_reduce", "gemm", "BLAS", role="post")


@_rule(r"catarraybatchedcopy(_\w+?)?<([^>]*)>")
def _cat(m, name):
    return _kv(name, "cat_batched_copy", "concat", "ELEMENTWISE", tag=(m.group(1) or "").strip("_") + _ints(m.group(2)))


@_rule(r"(embeddingbag_updateoutputkernel_\w+|indexselect(?:small|large)index|vectorized_gather_kernel)<([^>]*)>")
def _lookup(m, name):
    """nn.Embedding's gather (index_select, or a vectorized gather) and EmbeddingBag's sum."""
    kind = {"i": "index_select", "v": "gather"}.get(m.group(1)[0], "embedding_bag")
    tag = ("small" if "small" in m.group(1) else "large") if kind == "index_select" else _ints(m.group(2))
    return _kv(name, kind, "embedding_fwd", "ELEMENTWISE", tag=tag)


@_rule(r"direct_copy_kernel")
def _copy(m, name):
    return _kv(name, "direct_copy", "copy", "ELEMENTWISE", role="pre")


_ELEMENTWISE_FN = (
    ("gelu", "gelu"),
    ("tanh", "tanh"),
    ("sigmoid", "sigmoid"),
    ("silu", "silu"),
    ("clamp", "relu"),
    ("threshold", "relu"),
    ("relu", "relu"),
    ("functor_add", "add"),
    ("addfunctor", "add"),
    ("mulfunctor", "mul"),
    ("functor_mul", "mul"),
    ("divfunctor", "div"),
    ("functor_div", "div"),
    ("functor_sub", "sub"),
    ("fill", "fill"),
)


@_rule(r"elementwise_kernel")
def _elementwise(m, name):
    low = name.lower()
    fn = next((f for key, f in _ELEMENTWISE_FN if key in low), "other")
    return _kv(name, "elementwise", "elementwise", "ELEMENTWISE", tag=fn)


@_rule(r"softmax")
def _softmax(m, name):
    return _kv(name, "softmax", "softmax", "SOFTMAX", tag="warp" if "softmax_warp" in m.string else "block")


@_rule(r"layer_?norm|rowwisemoments")
def _ln(m, name):
    return _kv(name, "layer_norm", "layer_norm", "LAYER_NORM")


def short_name(name: str) -> str:
    """The part of a demangled name that identifies the kernel: no 'void ', no argument list."""
    s = name.strip()
    s = re.sub(r"^void\s+", "", s).replace("(anonymous namespace)", "anon")
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):  # drop the trailing (args) but keep template <...>
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    return s[:cut]


@cache
def classify(name: str) -> KernelVariant:
    """Parse one kernel name (mangled case or the lower-cased form of PyTorch's profiler)."""
    if not isinstance(name, str) or not name.strip():
        return KernelVariant(name=str(name), kind=UNKNOWN, op=UNKNOWN, family=None)
    short = short_name(name).lower()
    low = name.lower()
    for pat, fn in _RULES:
        m = pat.search(short) or (pat.search(low) if fn is _copy else None)
        if m:
            return fn(m, name)
    return KernelVariant(name=name, kind=UNKNOWN, op=UNKNOWN, family=None)


# Kernels that name a call's engine, and so its variant, where the call runs a fixed pipeline of
# kernels and which is longest changes with the sizes: a Winograd non-fused call transforms data
# and filter, runs a GEMM and transforms the output, and its transform tile (4x4 for 3x3 filters,
# 9x9 for 5x5) is cuDNN's choice while the longest kernel is any of the four. Keyed by its
# longest kernel, the H100's 126 such calls fell into 9 variants, 6 of them too few to model,
# and Test-set-I's RMSPE was 115%; keyed by the data transform, 21% (python -m seer.evaluate
# --set I --by algo).
ENGINE_KINDS = frozenset({"wn_data"})


def is_engine(kinds: pd.Series) -> pd.Series:
    """Whether each kernel kind names its call's engine (ENGINE_KINDS)."""
    return kinds.isin(list(ENGINE_KINDS))


_CONV_FAMILY_ORDER = ("WINOGRAD_NONFUSED", "WINOGRAD", "FFT", "GEMM", "IMPLICIT_PRECOMP_GEMM", "IMPLICIT_GEMM")


def split_kernels(kernels: str | Sequence[str] | None) -> list[str]:
    """A ';'-joined kernel list (NeuSight's and the harness's `kernels` column) as a list."""
    if kernels is None or (isinstance(kernels, float)):
        return []
    if isinstance(kernels, str):
        return [k for k in kernels.split(";") if k.strip()]
    return [k for k in kernels if k and str(k).strip()]


def conv_algorithm(kernels: str | Sequence[str], main: str | None = None) -> str:
    """The cuDNN forward algorithm a convolution call ran, from the kernels it launched.

    The main (longest) kernel decides where it belongs to one algorithm; an sgemm main kernel
    defers to its helpers (Winograd transforms -> WINOGRAD_NONFUSED, im2col -> GEMM). FFT and
    FFT_TILING launch the same kernels: a call that flips the filter is FFT (whole-image
    transform), one that does not is FFT_TILING (32x32 tiles). Returns "unknown" when nothing
    identifies an algorithm.
    """
    infos = [classify(k) for k in split_kernels(kernels)]
    if main:
        mi = classify(main)
        infos.append(mi)
        if mi.op == "conv_fwd" and mi.family in _CONV_FAMILY_ORDER and mi.family != "FFT" and mi.role == "main":
            return mi.family
    fams = {i.family for i in infos if i.op == "conv_fwd"}
    for fam in _CONV_FAMILY_ORDER:
        if fam in fams:
            if fam == "FFT":
                return "FFT" if any(i.kind == "flip_filter" for i in infos) else "FFT_TILING"
            return fam
    return UNKNOWN


def annotate(df: pd.DataFrame, column: str = "kernel") -> pd.DataFrame:
    """Add the parsed variant fields of `column` (kind, family, role, tiles, math, variant)."""
    names = df[column].astype("string").fillna("")
    uniq = pd.unique(names)
    info = {n: classify(n) for n in uniq}
    out = df.copy()
    for f in ("kind", "family", "arch", "tile_m", "tile_n", "tile_k", "math"):
        out[f] = names.map({n: getattr(v, f) for n, v in info.items()})
    out["kernel_role"] = names.map({n: v.role for n, v in info.items()})
    out["variant"] = names.map({n: v.label for n, v in info.items()})
    for f in ("tile_m", "tile_n", "tile_k"):
        out[f] = pd.to_numeric(out[f], errors="coerce").astype("float64")
    return out


def unknown_counts(names: Iterable[str]) -> dict[str, int]:
    """How many of the names (with repeats) are of kind unknown, keyed by name."""
    counts: dict[str, int] = {}
    for n in names:
        if classify(n).kind == UNKNOWN:
            counts[n] = counts.get(n, 0) + 1
    return counts
