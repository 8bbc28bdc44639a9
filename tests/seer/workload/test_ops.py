"""The op registry behind seer.workload.ops.classify: one handler per kind, looked up by the op's name."""

from __future__ import annotations

import pytest

from seer.workload import ops
from seer.workload.ops import OPS, Mapped, OpCall, classify, handler_of, op_name, register
from seer.workload.registry import Registry


@pytest.fixture
def temporary():
    """Register handlers for a test and take them out again, whatever the test does."""
    added: list[str] = []

    def add(*names):
        def decorate(fn):
            register(*names)(fn)
            added.extend(names)
            return fn

        return decorate

    yield add
    OPS.remove(*added)


# ---- registration ------------------------------------------------------------------------------------------------


def test_a_duplicate_registration_is_refused_naming_the_op_and_both_handlers():
    def my_softmax(c: OpCall) -> Mapped | None:
        return None

    with pytest.raises(ValueError) as err:
        register("softmax")(my_softmax)
    msg = str(err.value)
    assert "'softmax'" in msg and "ops._softmax" in msg and "my_softmax" in msg
    assert OPS.get("softmax") is ops._softmax  # the first registration stands


def test_a_refused_registration_registers_none_of_its_names():
    def handler(c: OpCall) -> Mapped | None:
        return None

    with pytest.raises(ValueError, match="'addmm'"):
        register("brand_new_op", "addmm")(handler)
    assert "brand_new_op" not in OPS and OPS.get("addmm") is ops._linear
    with pytest.raises(ValueError, match="given twice"):
        register("brand_new_op", "brand_new_op")(handler)
    assert "brand_new_op" not in OPS
    with pytest.raises(ValueError, match="no op names"):
        register()(handler)


def test_registry_basics():
    reg: Registry = Registry("kernel")
    f, g = (lambda: 1), (lambda: 2)
    reg.add(f, "a", "b")
    reg.register("c")(g)
    assert list(reg) == ["a", "b", "c"] and len(reg) == 3 and "b" in reg and "z" not in reg
    assert reg.names(f) == ["a", "b"] and reg.get("c") is g and reg.get("z") is None
    with pytest.raises(ValueError, match="kernel 'c' is already registered"):
        reg.add(f, "c")
    with pytest.raises(KeyError, match="'z'"):
        reg.remove("a", "z")
    assert "a" in reg  # nothing removed when one name is missing
    reg.remove("a", "c")
    assert list(reg) == ["b"]


# ---- lookup ------------------------------------------------------------------------------------------------------


def test_a_newly_registered_handler_is_used_by_classify(temporary):
    assert classify("aten::flash_attn_fwd", [[2, 8, 128, 64]] * 3).why == "flash_attn_fwd: no predictor"
    seen: list[OpCall] = []

    @temporary("flash_attn_fwd")
    def attention(c: OpCall) -> Mapped | None:
        seen.append(c)
        if len(c.tensors) != 3:
            return None  # its own op, shapes it does not model
        b, h, s, d = c.tensors[0]
        return Mapped("attention", {"op": "attention", "batch": b * h, "seq": s, "head_dim": d, "dtype": c.dtype})

    m = classify("aten::flash_attn_fwd", [[2, 8, 128, 64]] * 3, dtype="torch.float16")
    assert m == Mapped("attention", {"op": "attention", "batch": 16, "seq": 128, "head_dim": 64, "dtype": "float16"})
    assert seen[-1] == OpCall("flash_attn_fwd", "flash_attn_fwd", [[2, 8, 128, 64]] * 3, None, "float16", None)
    # the in-place spelling finds it too, and None is "unmodelled, these shapes"
    assert classify("flash_attn_fwd_", [[2, 8, 128, 64]]) == Mapped(
        "unmodelled", why="flash_attn_fwd_: shapes [[2, 8, 128, 64]]"
    )
    assert seen[-1].op == "flash_attn_fwd_" and seen[-1].name == "flash_attn_fwd"


def test_after_removal_the_op_is_unmodelled_again(temporary):
    @temporary("my_kernel")
    def mine(c: OpCall) -> Mapped | None:
        return Mapped("dispatch")

    assert classify("my_kernel", [[4]]).kind == "dispatch"
    OPS.remove("my_kernel")
    try:
        assert classify("my_kernel", [[4]]) == Mapped("unmodelled", why="my_kernel: no predictor")
        assert classify("my_kernel", []) == Mapped("unmodelled", why="my_kernel: no tensor shapes")
    finally:
        register("my_kernel")(mine)  # the fixture takes it out


