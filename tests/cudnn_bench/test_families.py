"""cudnn_bench.families: the convolution layers of real CNN families, generated from their
definitions (known layer counts, the structures each family is known for, agreement with the
Test-set-II layer lists written separately in cudnn_bench.suites, and, where torchvision is
installed, with torchvision's own modules)."""
from __future__ import annotations

import collections

import pytest

from cudnn_bench import families as F
from cudnn_bench import suites as S


def _count(layers, part: str) -> int:
    return sum(1 for ly in layers if part in ly.name)


@pytest.mark.parametrize("build,count", [
    (F.resnet18, 20), (F.resnet34, 36), (F.resnet50, 53), (F.resnet101, 104), (F.resnet152, 155),
    (F.vgg11, 8), (F.vgg16, 13), (F.vgg19, 16), (F.mobilenet_v2, 52), (F.mobilenet_v3_large, 62),
    (F.mobilenet_v3_small, 52), (F.densenet121, 120), (F.convnext_tiny, 22), (F.inception_v3, 94),
])
def test_known_layer_counts(build, count):
    assert len(build((224, 224))) == count


def test_resnet50_has_53_convolutions_with_four_downsamples():
    layers = F.resnet50((224, 224))
    assert len(layers) == 53 and _count(layers, "downsample") == 4
    assert [ly.out_hw for ly in layers if ly.name.endswith("layer4.2.conv3")] == [(7, 7)]
    # v1.5: the stride sits in the 3x3 conv of the first block of layers 2-4
    assert [ly.stride for ly in layers if ly.name.endswith(".0.conv2")] == [1, 2, 2, 2]


def test_the_families_agree_with_the_test_set_ii_lists():
    """Two definitions written apart: the generators and suites' Test-set-II layer tables."""
    def shapes(layers):
        return sorted((ly.c_in, ly.h, ly.c_out, ly.kh, ly.stride, ly.pad_h, ly.groups) for ly in layers)

    def table(net):
        return sorted((ci, hw, co, k, s, p, g) for _, ci, hw, co, k, s, p, g in net)

    assert shapes(F.resnet50((224, 224))) == table(S.RESNET50)
    assert shapes(F.vgg16((224, 224))) == table(S.VGG16)
    assert shapes(F.mobilenet_v2((224, 224))) == table(S.MOBILENET_V2)


def test_depthwise_grouped_and_dilated_layers_where_the_families_have_them():
    mnv2 = F.mobilenet_v2((224, 224))
    dw = [ly for ly in mnv2 if ly.name.endswith("depthwise")]
    assert len(dw) == 17 and all(ly.groups == ly.c_in == ly.c_out for ly in dw)
    eff = [ly for ly in F.efficientnet(0) if ly.name.endswith("depthwise")]
    assert {ly.kh for ly in eff} == {3, 5} and all(ly.groups == ly.c_in for ly in eff)
    assert {ly.groups for ly in F.resnext50_32x4d((224, 224)) if ly.kh == 3 and ly.c_in > 3} == {32}
    regnet = [ly for ly in F.regnet_y_400mf((224, 224)) if ly.name.endswith("f.b")]
    assert all(ly.c_in // ly.groups == 8 for ly in regnet)  # group width 8
    assert {ly.dil for ly in F.deeplabv3_resnet50((520, 520))} == {1, 2, 4, 12, 24, 36}
    assert {ly.dil for ly in F.deeplabv3_mobilenet_v3_large((520, 520))} == {1, 2, 12, 24, 36}
    assert {(ly.kh, ly.kw) for ly in F.inception_v3()} >= {(1, 7), (7, 1), (1, 3), (3, 1), (5, 5)}
    ssd = F.ssd300_vgg16()
    assert [ly.dil for ly in ssd if ly.name.endswith("fc6")] == [6]
    assert sorted({ly.h for ly in ssd if ".head." in ly.name}) == [1, 3, 5, 10, 19, 38]


def test_every_family_builds_valid_layers_at_its_sizes():
    kinds = collections.Counter()
    for fam, hw, ly in F.family_layers():
        assert min(ly.out_hw) >= 1 and ly.c_in % ly.groups == 0 and ly.c_out % ly.groups == 0, (fam.name, hw, ly)
        assert ly.config(1).valid and ly.config(1).out_hw == ly.out_hw
        kinds[fam.kind] += 1
    assert set(kinds) == {"classification", "detection", "segmentation"}
    assert all(1 <= b <= 256 for f in F.FAMILIES for b in f.batches)


def test_regnet_widths_follow_torchvisions_quantization():
    # torchvision's regnet_y_400mf: stage widths 48, 104, 208, 440, depths 1, 3, 6, 6, group width 8
    assert F.regnet_stages(16, 48, 27.89, 2.09, 8) == [(48, 1, 8), (104, 3, 8), (208, 6, 8), (440, 6, 8)]
    assert F.make_divisible(32 * 1.2) == 40 and F.make_divisible(1280 * 1.1) == 1408


def test_pool_sizes_follow_pytorch():
    assert F.pool((112, 112), 3, 2, 1) == (56, 56)
    assert F.pool((75, 75), 2, 2, ceil=True) == (38, 38) and F.pool((75, 75), 2, 2) == (37, 37)
    assert F.pool((147, 147), 3, 2) == (73, 73)


def _torchvision_convs(model, x):
    import torch

    got: collections.Counter = collections.Counter()

    def hook(mod, inp, out):
        t = inp[0]
        got[(mod.in_channels, t.shape[2], t.shape[3], mod.out_channels, *mod.kernel_size, mod.stride[0],
             *mod.padding, mod.dilation[0], mod.groups)] += 1

    hooks = [m.register_forward_hook(hook) for m in model.modules() if type(m) is torch.nn.Conv2d]
    model.eval()
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return got


@pytest.mark.parametrize("name", ["resnet50", "resnext50_32x4d", "mobilenet_v3_large", "efficientnet_b2",
                                  "regnet_y_1_6gf", "densenet121", "convnext_tiny", "inception_v3"])
def test_the_generators_match_torchvision(name):
    """Every convolution torchvision's module runs, with its input size, at the family's first
    input size (skipped where torchvision is not installed: the package never needs it)."""
    torch = pytest.importorskip("torch")
    models = pytest.importorskip("torchvision.models")
    fam = {f.name: f for f in F.FAMILIES}[name]
    hw = fam.sizes[0]
    kw = {"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}
    got = _torchvision_convs(getattr(models, name)(weights=None, **kw), torch.randn(1, 3, *hw))
    assert got == collections.Counter(ly.shape() for ly in fam.build(hw))
