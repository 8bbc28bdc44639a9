import pandas as pd
import pytest

from seer.data.variants import CONV_ALGOS, UNKNOWN, annotate, classify, conv_algorithm, split_kernels, unknown_counts


@pytest.mark.parametrize(
    "name,kind,family,role,tile",
    [
        (
            "implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>",
            "implicit_convolve_sgemm",
            "IMPLICIT_GEMM",
            "main",
            (None, None),
        ),
        ("maxwell_scudnn_128x64_relu_small_nn_v1", "scudnn", "IMPLICIT_PRECOMP_GEMM", "main", (128, 64)),
        ("ampere_scudnn_128x64_relu_xregs_large_nn_v1", "scudnn", "IMPLICIT_PRECOMP_GEMM", "main", (128, 64)),
        (
            "sm80_xmma_fprop_implicit_gemm_indexed_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize64x64x8_stage3_"
            "warpsize1x4x1_g1_ffma_aligna4_alignc4",
            "xmma_fprop",
            "IMPLICIT_PRECOMP_GEMM",
            "main",
            (64, 64),
        ),
        (
            "void cudnn::cnn::im2col4d_kernel<float, long>(cudnn::cnn::im2col4d_params)",
            "im2col4d",
            "GEMM",
            "pre",
            (None, None),
        ),
        (
            "void flip_filter<float, float>(float*, float const*, int, int, int, int)",
            "flip_filter",
            "FFT",
            "pre",
            (None, None),
        ),
        ("fft2d_r2c_32x32<float, false, 0u, false>", "fft_r2c", "FFT", "pre", (None, None)),
        ("void fft2d_c2r_16x16<float, false>(float*)", "fft_c2r", "FFT", "post", (None, None)),
        (
            "cudnn::winograd::generateWinogradTilesKernel<0, float, float>",
            "winograd_tiles",
            "WINOGRAD",
            "pre",
            (None, None),
        ),
        (
            "volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
            "scudnn_winograd",
            "WINOGRAD",
            "main",
            (128, 128),
        ),
        (
            "cudnn::winograd_nonfused::winogradForwardData4x4<float, float>",
            "wn_data",
            "WINOGRAD_NONFUSED",
            "pre",
            (None, None),
        ),
        (
            "cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>",
            "wn_output",
            "WINOGRAD_NONFUSED",
            "post",
            (None, None),
        ),
        (
            "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>",
            "nchw_to_nhwc",
            "LAYOUT",
            "pre",
            (None, None),
        ),
        ("nhwcToNchwKernel<float>", "nhwc_to_nchw", "LAYOUT", "post", (None, None)),
        ("computeOffsetsKernel", "computeoffsetskernel", "IMPLICIT_PRECOMP_GEMM", "pre", (None, None)),
        ("maxwell_sgemm_128x64_nn", "sgemm", "BLAS", "main", (128, 64)),
        ("volta_sgemm_32x32_sliced1x4_tn", "sgemm", "BLAS", "main", (32, 32)),
        ("ampere_sgemm_128x128_nn", "sgemm", "BLAS", "main", (128, 128)),
        ("cutlass_80_simt_sgemm_128x64_8x5_nn_align1", "cutlass_gemm", "BLAS", "main", (128, 64)),
        (
            "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma",
            "xmma_gemm",
            "BLAS",
            "main",
            (128, 128),
        ),
        ("nvjet_tst_192x192_64x4_2x1_v_bz_coopA_NNT", "nvjet", "BLAS", "main", (192, 192)),
        ("gemmSN_NN_kernel", "gemmsn_nn_kernel", "BLAS", "main", (None, None)),
        (
            "void splitKreduce_kernel<32, 16, int, float>(cublasSplitKParams<float>)",
            "splitk_reduce",
            "BLAS",
            "post",
            (None, None),
        ),
        ("ampere_gcgemm_64x64_nt", "gcgemm", "FFT", "main", (64, 64)),
        (  # cuDNN 9.19's FFT engine on the H200
            "void DSE::regular_fft_pad<0, 1, 256, 16, 16, 1, float, float, float2>(float2*, float*, int, int3)",
            "fft_pad",
            "FFT",
            "pre",
            (None, None),
        ),
        (
            "void DSE::regular_fft_clip<1, 2, 128, 16, 32, 1, float, float, float2>(float*, float2*, int, int3)",
            "fft_clip",
            "FFT",
            "post",
            (None, None),
        ),
        (  # and its complex-to-complex transform, the main kernel of some H100 calls
            "void DSE::vector_fft<0, 1, 128, 8, 8, 1, float, float, float2>(float2*, float2*, int, int3, int3)",
            "fft_vector",
            "FFT",
            "pre",
            (None, None),
        ),
        # cuDNN 9.19's gradient kernels on the H200 (conv_bwd_data, conv_bwd_filter)
        ("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)", "dgrad_engine", None,
         "main", (None, None)),
        ("sm80_xmma_dgrad_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage3_warpsize1x2x1_g1_ffma",
         "xmma_dgrad", None, "main", (32, 32)),
        ("sm80_xmma_wgrad_implicit_gemm_indexed_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize32x32x8_stage3_warpsize1x2x1",
         "xmma_wgrad_indexed", None, "main", (32, 32)),
        ("sm90_xmma_depthwise_convolution_wgrad_tiling_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize1x8x8_1x3x3_1x1x1_1x1x1"
         "_stage3_warpsize4x1x1_g32_betaTrue_execute_kernel__5x_cudnn", "xmma_depthwise_wgrad", None, "main",
         (None, None)),
        ("void wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int)", "wgrad_alg0_engine", None, "main",
         (None, None)),
        ("void cudnn::cnn::wgrad2d_grouped_direct_kernel<false, true, int, float, float, float>(x)",
         "wgrad_grouped_direct", None, "main", (None, None)),
        ("void cudnn::winograd_nonfused::winogradWgradOutput4x4<float, float>(p)", "wn_wgrad_output",
         "WINOGRAD_NONFUSED", "post", (None, None)),
        # PyTorch's lookups and concatenation, cuBLASLt's older CUTLASS tensor-core kernels
        ("void at::native::(anonymous namespace)::indexSelectSmallIndex<float, long, unsigned int, 2, 2, -2>(x)",
         "index_select", "ELEMENTWISE", "main", (None, None)),
        ("void at::native::(anonymous namespace)::EmbeddingBag_updateOutputKernel_sum_mean<float, long>(x)",
         "embedding_bag", "ELEMENTWISE", "main", (None, None)),
        ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::(anonymous namespace)::"
         "OpaqueType<4u>, unsigned int, 2, 128, 1, 16, 4>(char*)", "cat_batched_copy", "ELEMENTWISE", "main",
         (None, None)),
        ("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>(x::Params)",
         "cutlass_tensorop", "BLAS", "main", (128, 128)),
        ("void cutlass::Kernel2<cutlass_75_wmma_tensorop_f16_s161616gemm_f16_32x32_64x1_tn_align1>(x::Params)",
         "cutlass_wmma_tensorop", "BLAS", "main", (32, 32)),
        # cuDNN 9.19 on the H100: tensor-core Test-set-II kernels, the backward grid's
        ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>(x)",
         "cutlass_fprop", "IMPLICIT_PRECOMP_GEMM", "main", (256, 64)),
        ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_128x128_16x4_nhwc_align4>(x)",
         "cutlass_fprop", "IMPLICIT_PRECOMP_GEMM", "main", (128, 128)),
        ("sm90_xmma_depthwise_convolution_fprop_tiling_f16f16_f32f32_f32_nhwckrsc_nhwc_tilesize1x8x8_1x3x3_1x1x1_1x1x1"
         "_stage4_warpsize4x1x1_g64_betaFalse_execute_kernel__5x_cudnn", "xmma_depthwise_fprop", None, "main",
         (None, None)),
        ("sm90_xmma_fprop_image_first_layer_f16f16_f32_f16_nhwckrsc_nhwc_hmma_k64c4r7s7_stride2x2_tile16x64x64_tensor1688"
         "_execute_kernel_kernel__5x_cudnn", "xmma_fprop_first_layer", None, "main", (None, None)),
        ("void cudnn::detail::dgrad_alg1_engine<float, 128, 6, 8, 3, 3, 5, false, true>(int, int)", "dgrad_alg1_engine",
         None, "main", (None, None)),
        ("void cudnn::engines_precompiled::scalePackedTensor_kernel<float, float>(long, float*, float)", "scale_packed",
         "LAYOUT", "pre", (None, None)),
        ("void nchwToFoldedNchwKernel<float, float, float, true, (cudnnKernelDataType_t)0>(int)", "nchw_fold", "LAYOUT",
         "pre", (None, None)),
        ("void gemvNSP_kernel<float2, float2, float2, float2, 1, 32, 4, 1024, false, x>(x)", "gemv_nsp", "BLAS", "main",
         (None, None)),
    ],
)
def test_classify_reference_names(name, kind, family, role, tile):
    v = classify(name)
    assert (v.kind, v.family, v.role, (v.tile_m, v.tile_n)) == (kind, family, role, tile)