def test_every_registered_name_resolves_to_its_handler():
    assert len(OPS) > 100
    for name, handler in OPS.items():
        assert handler_of(name) == (name, handler)
        assert handler_of(op_name(f"aten::{name}")) == (name, handler)
        assert handler_of(op_name(f"<built-in method {name} of type object at 0x1>")) == (name, handler)
        if not name.endswith("_") and name + "_" not in OPS:  # the in-place spelling shares the handler
            assert handler_of(name + "_") == (name, handler)


def test_classify_calls_the_handler_registered_for_each_name():
    seen: list[OpCall] = []

    def spy(c: OpCall) -> Mapped | None:
        seen.append(c)
        return Mapped("spy")

    for name, handler in OPS.items():  # each name in turn handed to the spy, then given back
        OPS.remove(name)
        OPS.add(spy, name)
        try:
            seen.clear()
            assert classify(f"aten::{name}", [[4, 8]], [4, 8]) == Mapped("spy"), name
            assert [(c.op, c.name) for c in seen] == [(name, name)]
        finally:
            OPS.remove(name)
            OPS.add(handler, name)
    assert OPS.names(spy) == []


@pytest.mark.parametrize(
    "names,handler",
    [
        (ops.SHAPE_ONLY, "_shape_only"),
        (ops.GEMM_2D, "_linear"),
        ({*ops.GEMM_BATCHED, "matmul"}, "_batched"),
        (ops.CONV, "_convolution"),
        (ops.SOFTMAX, "_softmax"),
        (ops.LAYER_NORM, "_layer_norm"),
        (ops.EMBEDDING, "_embedding"),
        (ops.GATHER, "_gather"),
        (ops.COPY, "_copy"),
        (ops.REDUCTION, "_reduction"),
        (ops.CONCAT, "_concat"),
        (ops.FILL, "_fill"),
        ({*ops.UNARY, *ops.BINARY}, "_pointwise"),
        ({"native_dropout"}, "_native_dropout"),
    ],
)
def test_each_name_set_is_registered_to_its_kind(names, handler):
    assert sorted(OPS.names(getattr(ops, handler))) == sorted(names)


# ---- results -----------------------------------------------------------------------------------------------------

F32 = "float32"


def ew(fn: str, rows: int, cols: int, kind: str = "elementwise", dtype: str = F32) -> Mapped:
    return Mapped(kind, {"op": "elementwise", "fn": fn, "rows": rows, "cols": cols, "dtype": dtype})


