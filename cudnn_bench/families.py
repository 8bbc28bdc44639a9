"""The convolution layers of real CNN families, generated from their definitions.

Each function builds one architecture the way torchvision defines it (channel rounding, where the
stride sits, padding, dilation, groups) at any input size, and returns its forward convolutions
in execution order as `Layer`s; nothing is copied from a table. Only `nn.Conv2d` counts: linear
layers (ConvNeXt's pointwise MLPs, classifiers, box heads), transposed convolutions (U-Net's and
Mask R-CNN's upsampling) and pooling are not convolutions cuDNN's forward algorithms run.

Classification: ResNet-18/34/50/101/152, ResNeXt-50 32x4d and 101 32x8d, Wide ResNet-50-2, VGG-11,
16 and 19, MobileNetV2, MobileNetV3 large and small, EfficientNet-B0..B3, RegNet X and Y,
DenseNet-121/169, ConvNeXt tiny and base, Inception v3. Detection: Faster R-CNN / Mask R-CNN
with a ResNet-50 FPN (backbone, FPN, RPN head, mask head), RetinaNet (P3-P7 FPN and its heads),
SSD300 with VGG-16. Segmentation: FCN and DeepLabV3 on a dilated ResNet-50 (output stride 8),
DeepLabV3 on a dilated MobileNetV3-large, U-Net (padded 3x3 convolutions).

`FAMILIES` names every generator with the input sizes and batch sizes it is run at; the
`conv_grid` suite (cudnn_bench.suites) draws on it. tests/cudnn_bench/test_families.py checks
known layer counts; where torchvision is installed it also checks every generator against
torchvision's own modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .configs import ConvConfig

HW = tuple[int, int]


@dataclass(frozen=True)
class Layer:
    """One forward convolution of a network: NCHW input c_in x h x w, filter c_out x c_in/groups
    x kh x kw (stride and dilation the same along both axes, as in every family here)."""

    name: str
    c_in: int
    h: int
    w: int
    c_out: int
    kh: int
    kw: int
    stride: int = 1
    pad_h: int = 0
    pad_w: int = 0
    dil: int = 1
    groups: int = 1

    @property
    def out_hw(self) -> HW:
        return (
            (self.h + 2 * self.pad_h - self.dil * (self.kh - 1) - 1) // self.stride + 1,
            (self.w + 2 * self.pad_w - self.dil * (self.kw - 1) - 1) // self.stride + 1,
        )

    def shape(self) -> tuple[int, ...]:
        """Everything but the name: layers of one shape are one configuration at a batch size."""
        return (
            *(self.c_in, self.h, self.w, self.c_out, self.kh, self.kw),
            *(self.stride, self.pad_h, self.pad_w, self.dil, self.groups),
        )

    def config(self, batch: int, name: str | None = None) -> ConvConfig:
        s, d = self.stride, self.dil
        return ConvConfig(
            batch,
            self.c_in,
            self.h,
            self.w,
            self.c_out,
            self.kh,
            self.kw,
            s,
            s,
            self.pad_h,
            self.pad_w,
            d,
            d,
            self.groups,
            name=self.name if name is None else name,
        )


class Net:
    """Collects a network's convolutions while its builder walks the spatial sizes."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.layers: list[Layer] = []

    def conv(
        self,
        name: str,
        c_in: int,
        hw: HW,
        c_out: int,
        k: int | HW,
        stride: int = 1,
        pad: int | HW = 0,
        dil: int = 1,
        groups: int = 1,
    ) -> HW:
        """Add a convolution; returns its output size."""
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = (pad, pad) if isinstance(pad, int) else pad
        layer = Layer(f"{self.prefix}.{name}", c_in, hw[0], hw[1], c_out, kh, kw, stride, ph, pw, dil, groups)
        if c_in % groups or c_out % groups or min(layer.out_hw) < 1:
            raise ValueError(f"not a valid convolution: {layer}")
        self.layers.append(layer)
        return layer.out_hw