def test_math_modes():
    assert classify("sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4").math == "tf32"
    assert (
        classify("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32").math == "bf16"
    )
    assert classify("maxwell_sgemm_128x64_nn").math == "ffma"


def test_unknown_is_named_not_defaulted():
    v = classify("some_brand_new_kernel_sm100")
    assert v.kind == UNKNOWN and v.family is None and v.op == UNKNOWN


@pytest.mark.parametrize(
    "kernels,main,algo",
    [
        ("implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>", None, "IMPLICIT_GEMM"),
        (";computeoffsetskernel<false,false>;volta_scudnn_128x64_relu_small_nn_v1", None, "IMPLICIT_PRECOMP_GEMM"),
        (
            "im2col4d_kernel<float, long>;explicit_convolve_sgemm<float, int, 128, 5, 5, 3, 3, 3, 0, false>",
            None,
            "GEMM",
        ),
        (
            "flip_filter<float, float>;fft2d_r2c_16x16<float>;fft2d_r2c_16x16<float>;volta_gcgemm_32x32_nt;fft2d_c2r_16x16<float, false>",
            None,
            "FFT",
        ),
        (
            "fft2d_r2c_32x32<float, false, 0u, false>;fft2d_r2c_32x32<float, false, 1u, true>;volta_gcgemm_32x32_nt;fft2d_c2r_32x32<float>",
            None,
            "FFT_TILING",
        ),
        (
            "generatewinogradtileskernel<0, float, float>;volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
            None,
            "WINOGRAD",
        ),
        (
            "winograd_nonfused::winogradforwarddata4x4<float, float>;winograd_nonfused::winogradforwardfilter4x4<float, float>;"
            "volta_sgemm_128x64_nn;winograd_nonfused::winogradforwardoutput4x4<float, float>",
            "volta_sgemm_128x64_nn",
            "WINOGRAD_NONFUSED",
        ),
        # the main kernel decides over stray helpers of another algorithm
        (
            "kern_precompute_indices<false>;precomputed_convolve_sgemm<float, 1024, 5, 5, 4, 3, 3, 1, false>;"
            "implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>",
            "precomputed_convolve_sgemm<float, 1024, 5, 5, 4, 3, 3, 1, false>",
            "IMPLICIT_PRECOMP_GEMM",
        ),
        ("volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn", UNKNOWN),
    ],
)
def test_conv_algorithm(kernels, main, algo):
    assert conv_algorithm(kernels, main) == algo