@pytest.mark.parametrize(
    "args,kwargs,expected",
    [
        # GEMMs: GPT-2's Conv1D addmm, an nn.Linear module, aten::linear, attention matmuls
        (("<built-in method addmm of type object>", [[3840], [4096, 1280], [1280, 3840]], [4096, 3840]), {},
         Mapped("linear", {"op": "linear", "batch": 1, "m": 4096, "k": 1280, "n": 3840})),
        (("x.dense", [[8, 512, 1024]], [8, 512, 4096]), {"module": "Linear"},
         Mapped("linear", {"op": "linear", "batch": 1, "m": 4096, "k": 1024, "n": 4096})),
        (("aten::linear", [[64, 100], [30, 100], [30]]), {},
         Mapped("linear", {"op": "linear", "batch": 1, "m": 64, "k": 100, "n": 30})),
        (("aten::addmm_", [[8], [16, 32], [32, 8]]), {}, Mapped("linear", {"op": "linear", "batch": 1, "m": 16,
                                                                          "k": 32, "n": 8})),
        (("matmul", [[4, 20, 1024, 64], [4, 20, 64, 1024]], [4, 20, 1024, 1024]), {},
         Mapped("bmm", {"op": "bmm", "batch": 80, "m": 1024, "k": 64, "n": 1024})),
        (("aten::matmul", [[2, 8, 16], [16, 4]]), {}, Mapped("linear", {"op": "linear", "batch": 1, "m": 16, "k": 16,
                                                                          "n": 4})),
        (("aten::baddbmm", [[6, 8, 4], [6, 8, 16], [6, 16, 4]]), {},
         Mapped("bmm", {"op": "bmm", "batch": 6, "m": 8, "k": 16, "n": 4})),
        (("aten::mm", [[4, 8]]), {}, Mapped("unmodelled", why="mm: shapes [[4, 8]]")),
        (("aten::bmm", []), {}, Mapped("unmodelled", why="bmm: shapes []")),
        # convolution: stride and padding from the output, or from a trace's arguments
        (("aten::conv2d", [[8, 3, 224, 224], [64, 3, 7, 7], [64]], [8, 64, 112, 112]), {},
         Mapped("conv", {"op": "conv_fwd", "batch": 8, "c_in": 3, "h_in": 224, "w_in": 224, "c_out": 64, "kh": 7,
                         "kw": 7, "stride_h": 2, "stride_w": 2, "pad_h": 3, "pad_w": 3, "dil_h": 1, "dil_w": 1,
                         "groups": 1})),
        (("aten::convolution", [[1, 16, 9, 9], [8, 16, 3, 3]]), {"params": {"stride": (2, 2), "padding": (0, 0)}},
         Mapped("conv", {"op": "conv_fwd", "batch": 1, "c_in": 16, "h_in": 9, "w_in": 9, "c_out": 8, "kh": 3,
                         "kw": 3, "stride_h": 2, "stride_w": 2, "pad_h": 0, "pad_w": 0, "dil_h": 1, "dil_w": 1,
                         "groups": 1})),
        (("conv", [[8, 64, 56, 56]]), {"module": "Conv2d"},
         Mapped("unmodelled", why="conv2d: shapes [[8, 64, 56, 56]]")),
        # row-wise kernels, gathers, copies, reductions
        (("<function softmax at 0x1>", [[4, 20, 1024, 1024]], [4, 20, 1024, 1024]), {},
         Mapped("softmax", {"op": "softmax", "rows": 81920, "cols": 1024, "dtype": F32})),
        (("ln", [[4, 1024, 1280]], [4, 1024, 1280]), {"module": "T5LayerNorm", "dtype": "torch.float16"},
         Mapped("layer_norm", {"op": "layer_norm", "rows": 4096, "cols": 1280, "dtype": "float16"})),
        (("wte", [[4, 1024]], [4, 1024, 1280]), {"module": "Embedding"}, ew("copy", 4096, 1280, "embedding")),
        (("aten::embedding", [[50257, 768], [8, 128]]), {}, ew("copy", 1024, 768, "embedding")),
        (("aten::gather", [[8, 100], [8, 5]]), {}, ew("copy", 8, 5, "embedding")),
        (("aten::copy_", [[4, 8], [2, 16, 3]]), {}, ew("copy", 32, 3, "copy")),
        (("contiguous", [[4, 1024, 20, 64]], [4, 1024, 20, 64]), {}, ew("copy", 81920, 64, "copy")),
        (("aten::cudnn_batch_norm", [[8, 64, 56, 56], [64], [64]]), {}, ew("copy", 28672, 56, "copy")),
        (("aten::sum", [[32, 1000]]), {}, ew("fill", 32, 1000, "reduction")),
        (("aten::cat", [[4, 8], [6, 8]]), {}, Mapped("concat", {"op": "concat", "rows": 10, "cols": 8, "dtype": F32})),
        (("aten::zero_", [[4, 8]]), {}, ew("fill", 4, 8)),
        # element-wise: the arity follows the streamed operands
        (("<built-in function add>", [[4, 16], [4, 16]], [4, 16]), {}, ew("add", 4, 16)),
        (("<built-in function mul>", [[4, 16]], [4, 16]), {}, ew("copy", 4, 16)),
        (("aten::relu_", [[4, 16]]), {}, ew("relu", 4, 16)),
        (("aten::where", [[4, 16], [4, 16], [4, 16]]), {}, ew("where", 4, 16)),
        (("act", [[4, 16]], [4, 16]), {"module": "QuickGELUActivation"}, ew("gelu", 4, 16)),
        (("aten::native_dropout", [[4, 16]]), {}, ew("copy", 4, 16)),
        (("aten::native_dropout_", [[4, 16]]), {}, Mapped("unmodelled", why="native_dropout_: no predictor")),
        # no kernel, and unknown ops
        (("<built-in function getitem>", [[4, 8]], [8]), {}, Mapped("dispatch")),
        (("drop", [[4, 8]], [4, 8]), {"module": "Dropout"}, Mapped("dispatch")),
        (("aten::view", []), {}, Mapped("dispatch")),
        (("aten::softmax", []), {}, Mapped("unmodelled", why="softmax: no tensor shapes")),
        (("aten::frobnicate", [[4, 8]]), {}, Mapped("unmodelled", why="frobnicate: no predictor")),
        (("aten::frobnicate", []), {}, Mapped("unmodelled", why="frobnicate: no tensor shapes")),
    ],
)  # fmt: skip
def test_representative_ops(args, kwargs, expected):
    assert classify(*args, **kwargs) == expected


def test_op_name_reads_an_op_overload_as_export_and_make_fx_spell_it():
    assert op_name("aten.addmm.default") == "addmm"
    assert op_name("aten.add_.Tensor") == "add_"
    assert op_name("aten._softmax") == "_softmax"  # an OpOverloadPacket
    assert op_name("prims.convert_element_type.default") == "convert_element_type"
    assert classify("aten.addmm.default", [[8], [4, 16], [16, 8]], [4, 8]).config["m"] == 4
    assert op_name("torch.nn.functional.softmax") == "softmax"  # a dotted path keeps its last part