def pool(hw: HW, k: int, s: int, p: int = 0, ceil: bool = False) -> HW:
    """Output size of a max or average pool (PyTorch's rule, ceil_mode included)."""

    def one(x: int) -> int:
        n = x + 2 * p - k
        o = (-(-n // s) if ceil else n // s) + 1
        if ceil and (o - 1) * s >= x + p:  # the last window must start inside the input
            o -= 1
        return o

    return one(hw[0]), one(hw[1])


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """torchvision's channel rounding (MobileNet, EfficientNet, RegNet)."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


# ====================================================================== ResNet family
def _resnet_body(
    net: Net,
    hw: HW,
    blocks: tuple[int, ...],
    bottleneck: bool,
    groups: int = 1,
    width_per_group: int = 64,
    dilate: tuple[bool, bool, bool] = (False, False, False),
) -> tuple[HW, list[tuple[int, HW]]]:
    """conv1, max pool and layer1-4 of torchvision's ResNet; returns the final size and each
    stage's (channels, size), which FPN and segmentation heads read."""
    hw = net.conv("conv1", 3, hw, 64, 7, 2, 3)
    hw = pool(hw, 3, 2, 1)
    c, dilation = 64, 1
    expansion = 4 if bottleneck else 1
    stages = []
    for i, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks)):
        stride = 1 if i == 0 else 2
        previous = dilation
        if i > 0 and dilate[i - 1]:
            dilation *= stride
            stride = 1
        out = planes * expansion
        for b in range(n):
            s, d = (stride, previous) if b == 0 else (1, dilation)
            p = f"layer{i + 1}.{b}"
            if bottleneck:
                width = int(planes * (width_per_group / 64.0)) * groups
                net.conv(f"{p}.conv1", c, hw, width, 1)
                hw2 = net.conv(f"{p}.conv2", width, hw, width, 3, s, d, d, groups)
                net.conv(f"{p}.conv3", width, hw2, out, 1)
            else:
                hw2 = net.conv(f"{p}.conv1", c, hw, planes, 3, s, d, d)
                net.conv(f"{p}.conv2", planes, hw2, planes, 3, 1, d, d)
            if b == 0 and (stride != 1 or c != out):
                net.conv(f"{p}.downsample", c, hw, out, 1, stride)
            c, hw = out, hw2
        stages.append((c, hw))
    return hw, stages


RESNET_BLOCKS = {
    18: ((2, 2, 2, 2), False),
    34: ((3, 4, 6, 3), False),
    50: ((3, 4, 6, 3), True),
    101: ((3, 4, 23, 3), True),
    152: ((3, 8, 36, 3), True),
}


def resnet(depth: int, hw: HW, groups: int = 1, width_per_group: int = 64, prefix: str = "") -> list[Layer]:
    blocks, bottleneck = RESNET_BLOCKS[depth]
    net = Net(prefix or f"resnet{depth}")
    _resnet_body(net, hw, blocks, bottleneck, groups, width_per_group)
    return net.layers


def resnet18(hw: HW) -> list[Layer]:
    return resnet(18, hw)


def resnet34(hw: HW) -> list[Layer]:
    return resnet(34, hw)


def resnet50(hw: HW) -> list[Layer]:
    return resnet(50, hw)


def resnet101(hw: HW) -> list[Layer]:
    return resnet(101, hw)


def resnet152(hw: HW) -> list[Layer]:
    return resnet(152, hw)


def resnext50_32x4d(hw: HW) -> list[Layer]:
    return resnet(50, hw, groups=32, width_per_group=4, prefix="resnext50_32x4d")


def resnext101_32x8d(hw: HW) -> list[Layer]:
    return resnet(101, hw, groups=32, width_per_group=8, prefix="resnext101_32x8d")


def wide_resnet50_2(hw: HW) -> list[Layer]:
    return resnet(50, hw, width_per_group=128, prefix="wide_resnet50_2")