def test_split_kernels():
    assert split_kernels(";a;b") == ["a", "b"]
    assert split_kernels(None) == [] and split_kernels(float("nan")) == []


def test_every_neusight_gemm_and_conv_kernel_is_classified(neusight_path):
    """Every distinct kernel name in conv, bmm and linear (dominant and launched) is classified."""
    names: dict[str, int] = {}
    for op in ("conv", "bmm", "linear"):
        for f in sorted((neusight_path / op).glob("*.csv")):
            d = pd.read_csv(f, usecols=["Kernel Name", "Kernels"])
            for n in d["Kernel Name"]:
                names[n] = names.get(n, 0) + 1
            for ks in d["Kernels"]:
                for n in split_kernels(ks):
                    names[n] = names.get(n, 0) + 1
    unknown = {n: c for n, c in names.items() if classify(n).kind == UNKNOWN}
    assert len(names) > 100
    assert unknown == {}, f"{len(unknown)} unclassified kernel names: {list(unknown)[:5]}"


def test_every_neusight_conv_row_gets_an_algorithm(neusight):
    conv = neusight[neusight["op"] == "conv_fwd"]
    assert len(conv) > 20000
    assert conv["algo"].isin(list(CONV_ALGOS.values())).all()
    counts = conv["algo"].value_counts()
    # the autotuner picks every family somewhere in the data
    for algo in (
        "IMPLICIT_GEMM",
        "IMPLICIT_PRECOMP_GEMM",
        "GEMM",
        "FFT",
        "FFT_TILING",
        "WINOGRAD",
        "WINOGRAD_NONFUSED",
    ):
        assert counts.get(algo, 0) > 0


def test_annotate_counts_unknown():
    df = pd.DataFrame({"kernel": ["maxwell_sgemm_128x64_nn", "mystery_kernel", "maxwell_sgemm_128x64_nn"]})
    out = annotate(df)
    assert list(out["kind"]) == ["sgemm", UNKNOWN, "sgemm"]
    assert list(out["tile_m"][:1]) == [128.0]
    assert (out["variant"] == UNKNOWN).sum() == 1
    assert unknown_counts(df["kernel"]) == {"mystery_kernel": 1}