# ====================================================================== VGG
VGG_CFGS: dict[int, tuple[int | str, ...]] = {
    11: (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
    19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"),
}


def vgg(depth: int, hw: HW) -> list[Layer]:
    net = Net(f"vgg{depth}")
    c = 3
    for i, v in enumerate(VGG_CFGS[depth]):
        if v == "M":
            hw = pool(hw, 2, 2)
        else:
            assert isinstance(v, int)
            hw = net.conv(f"features.{i}", c, hw, v, 3, 1, 1)
            c = v
    return net.layers


def vgg11(hw: HW) -> list[Layer]:
    return vgg(11, hw)


def vgg16(hw: HW) -> list[Layer]:
    return vgg(16, hw)


def vgg19(hw: HW) -> list[Layer]:
    return vgg(19, hw)


# ====================================================================== MobileNets
# (expansion, output channels, blocks, stride) of each stage
MOBILENET_V2 = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def mobilenet_v2(hw: HW, width_mult: float = 1.0) -> list[Layer]:
    net = Net("mobilenet_v2" if width_mult == 1.0 else f"mobilenet_v2_{width_mult:g}")
    c = make_divisible(32 * width_mult)
    last = make_divisible(1280 * max(1.0, width_mult))
    hw = net.conv("features.0", 3, hw, c, 3, 2, 1)
    idx = 1
    for t, ch, n, s in MOBILENET_V2:
        out = make_divisible(ch * width_mult)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = round(c * t)
            p = f"features.{idx}"
            if t != 1:
                net.conv(f"{p}.expand", c, hw, hidden, 1)
            hw2 = net.conv(f"{p}.depthwise", hidden, hw, hidden, 3, stride, 1, groups=hidden)
            net.conv(f"{p}.project", hidden, hw2, out, 1)
            c, hw, idx = out, hw2, idx + 1
    net.conv(f"features.{idx}", c, hw, last, 1)
    return net.layers


# (input channels, kernel, expanded channels, output channels, squeeze-excite, stride)
MOBILENET_V3_LARGE = (
    (16, 3, 16, 16, False, 1),
    (16, 3, 64, 24, False, 2),
    (24, 3, 72, 24, False, 1),
    (24, 5, 72, 40, True, 2),
    (40, 5, 120, 40, True, 1),
    (40, 5, 120, 40, True, 1),
    (40, 3, 240, 80, False, 2),
    (80, 3, 200, 80, False, 1),
    (80, 3, 184, 80, False, 1),
    (80, 3, 184, 80, False, 1),
    (80, 3, 480, 112, True, 1),
    (112, 3, 672, 112, True, 1),
    (112, 5, 672, 160, True, 2),  # the last three: dilated 2 where the network is dilated
    (160, 5, 960, 160, True, 1),
    (160, 5, 960, 160, True, 1),
)
MOBILENET_V3_SMALL = (
    (16, 3, 16, 16, True, 2),
    (16, 3, 72, 24, False, 2),
    (24, 3, 88, 24, False, 1),
    (24, 5, 96, 40, True, 2),
    (40, 5, 240, 40, True, 1),
    (40, 5, 240, 40, True, 1),
    (40, 5, 120, 48, True, 1),
    (48, 5, 144, 48, True, 1),
    (48, 5, 288, 96, True, 2),
    (96, 5, 576, 96, True, 1),
    (96, 5, 576, 96, True, 1),
)


def _mobilenet_v3(net: Net, hw: HW, setting: tuple, dilated: bool = False) -> tuple[int, HW, list[tuple[int, HW]]]:
    """torchvision's MobileNetV3 features; `dilated`: the last three blocks dilated 2 and not
    strided (the segmentation backbone). Returns channels, size, and each block's output."""
    c = setting[0][0]
    hw = net.conv("features.0", 3, hw, c, 3, 2, 1)
    outs = []
    for i, (cin, k, exp, cout, se, stride) in enumerate(setting):
        d = 2 if dilated and i >= len(setting) - 3 else 1
        s = 1 if d > 1 else stride
        p = f"features.{i + 1}"
        if exp != cin:
            net.conv(f"{p}.expand", cin, hw, exp, 1)
        hw = net.conv(f"{p}.depthwise", exp, hw, exp, k, s, (k - 1) // 2 * d, d, exp)
        if se:
            sq = make_divisible(exp // 4, 8)
            net.conv(f"{p}.se.fc1", exp, (1, 1), sq, 1)
            net.conv(f"{p}.se.fc2", sq, (1, 1), exp, 1)
        net.conv(f"{p}.project", exp, hw, cout, 1)
        c = cout
        outs.append((c, hw))
    last = 6 * c
    hw = net.conv(f"features.{len(setting) + 1}", c, hw, last, 1)
    return last, hw, outs


def mobilenet_v3_large(hw: HW) -> list[Layer]:
    net = Net("mobilenet_v3_large")
    _mobilenet_v3(net, hw, MOBILENET_V3_LARGE)
    return net.layers


def mobilenet_v3_small(hw: HW) -> list[Layer]:
    net = Net("mobilenet_v3_small")
    _mobilenet_v3(net, hw, MOBILENET_V3_SMALL)
    return net.layers


# ====================================================================== EfficientNet
# (expand ratio, kernel, stride, input channels, output channels, layers) of B0
EFFICIENTNET = (
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
)
EFFICIENTNET_SCALE = {0: (1.0, 1.0, 224), 1: (1.0, 1.1, 240), 2: (1.1, 1.2, 260), 3: (1.2, 1.4, 300)}


def efficientnet(b: int, hw: HW | None = None) -> list[Layer]:
    """EfficientNet-B`b` (width and depth multipliers as torchvision's), at its own resolution
    unless `hw` is given."""
    wm, dm, res = EFFICIENTNET_SCALE[b]
    hw = (res, res) if hw is None else hw
    net = Net(f"efficientnet_b{b}")
    c = make_divisible(EFFICIENTNET[0][3] * wm)
    hw = net.conv("features.0", 3, hw, c, 3, 2, 1)
    for stage, (t, k, s, cin, cout, n) in enumerate(EFFICIENTNET, 1):
        cin, cout = make_divisible(cin * wm), make_divisible(cout * wm)
        for i in range(math.ceil(n * dm)):
            ci, stride = (cin, s) if i == 0 else (cout, 1)
            exp = make_divisible(ci * t)
            p = f"features.{stage}.{i}"
            if exp != ci:
                net.conv(f"{p}.expand", ci, hw, exp, 1)
            hw = net.conv(f"{p}.depthwise", exp, hw, exp, k, stride, (k - 1) // 2, groups=exp)
            sq = max(1, ci // 4)
            net.conv(f"{p}.se.fc1", exp, (1, 1), sq, 1)
            net.conv(f"{p}.se.fc2", sq, (1, 1), exp, 1)
            net.conv(f"{p}.project", exp, hw, cout, 1)
        c = cout
    net.conv(f"features.{len(EFFICIENTNET) + 1}", c, hw, 4 * c, 1)
    return net.layers


# ====================================================================== RegNet
# name: (depth, w_0, w_a, w_m, group width, squeeze-excite ratio) as torchvision's
REGNETS = {
    "regnet_y_400mf": (16, 48, 27.89, 2.09, 8, 0.25),
    "regnet_y_800mf": (14, 56, 38.84, 2.4, 16, 0.25),
    "regnet_y_1_6gf": (27, 48, 20.71, 2.65, 24, 0.25),
    "regnet_y_3_2gf": (21, 80, 42.63, 2.66, 24, 0.25),
    "regnet_y_8gf": (17, 192, 76.82, 2.19, 56, 0.25),
    "regnet_x_400mf": (22, 24, 24.48, 2.54, 16, 0.0),
    "regnet_x_800mf": (16, 56, 35.73, 2.28, 16, 0.0),
    "regnet_x_1_6gf": (18, 80, 34.01, 2.25, 24, 0.0),
    "regnet_x_3_2gf": (25, 88, 26.31, 2.25, 48, 0.0),
    "regnet_x_8gf": (23, 80, 49.56, 2.88, 120, 0.0),
}


def regnet_stages(depth: int, w_0: float, w_a: float, w_m: float, group_width: int) -> list[tuple[int, int, int]]:
    """(width, blocks, group width) per stage, as torchvision's BlockParams.from_init_params
    computes them (in float32, as torch does)."""
    f32 = np.float32
    widths_cont = np.arange(depth, dtype=f32) * f32(w_a) + f32(w_0)
    capacity = np.round(np.log(widths_cont / f32(w_0)) / f32(math.log(w_m))).astype(f32)
    block_widths = [int(x) for x in np.round(f32(w_0) * np.power(f32(w_m), capacity) / f32(8)) * 8]
    splits = [
        w != wp or r != rp
        for w, wp, r, rp in zip(block_widths + [0], [0] + block_widths, block_widths + [0], [0] + block_widths)
    ]
    stage_widths = [w for w, t in zip(block_widths, splits[:-1]) if t]
    stage_depths = np.diff([d for d, t in enumerate(splits) if t]).astype(int).tolist()
    out = []
    for w, n in zip(stage_widths, stage_depths):
        g = min(group_width, w)
        out.append((make_divisible(w, g), n, g))
    return out


def regnet(name: str, hw: HW) -> list[Layer]:
    depth, w_0, w_a, w_m, gw, se = REGNETS[name]
    net = Net(name)
    hw = net.conv("stem", 3, hw, 32, 3, 2, 1)
    c = 32
    for i, (w, n, g) in enumerate(regnet_stages(depth, w_0, w_a, w_m, gw), 1):
        for b in range(n):
            s = 2 if b == 0 else 1
            p = f"trunk_output.block{i}.{b}"
            if c != w or s != 1:
                net.conv(f"{p}.proj", c, hw, w, 1, s)
            net.conv(f"{p}.f.a", c, hw, w, 1)
            hw2 = net.conv(f"{p}.f.b", w, hw, w, 3, s, 1, groups=w // g)
            if se:
                sq = round(se * c)
                net.conv(f"{p}.f.se.fc1", w, (1, 1), sq, 1)
                net.conv(f"{p}.f.se.fc2", sq, (1, 1), w, 1)
            net.conv(f"{p}.f.c", w, hw2, w, 1)
            c, hw = w, hw2
    return net.layers


def regnet_y_400mf(hw: HW) -> list[Layer]:
    return regnet("regnet_y_400mf", hw)


def regnet_y_1_6gf(hw: HW) -> list[Layer]:
    return regnet("regnet_y_1_6gf", hw)


def regnet_y_8gf(hw: HW) -> list[Layer]:
    return regnet("regnet_y_8gf", hw)


def regnet_x_400mf(hw: HW) -> list[Layer]:
    return regnet("regnet_x_400mf", hw)


def regnet_x_3_2gf(hw: HW) -> list[Layer]:
    return regnet("regnet_x_3_2gf", hw)


# ====================================================================== DenseNet
DENSENETS = {121: (32, (6, 12, 24, 16), 64), 169: (32, (6, 12, 32, 32), 64), 161: (48, (6, 12, 36, 24), 96)}


def densenet(depth: int, hw: HW) -> list[Layer]:
    growth, blocks, c = DENSENETS[depth]
    net = Net(f"densenet{depth}")
    hw = net.conv("features.conv0", 3, hw, c, 7, 2, 3)
    hw = pool(hw, 3, 2, 1)
    for i, n in enumerate(blocks, 1):
        for j in range(n):
            p = f"features.denseblock{i}.denselayer{j + 1}"
            net.conv(f"{p}.conv1", c + j * growth, hw, 4 * growth, 1)
            net.conv(f"{p}.conv2", 4 * growth, hw, growth, 3, 1, 1)
        c += n * growth
        if i < len(blocks):
            net.conv(f"features.transition{i}.conv", c, hw, c // 2, 1)
            c //= 2
            hw = pool(hw, 2, 2)
    return net.layers


def densenet121(hw: HW) -> list[Layer]:
    return densenet(121, hw)


def densenet169(hw: HW) -> list[Layer]:
    return densenet(169, hw)


# ====================================================================== ConvNeXt
CONVNEXTS = {"tiny": ((96, 192, 384, 768), (3, 3, 9, 3)), "base": ((128, 256, 512, 1024), (3, 3, 27, 3))}


def convnext(size: str, hw: HW) -> list[Layer]:
    """The stem (4x4, stride 4), the 7x7 depthwise convolutions and the 2x2 stride-2
    downsampling; the blocks' pointwise layers are nn.Linear, not convolutions."""
    dims, depths = CONVNEXTS[size]
    net = Net(f"convnext_{size}")
    hw = net.conv("features.0", 3, hw, dims[0], 4, 4)
    for i, (d, n) in enumerate(zip(dims, depths)):
        for b in range(n):
            net.conv(f"features.{2 * i + 1}.{b}.dwconv", d, hw, d, 7, 1, 3, groups=d)
        if i + 1 < len(dims):
            hw = net.conv(f"features.{2 * i + 2}.1", d, hw, dims[i + 1], 2, 2)
    return net.layers


def convnext_tiny(hw: HW) -> list[Layer]:
    return convnext("tiny", hw)


def convnext_base(hw: HW) -> list[Layer]:
    return convnext("base", hw)


# ====================================================================== Inception v3
def inception_v3(hw: HW = (299, 299)) -> list[Layer]:
    """torchvision's Inception3 without the auxiliary classifier (it runs in training only)."""
    net = Net("inception_v3")
    c = net.conv
    hw = c("Conv2d_1a_3x3", 3, hw, 32, 3, 2)
    hw = c("Conv2d_2a_3x3", 32, hw, 32, 3)
    hw = c("Conv2d_2b_3x3", 32, hw, 64, 3, 1, 1)
    hw = pool(hw, 3, 2)
    hw = c("Conv2d_3b_1x1", 64, hw, 80, 1)
    hw = c("Conv2d_4a_3x3", 80, hw, 192, 3)
    hw = pool(hw, 3, 2)
    ch = 192
    for name, pool_features in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):  # InceptionA
        c(f"{name}.branch1x1", ch, hw, 64, 1)
        c(f"{name}.branch5x5_1", ch, hw, 48, 1)
        c(f"{name}.branch5x5_2", 48, hw, 64, 5, 1, 2)
        c(f"{name}.branch3x3dbl_1", ch, hw, 64, 1)
        c(f"{name}.branch3x3dbl_2", 64, hw, 96, 3, 1, 1)
        c(f"{name}.branch3x3dbl_3", 96, hw, 96, 3, 1, 1)
        c(f"{name}.branch_pool", ch, hw, pool_features, 1)
        ch = 224 + pool_features
    # Mixed_6a (InceptionB)
    out = c("Mixed_6a.branch3x3", ch, hw, 384, 3, 2)
    c("Mixed_6a.branch3x3dbl_1", ch, hw, 64, 1)
    c("Mixed_6a.branch3x3dbl_2", 64, hw, 96, 3, 1, 1)
    c("Mixed_6a.branch3x3dbl_3", 96, hw, 96, 3, 2)
    hw, ch = out, 384 + 96 + ch
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):  # InceptionC
        c(f"{name}.branch1x1", ch, hw, 192, 1)
        c(f"{name}.branch7x7_1", ch, hw, c7, 1)
        c(f"{name}.branch7x7_2", c7, hw, c7, (1, 7), 1, (0, 3))
        c(f"{name}.branch7x7_3", c7, hw, 192, (7, 1), 1, (3, 0))
        c(f"{name}.branch7x7dbl_1", ch, hw, c7, 1)
        c(f"{name}.branch7x7dbl_2", c7, hw, c7, (7, 1), 1, (3, 0))
        c(f"{name}.branch7x7dbl_3", c7, hw, c7, (1, 7), 1, (0, 3))
        c(f"{name}.branch7x7dbl_4", c7, hw, c7, (7, 1), 1, (3, 0))
        c(f"{name}.branch7x7dbl_5", c7, hw, 192, (1, 7), 1, (0, 3))
        c(f"{name}.branch_pool", ch, hw, 192, 1)
        ch = 768
    # Mixed_7a (InceptionD)
    c("Mixed_7a.branch3x3_1", ch, hw, 192, 1)
    out = c("Mixed_7a.branch3x3_2", 192, hw, 320, 3, 2)
    c("Mixed_7a.branch7x7x3_1", ch, hw, 192, 1)
    c("Mixed_7a.branch7x7x3_2", 192, hw, 192, (1, 7), 1, (0, 3))
    c("Mixed_7a.branch7x7x3_3", 192, hw, 192, (7, 1), 1, (3, 0))
    c("Mixed_7a.branch7x7x3_4", 192, hw, 192, 3, 2)
    hw, ch = out, 320 + 192 + ch
    for name in ("Mixed_7b", "Mixed_7c"):  # InceptionE
        c(f"{name}.branch1x1", ch, hw, 320, 1)
        c(f"{name}.branch3x3_1", ch, hw, 384, 1)
        c(f"{name}.branch3x3_2a", 384, hw, 384, (1, 3), 1, (0, 1))
        c(f"{name}.branch3x3_2b", 384, hw, 384, (3, 1), 1, (1, 0))
        c(f"{name}.branch3x3dbl_1", ch, hw, 448, 1)
        c(f"{name}.branch3x3dbl_2", 448, hw, 384, 3, 1, 1)
        c(f"{name}.branch3x3dbl_3a", 384, hw, 384, (1, 3), 1, (0, 1))
        c(f"{name}.branch3x3dbl_3b", 384, hw, 384, (3, 1), 1, (1, 0))
        c(f"{name}.branch_pool", ch, hw, 192, 1)
        ch = 2048
    return net.layers


# ====================================================================== detection
def _fpn(net: Net, stages: list[tuple[int, HW]], name: str = "fpn") -> list[HW]:
    """torchvision's FeaturePyramidNetwork: a 1x1 lateral and a 3x3 output conv per level."""
    outs = []
    for i, (c, hw) in enumerate(stages):
        net.conv(f"{name}.inner_blocks.{i}", c, hw, 256, 1)
        net.conv(f"{name}.layer_blocks.{i}", 256, hw, 256, 3, 1, 1)
        outs.append(hw)
    return outs


def fasterrcnn_resnet50_fpn(hw: HW, rois: int = 0) -> list[Layer]:
    """Faster R-CNN (v1) on an image batch padded to `hw`: the ResNet-50 backbone, the FPN on
    layer1-4 with a max-pooled P6, the RPN head (3 anchors) on every level; with `rois`, Mask
    R-CNN's mask head on that many 14x14 regions (its transposed convolution left out)."""
    net = Net("fasterrcnn_resnet50_fpn" if not rois else "maskrcnn_resnet50_fpn")
    _, stages = _resnet_body(net, hw, RESNET_BLOCKS[50][0], True)
    levels = _fpn(net, stages, "backbone.fpn")
    levels.append(pool(levels[-1], 1, 2))  # LastLevelMaxPool
    for i, lhw in enumerate(levels):
        net.conv(f"rpn.head.conv.{i}", 256, lhw, 256, 3, 1, 1)
        net.conv(f"rpn.head.cls_logits.{i}", 256, lhw, 3, 1)
        net.conv(f"rpn.head.bbox_pred.{i}", 256, lhw, 12, 1)
    if rois:
        for j in range(4):
            net.conv(f"roi_heads.mask_head.{j}", 256, (14, 14), 256, 3, 1, 1)
        net.conv("roi_heads.mask_predictor.mask_fcn_logits", 256, (28, 28), 91, 1)
    return net.layers


def retinanet_resnet50_fpn(hw: HW) -> list[Layer]:
    """RetinaNet (v1): FPN on layer2-4, P6 and P7 by 3x3 stride-2 convs on P5, and the
    classification (9 anchors x 91 classes) and box heads, four 3x3 convs each, on P3-P7."""
    net = Net("retinanet_resnet50_fpn")
    _, stages = _resnet_body(net, hw, RESNET_BLOCKS[50][0], True)
    levels = _fpn(net, stages[1:], "backbone.fpn")
    p6 = net.conv("backbone.fpn.extra_blocks.p6", 256, levels[-1], 256, 3, 2, 1)
    p7 = net.conv("backbone.fpn.extra_blocks.p7", 256, p6, 256, 3, 2, 1)
    levels += [p6, p7]
    for i, lhw in enumerate(levels):
        for head, out in (("classification_head", 9 * 91), ("regression_head", 9 * 4)):
            for j in range(4):
                net.conv(f"head.{head}.conv.{j}.{i}", 256, lhw, 256, 3, 1, 1)
            net.conv(f"head.{head}.out.{i}", 256, lhw, out, 3, 1, 1)
    return net.layers


def ssd300_vgg16(hw: HW = (300, 300)) -> list[Layer]:
    """SSD300: VGG-16 to conv5_3 (the third pool rounds up), pool5 3x3/1, fc6 as a 3x3 conv of
    dilation 6, fc7, four extra blocks, and 3x3 class (91) and box heads on six maps."""
    net = Net("ssd300_vgg16")
    c, maps = 3, []
    pools, conv4 = 0, hw
    for i, v in enumerate(VGG_CFGS[16][:-1]):
        if v == "M":
            pools += 1
            hw = pool(hw, 2, 2, ceil=pools == 3)
            if pools == 4:
                maps.append((512, conv4))
        else:
            assert isinstance(v, int)
            hw = net.conv(f"features.{i}", c, hw, v, 3, 1, 1)
            conv4, c = hw, v
    hw = pool(hw, 3, 1, 1)
    hw = net.conv("extra.0.fc6", 512, hw, 1024, 3, 1, 6, 6)
    hw = net.conv("extra.0.fc7", 1024, hw, 1024, 1)
    maps.append((1024, hw))
    c = 1024
    extras = ((256, 512, 2, 1), (128, 256, 2, 1), (128, 256, 1, 0), (128, 256, 1, 0))  # 1x1, then 3x3 out/stride/pad
    for i, (mid, out, stride, pad) in enumerate(extras):
        net.conv(f"extra.{i + 1}.0", c, hw, mid, 1)
        hw = net.conv(f"extra.{i + 1}.2", mid, hw, out, 3, stride, pad)
        maps.append((out, hw))
        c = out
    for i, ((ch, mhw), anchors) in enumerate(zip(maps, (4, 6, 6, 6, 4, 4))):
        net.conv(f"head.classification_head.{i}", ch, mhw, anchors * 91, 3, 1, 1)
        net.conv(f"head.regression_head.{i}", ch, mhw, anchors * 4, 3, 1, 1)
    return net.layers


# ====================================================================== segmentation
def fcn_resnet50(hw: HW) -> list[Layer]:
    """FCN: ResNet-50 with layer3 and layer4 dilated (output stride 8), the FCN head (2048 ->
    512 -> 21 classes) and the auxiliary head on layer3."""
    net = Net("fcn_resnet50")
    out, stages = _resnet_body(net, hw, RESNET_BLOCKS[50][0], True, dilate=(False, True, True))
    net.conv("classifier.0", 2048, out, 512, 3, 1, 1)
    net.conv("classifier.4", 512, out, 21, 1)
    net.conv("aux_classifier.0", 1024, stages[2][1], 256, 3, 1, 1)
    net.conv("aux_classifier.4", 256, stages[2][1], 21, 1)
    return net.layers


def _aspp(net: Net, c: int, hw: HW, rates: tuple[int, ...] = (12, 24, 36)) -> None:
    """DeepLabHead: ASPP (a 1x1, three dilated 3x3, image pooling), projection, 3x3, classes."""
    net.conv("classifier.0.convs.0", c, hw, 256, 1)
    for i, r in enumerate(rates, 1):
        net.conv(f"classifier.0.convs.{i}", c, hw, 256, 3, 1, r, r)
    net.conv("classifier.0.convs.4", c, (1, 1), 256, 1)
    net.conv("classifier.0.project", 256 * (len(rates) + 2), hw, 256, 1)
    net.conv("classifier.1", 256, hw, 256, 3, 1, 1)
    net.conv("classifier.4", 256, hw, 21, 1)


def deeplabv3_resnet50(hw: HW) -> list[Layer]:
    net = Net("deeplabv3_resnet50")
    out, stages = _resnet_body(net, hw, RESNET_BLOCKS[50][0], True, dilate=(False, True, True))
    _aspp(net, 2048, out)
    net.conv("aux_classifier.0", 1024, stages[2][1], 256, 3, 1, 1)
    net.conv("aux_classifier.4", 256, stages[2][1], 21, 1)
    return net.layers


def deeplabv3_mobilenet_v3_large(hw: HW) -> list[Layer]:
    """DeepLabV3 on MobileNetV3-large with its last stage dilated (output stride 16)."""
    net = Net("deeplabv3_mobilenet_v3_large")
    c, out, _ = _mobilenet_v3(net, hw, MOBILENET_V3_LARGE, dilated=True)
    _aspp(net, c, out)
    return net.layers


def unet(hw: HW, channels: int = 3, classes: int = 2) -> list[Layer]:
    """U-Net with padded 3x3 convolutions (the common PyTorch form): four 2x2 max-pool steps
    down from 64 to 1024 channels, four up (transposed 2x2 convs, not counted; concatenation),
    a double 3x3 conv at every level and a 1x1 classifier."""
    net = Net("unet")

    def double(name: str, cin: int, cout: int, at: HW) -> None:
        net.conv(f"{name}.0", cin, at, cout, 3, 1, 1)
        net.conv(f"{name}.1", cout, at, cout, 3, 1, 1)

    sizes, c = [], channels
    for i, w in enumerate((64, 128, 256, 512, 1024)):
        if i:
            hw = pool(hw, 2, 2)
        double(f"down{i}", c, w, hw)
        sizes.append(hw)
        c = w
    for i, w in enumerate((512, 256, 128, 64)):
        double(f"up{i}", 2 * w, w, sizes[-2 - i])
    net.conv("outc", 64, sizes[0], classes, 1)
    return net.layers


# ====================================================================== the table
@dataclass(frozen=True)
class Family:
    """A network generator with the input sizes and batch sizes it runs at."""

    name: str
    build: Callable[[HW], list[Layer]]
    sizes: tuple[HW, ...]
    batches: tuple[int, ...]
    kind: str  # classification, detection, segmentation


CLS_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CLS_SIZES = ((224, 224), (160, 160), (288, 288))
DET_BATCHES = (1, 2, 4, 8, 16)
DET_SIZES = ((800, 1088), (512, 512))
SEG_BATCHES = (1, 2, 4, 8, 16, 32)
SEG_SIZES = ((520, 520), (512, 1024))


def _cls(name: str, build: Callable[[HW], list[Layer]], sizes: tuple[HW, ...] = CLS_SIZES) -> Family:
    return Family(name, build, sizes, CLS_BATCHES, "classification")


FAMILIES: tuple[Family, ...] = (
    _cls("resnet18", resnet18),
    _cls("resnet34", resnet34),
    _cls("resnet50", resnet50),
    _cls("resnet101", resnet101),
    _cls("resnet152", resnet152),
    _cls("resnext50_32x4d", resnext50_32x4d),
    _cls("resnext101_32x8d", resnext101_32x8d),
    _cls("wide_resnet50_2", wide_resnet50_2),
    _cls("vgg11", vgg11),
    _cls("vgg16", vgg16),
    _cls("vgg19", vgg19),
    _cls("mobilenet_v2", mobilenet_v2),
    _cls("mobilenet_v3_large", mobilenet_v3_large),
    _cls("mobilenet_v3_small", mobilenet_v3_small),
    _cls("efficientnet_b0", lambda hw: efficientnet(0, hw), ((224, 224), (256, 256))),
    _cls("efficientnet_b1", lambda hw: efficientnet(1, hw), ((240, 240),)),
    _cls("efficientnet_b2", lambda hw: efficientnet(2, hw), ((260, 260), (288, 288))),
    _cls("efficientnet_b3", lambda hw: efficientnet(3, hw), ((300, 300), (320, 320))),
    _cls("regnet_y_400mf", regnet_y_400mf),
    _cls("regnet_y_1_6gf", regnet_y_1_6gf),
    _cls("regnet_y_8gf", regnet_y_8gf),
    _cls("regnet_x_400mf", regnet_x_400mf),
    _cls("regnet_x_3_2gf", regnet_x_3_2gf),
    _cls("densenet121", densenet121),
    _cls("densenet169", densenet169),
    _cls("convnext_tiny", convnext_tiny),
    _cls("convnext_base", convnext_base),
    _cls("inception_v3", inception_v3, ((299, 299), (342, 342))),
    Family("fasterrcnn_resnet50_fpn", fasterrcnn_resnet50_fpn, DET_SIZES, DET_BATCHES, "detection"),
    Family(
        "maskrcnn_mask_head",
        lambda hw: [ly for ly in fasterrcnn_resnet50_fpn(hw, rois=100) if ".roi_heads." in ly.name],
        ((800, 1088),),
        (16, 32, 64, 100, 128, 256),
        "detection",
    ),
    Family("retinanet_resnet50_fpn", retinanet_resnet50_fpn, DET_SIZES + ((640, 640),), DET_BATCHES, "detection"),
    Family("ssd300_vgg16", ssd300_vgg16, ((300, 300),), (1, 2, 4, 8, 16, 32, 64), "detection"),
    Family("fcn_resnet50", fcn_resnet50, SEG_SIZES, SEG_BATCHES, "segmentation"),
    Family("deeplabv3_resnet50", deeplabv3_resnet50, SEG_SIZES, SEG_BATCHES, "segmentation"),
    Family("deeplabv3_mobilenet_v3_large", deeplabv3_mobilenet_v3_large, SEG_SIZES, SEG_BATCHES, "segmentation"),
    Family("unet", unet, ((256, 256), (512, 512)), (1, 2, 4, 8, 16), "segmentation"),
)


def family_layers() -> list[tuple[Family, HW, Layer]]:
    """Every family's layers at every one of its input sizes, in table order."""
    return [(f, hw, layer) for f in FAMILIES for hw in f.sizes for layer in f.build(hw)]
