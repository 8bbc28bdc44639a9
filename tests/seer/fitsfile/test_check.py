"""seer.fitsfile.check: a fits file that parses but is wrong is refused on load, in one sentence that
names the file, the JSON path of the bad field and what was expected there."""

from __future__ import annotations

import copy
import json
import math
import re

import pytest

import seer
from seer import fitsfile, models
from seer.errors import SeerError
from seer.fitsfile.check import check

SIX = {"a100-40gb", "a100-80gb-pcie", "p100-pcie", "p4", "t4", "v100-pcie"}


def _read(path):
    """What loading does once fitsfile.read calls check (until then: both, explicitly)."""
    doc = fitsfile.read(path)
    check(doc, path)
    return doc


@pytest.fixture(scope="module")
def t4_text():
    if "t4" not in fitsfile.bundled():
        pytest.skip("no bundled t4 fits")
    return fitsfile.resolve("t4").read_text()


def _variant(doc, pred):
    return next(k for k, v in doc["variants"].items() if pred(v))


def _plain(doc):  # a bounds variant (not SEER's typed regimes) with a compute bound of 3+ terms
    return _variant(doc, lambda v: v["type_chooser"] is None and len(v["compute"]["coef"]) >= 3)


def _clocked(doc):
    return _variant(doc, lambda v: v["clock"] is not None)


def _key(name):
    """How a JSON path shows an object member: .name where it is an identifier, else ["name"]."""
    return f".{name}" if name.isidentifier() else f"[{json.dumps(name)}]"


def _kernel(doc, pred=lambda k: k.get("coef") is not None):
    slug, g = next(iter(doc["memory_bound"]["gpus"].items()))
    key = next(k for k, v in g["kernels"].items() if pred(v))
    return g["kernels"][key], f"memory_bound.gpus{_key(slug)}.kernels{_key(key)}"


def _set(path_fn, value):
    """A mutation that sets doc[...][last] = value, where path_fn(doc) -> (container, last, path)."""

    def mutate(doc):
        container, last, path = path_fn(doc)
        container[last] = value
        return path

    return mutate


def _coef(i):
    def at(doc):
        k = _plain(doc)
        return doc["variants"][k]["compute"]["coef"], i, f'variants["{k}"].compute.coef[{i}]'

    return at


def _field(name):
    def at(doc):
        k = _plain(doc)
        return doc["variants"][k], name, f'variants["{k}"].{name}'

    return at


def _drop(name):
    def mutate(doc):
        k = _plain(doc)
        del doc["variants"][k][name]
        return f'variants["{k}"].{name} is missing'

    return mutate


def _short_coef(doc):
    k = _plain(doc)
    doc["variants"][k]["compute"]["coef"].pop()
    return f'variants["{k}"].compute.coef must be a list of {len(doc["variants"][k]["compute"]["features"])} numbers'


def _swap_features(doc):
    k = _plain(doc)
    f = doc["variants"][k]["compute"]["features"]
    f[0], f[1] = f[1], f[0]
    return f'variants["{k}"].compute.features must be ['


def _clock(i, value):
    def mutate(doc):
        k = _clocked(doc)
        doc["variants"][k]["clock"][i] = value
        return f'variants["{k}"].clock[{i}] must be a finite number in ' + ("(-0.5, 1)" if i else "[-20, 20]")

    return mutate


def _no_slug(doc):
    del doc["gpu"]["slug"]
    return "gpu.slug is missing (expected a non-empty string)"


def _chooser(mutate_one):
    def mutate(doc):
        key = next(iter(doc["choosers"]))
        return mutate_one(doc, key, doc["choosers"][key], f"choosers[{json.dumps(key)}]")

    return mutate


def _label_not_a_variant(doc, key, ch, w):
    ch["labels"][0] = "bmm:default:no_such_kernel"
    return f"{w}.labels[0] must be the key of a fitted variant in variants"


def _label_idx_out_of_range(doc, key, ch, w):
    ch["label_idx"][0] = len(ch["labels"])
    return f"{w}.label_idx[0] must be a whole number in [0, {len(ch['labels']) - 1}]"


def _voters(voters, expected):
    def mutate_one(doc, key, ch, w):
        ch["voters"] = voters
        return f"{w}.voters{expected}"

    return mutate_one


def _points_garbage(doc, key, ch, w):
    ch["points"]["f4"] = "@@@@"
    return f"{w}.points.f4 must be base64 float32 data of shape"


def _rekeyed(doc, key, ch, w):
    doc["choosers"][key + "x"] = doc["choosers"].pop(key)
    return f"choosers[{json.dumps(key + 'x')}] must be keyed {json.dumps(key)}"


def _geometry(field, value, expected):
    def mutate(doc):
        k = _variant(doc, lambda v: any(r["kind"] == "ceil" for r in v["geometry"]["axes"].values()))
        axis = next(a for a, r in doc["variants"][k]["geometry"]["axes"].items() if r["kind"] == "ceil")
        doc["variants"][k]["geometry"]["axes"][axis][field] = value
        return f'variants["{k}"].geometry.axes.{axis}.{field} must be {expected}'

    return mutate


def _product(exprs, divs, field, expected, **extra):
    """A ceil rule turned into a product of ceilings (seer.models.geometry.Product) with `exprs`
    and `divs` (and `extra` fields: its `times`)."""

    def mutate(doc):
        k = _variant(doc, lambda v: any(r["kind"] == "ceil" for r in v["geometry"]["axes"].values()))
        axes = doc["variants"][k]["geometry"]["axes"]
        axis = next(a for a, r in axes.items() if r["kind"] == "ceil")
        axes[axis] = {"kind": "prod", "exprs": exprs, "divs": divs, "match": 1.0, **extra}
        return f'variants["{k}"].geometry.axes.{axis}.{field} must be {expected}'

    return mutate


def _packed(fields, field, expected):
    """A ceil rule of a convolution turned into whole channels packed a block
    (seer.models.geometry.Packed) with `fields`."""

    def mutate(doc):
        def ceil_conv(v):
            return v["op"].startswith("conv") and any(r["kind"] == "ceil" for r in v["geometry"]["axes"].values())

        k = _variant(doc, ceil_conv)
        axes = doc["variants"][k]["geometry"]["axes"]
        axis = next(a for a, r in axes.items() if r["kind"] == "ceil")
        axes[axis] = {"kind": "packed", **fields, "match": 1.0}
        return f'variants["{k}"].geometry.axes.{axis}.{field} must be {expected}'

    return mutate


def _type_chooser_on_bounds(doc):
    k = _plain(doc)
    doc["variants"][k]["type_chooser"] = next(iter(doc["choosers"].values()))
    return f'variants["{k}"].type_chooser must be null for feature set'


def _memory_schema(doc):
    doc["memory_bound"]["schema"] = "seer.analytical.memory_bound/0"
    return 'memory_bound.schema must be "seer.analytical.memory_bound/1"'


def _memory_bytes(doc):
    k, w = _kernel(doc)
    k["coef"]["bytes"] = -1e-9
    return f"{w}.coef.bytes must be a finite number in (0, 1e+06]"


def _memory_reread(doc):
    k, w = _kernel(doc, lambda k: k.get("reread_cols") is not None)
    del k["coef"]["reread_bytes"]
    return f"{w}.coef must be an object of const, bytes"


def _memory_floor(doc):
    k, w = _kernel(doc)
    k["floor_ms"] = 0
    return f"{w}.floor_ms must be a finite number in (0, 1e+06]"


def _drift_short(doc):
    src = next(iter(doc["drift"]))
    doc["drift"][src]["log_slowdown"].pop()
    return f"drift[{json.dumps(src)}].log_slowdown must be a list of 11 numbers"


def _walk(doc):
    doc["dataset"]["rows"] = math.nan
    return "dataset.rows must be a finite number, got NaN"


BAD = {
    "nan coefficient": (_set(_coef(2), math.nan), "compute.coef[2] must be a finite number in [0, 1e+06], got NaN"),
    "1e308 coefficient": (_set(_coef(2), 1e308), "compute.coef[2] must be a finite number in [0, 1e+06], got 1e+308"),
    "negative coefficient": (_set(_coef(0), -0.5), "compute.coef[0] must be a finite number in [0, 1e+06], got -0.5"),
    "infinite coefficient": (_set(_coef(1), math.inf), "got Infinity"),
    "blocks_per_sm 0": (_set(_field("blocks_per_sm"), 0), "blocks_per_sm must be a whole number >= 1, got 0"),
    "blocks_per_sm 1.5": (_set(_field("blocks_per_sm"), 1.5), "blocks_per_sm must be a whole number >= 1, got 1.5"),
    "blocks_per_sm true": (_set(_field("blocks_per_sm"), True), "blocks_per_sm must be a whole number >= 1, got true"),
    "floor_ms 0": (_set(_field("floor_ms"), 0), "floor_ms must be a finite number in (0, 1e+06], got 0"),
    "variant sms 0": (_set(_field("sms"), 0), "sms must be a whole number >= 1, got 0"),
    "op unknown": (
        _set(_field("op"), "matmul"),
        'op must be one of "conv_fwd", "conv_bwd_data", "conv_bwd_filter", "gemm", "bmm", "linear", got "matmul"',
    ),
    "compute a string": (_set(_field("compute"), "x"), 'compute must be an object, got "x"'),
    "floor missing": (_drop("floor_ms"), "(expected a time in ms > 0)"),
    "coef one short": (_short_coef, "numbers, got a list of"),
    "features out of order": (_swap_features, "(feature set"),
    "clock c1 = 1": (_clock(1, 1.0), "got 1.0"),
    "clock c1 = -0.5": (_clock(1, -0.5), "got -0.5"),
    "clock c0 = 1e308": (_clock(0, 1e308), "got 1e+308"),
    "gpu a string": (lambda d: d.update(gpu="t4") or "gpu must be an object", 'got "t4"'),
    "gpu without slug": (_no_slug, "gpu.slug"),
    "gpu sms 0": (lambda d: d["gpu"].update(sms=0) or "gpu.sms must be a whole number >= 1", "got 0"),
    "gpu bandwidth nan": (
        lambda d: d["gpu"].update(dram_gbs=math.nan) or "gpu.dram_gbs must be a finite number > 0",
        "NaN",
    ),
    "gpu flops 1e308": (
        lambda d: d["gpu"].update(fp32_tflops=1e308) or "gpu.fp32_tflops must be a finite number in (0, 1e+12]",
        "got 1e+308",
    ),
    "gpu cc": (lambda d: d["gpu"].update(cc=7.5) or 'gpu.cc must be a compute capability such as "8.0"', "got 7.5"),
    "chooser label": (_chooser(_label_not_a_variant), "no_such_kernel"),
    "chooser label_idx": (_chooser(_label_idx_out_of_range), "got"),
    "chooser points": (_chooser(_points_garbage), "does not decode"),
    "chooser voters none": (_chooser(_voters(0, " must be a whole number in [1, ")), "got 0"),
    "chooser voters beyond": (_chooser(_voters(10**9, " must be a whole number in [1, ")), "got 1000000000"),
    "chooser key": (_chooser(_rekeyed), "(its op:algo)"),
    "geometry expr": (_geometry("expr", "Z", "one of"), 'got "Z"'),
    "geometry div": (_geometry("div", 0, "a whole number >= 1"), "got 0"),
    "geometry kind": (
        _geometry("kind", "table", 'one of "ceil", "mulceil", "prod", "packed", "const", "knn"'),
        'got "table"',
    ),
    "geometry packed width": (_packed({"expr": "C", "per": "Z", "div": 64}, "per", "one of"), 'got "Z"'),
    "geometry packed tile": (_packed({"expr": "C", "per": "RS", "div": 0}, "div", "a whole number >= 1"), "got 0"),
    "geometry product size": (_product(["batch", "Z"], [16, 16], "exprs[1]", "one of"), 'got "Z"'),
    "geometry product length": (_product(["batch"], [16], "exprs", "a list of 2 or 3 sizes"), '["batch"]'),
    "geometry product tiles": (_product(["batch", "m"], [16], "divs", "a list of 2"), "got a list of 1"),
    "geometry product multiple": (_product(["batch", "C"], [16, 8], "times", "a whole number", times=1.5), "got 1.5"),
    "geometry product multiple's length": (
        _product([], [], "exprs", "a list of 1 to 3 sizes", times=2),
        "got []",
    ),
    "type chooser on bounds": (_type_chooser_on_bounds, "got an object"),
    "memory schema": (_memory_schema, "memory_bound/0"),
    "memory bytes": (_memory_bytes, "got -1e-09"),
    "memory reread": (_memory_reread, "reread_bytes exactly where reread_cols is set"),
    "memory floor": (_memory_floor, "got 0"),
    "drift": (_drift_short, "got a list of 10"),
    "conv_timing": (
        lambda d: d.update(conv_timing="sometimes") or 'conv_timing must be one of "every_algorithm", "pick_only"',
        'got "sometimes"',
    ),
    "gates": (
        lambda d: (
            d.setdefault("options", {}).update(gates="every") or 'options.gates must be one of "workspace", "captured", "loops"'
        ),
        'got "every"',
    ),
    "nan anywhere": (_walk, "NaN"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_field_is_one_sentence_with_file_and_json_path(case, t4_text, tmp_path):
    mutate, tail = BAD[case]
    doc = json.loads(t4_text)
    where = mutate(doc)
    p = tmp_path / "t4.json"
    p.write_text(json.dumps(doc))  # NaN and Infinity as Python's json writes them
    for call in (lambda: _read(p), lambda: check(json.loads(p.read_text()), p)):
        with pytest.raises(SeerError) as info:
            call()
        msg = str(info.value)
        assert msg.startswith(f"fits file {p}: "), msg
        assert where in msg and tail in msg, msg
        assert "\n" not in msg and msg.count(" must be ") + msg.count(" is missing") == 1, msg


@pytest.mark.parametrize("name", sorted(SIX))
def test_bundled_fits_pass(name):
    if name not in fitsfile.bundled():
        pytest.skip(f"no bundled {name} fits")
    path = fitsfile.resolve(name)
    check(_read(path), path)


def test_all_six_bundled_fits_are_there():
    if not fitsfile.bundled():
        pytest.skip("no bundled fits")
    assert set(fitsfile.bundled()) >= SIX


def test_valid_edge_values_pass(t4_text, tmp_path):
    """What the fitting can write: a clock law of any c0 and c1 inside (-0.5, 1), a negative
    memory-bound constant, an R^2 of null, a kernel measured only at its floor."""
    doc = json.loads(t4_text)
    k = _clocked(doc)
    doc["variants"][k]["clock"] = [-3.0, -0.49]
    doc["variants"][k]["compute"]["r2"] = None
    kern, _ = _kernel(doc)
    kern["coef"]["const"] = -0.002
    slug = next(iter(doc["memory_bound"]["gpus"]))
    doc["memory_bound"]["gpus"][slug]["kernels"]["concat"] = {
        "floor_ms": 0.01,
        "floor_se_ms": 0.001,
        "coef": None,
        "n": 12,
        "n_floor": 12,
        "bw_source": "datasheet",
        "train_rmspe": 0.1,
        "train_median_ape": 0.05,
    }
    doc.setdefault("options", {})["gates"] = "captured"
    p = tmp_path / "edge.json"
    p.write_text(json.dumps(doc))
    _read(p)
    assert seer.load(p).predict(op="concat", rows=1024, cols=1024) > 0


def test_the_document_itself_must_be_an_object(tmp_path):
    with pytest.raises(SeerError, match="the document must be an object, got a list of 0"):
        check([], tmp_path / "x.json")


def test_typed_variants_need_their_regimes(t4_text, tmp_path):
    """SEER's typed feature set: every type the type chooser names has its regime."""
    from synthetic import typed_records

    tr = typed_records(900)
    doc = json.loads(t4_text)
    key = _variant(doc, lambda v: v["op"] == "bmm")
    vkey = models.VariantKey("bmm", "", doc["variants"][key]["variant"])
    m = models.VariantModel(vkey, cc="7.5", sms=doc["gpu"]["sms"]).fit(tr)
    assert m.feature_set.typed and m.type_chooser is not None
    doc["variants"][key] = m.to_dict()
    path = tmp_path / "typed.json"
    check(doc, path)
    text = json.dumps(doc)
    doc["variants"][key]["type_chooser"]["labels"][-1] = "bogus"
    with pytest.raises(SeerError, match=rf'variants\["{key}"\]\.type_chooser\.labels\[\d\] must be one of'):
        check(doc, path)
    doc = json.loads(text)
    v = doc["variants"][key]
    ty = v["type_chooser"]["labels"][0]
    v[ty] = None
    with pytest.raises(SeerError, match=rf'variants\["{key}"\]\.{ty} must be the {ty} regime that type_chooser names'):
        check(doc, path)


def test_seer_load_refuses_bad_and_binary_files(t4_text, tmp_path):
    doc = json.loads(t4_text)
    _set(_coef(2), math.nan)(doc)
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(SeerError, match=r"compute\.coef\[2\] must be a finite number"):
        seer.load(bad)
    binary = tmp_path / "binary.json"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(SeerError, match="binary.json") as info:
        seer.load(binary)
    assert "\n" not in str(info.value)


def _tree_doc():
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    key, kind = next(
        (k, kind)
        for k, v in doc["choosers"].items()
        for kind, tree in v.get("trees", {}).items()
        if not tree.get("products")
    )
    return doc, doc["choosers"][key]["trees"][kind], key, kind


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda t: t["label"].__setitem__(0, 99), "label[0]"),
        (lambda t: t["feature"].__setitem__(0, 14), "feature[0]"),
        (lambda t: t["left"].__setitem__(0, 0), "left[0]"),
        (lambda t: t["threshold"].pop(), "threshold"),
        (lambda t: t.__setitem__("min_leaf", 0), "min_leaf"),
        (lambda t: t.__setitem__("products", 1), "products"),
        (lambda t: t.update(products=True, feature=[23, *t["feature"][1:]]), "feature[0]"),  # 14 sizes + 9 products
        (lambda t: t.__setitem__("members", [1 << 40] * len(t["label"])), "members[0]"),  # a label beyond the chooser's
        (lambda t: t.__setitem__("members", [1]), "members"),
    ],
)
def test_a_bad_tree_is_refused_where_it_is_bad(edit, where, tmp_path):
    doc, tree, key, kind = _tree_doc()
    edit(tree)
    with pytest.raises(SeerError, match=re.escape(f'choosers["{key}"].trees.{kind}.{where}')):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


@pytest.mark.parametrize("switch", ["per_group", "tiles", "bins"])
def test_a_variant_run_once_per_group_or_tile_says_so_with_a_switch(switch, tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    key = next(k for k, v in doc["variants"].items() if v["op"] == "conv_fwd")
    doc["variants"][key][switch] = True
    check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
    doc["variants"][key][switch] = "yes"
    with pytest.raises(SeerError, match=re.escape(f'variants["{key}"].{switch}')):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


def test_a_tree_may_name_its_leaves_members(tmp_path):
    doc, tree, _, _ = _tree_doc()
    tree["members"] = [3] * len(tree["label"])  # labels 0 and 1 ran in every leaf
    check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


def test_a_tree_may_split_the_products_of_a_convolution(tmp_path):
    doc, tree, _, _ = _tree_doc()
    tree.update(products=True, feature=[22, *tree["feature"][1:]])  # the last product, the multiply-adds
    check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


@pytest.mark.parametrize("name", ["gate", "bin_gate"])
def test_a_gate_is_a_yes_or_no_tree(name, tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    forest = copy.deepcopy(next(v["gate"] for v in doc["choosers"].values() if "gate" in v))
    for gate, where in ((forest["forest"][0], f"{name}.label"), (forest, f"{name}.forest[1].label")):
        doc["choosers"]["conv_fwd:FFT"][name] = gate  # a copy: the edit below must be the FFT's alone
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")  # one tree (older files), or a forest
        tree = gate["forest"][1] if "forest" in gate else gate
        leaf = tree["feature"].index(-1)
        was, tree["label"][leaf] = tree["label"][leaf], 2  # a third answer: a gate has two
        with pytest.raises(SeerError, match=re.escape(f'choosers["conv_fwd:FFT"].{where}[{leaf}]')):
            check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
        tree["label"][leaf] = was


def test_a_reach_tree_is_checked_as_a_tree(tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    key, kind = next((k, kind) for k, v in doc["choosers"].items() for kind in v.get("reach_trees", {}))
    check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
    doc["choosers"][key]["reach_trees"][kind]["label"][-1] = 99  # a label the chooser has not
    with pytest.raises(SeerError, match=re.escape(f'choosers["{key}"].reach_trees.{kind}.label[')):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
    doc["choosers"][key]["reach_trees"] = {"depthwise": doc["choosers"][key]["reach_trees"][kind]}
    with pytest.raises(SeerError, match="ungrouped or grouped"):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


def test_a_tree_of_an_unknown_kind_is_refused(tmp_path):
    doc, tree, key, _ = _tree_doc()
    doc["choosers"][key]["trees"]["depthwise"] = tree
    with pytest.raises(SeerError, match="ungrouped or grouped"):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda d: d.__setitem__("scale", 0.0), ".scale"),
        (lambda d: d.__setitem__("algo", "ALGO_0"), ".algo"),  # not a gradient that runs the forward's pipeline
        (lambda d: d.__setitem__("op", "conv_fwd"), ".op"),
        (lambda d: d.__setitem__("n", 0), ".n"),
        (lambda d: d.__setitem__("algo", "FFT_TILING"), ""),  # keyed as another algorithm's
    ],
)
def test_a_bad_forward_dual_is_refused_where_it_is_bad(edit, where, tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    key = "conv_bwd_filter:FFT"
    check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
    edit(doc["forward_duals"][key])
    with pytest.raises(SeerError, match=re.escape(f'forward_duals["{key}"]{where}')):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda d: d.__setitem__("length", 0.0), ".local.length"),
        (lambda d: d.__setitem__("prior", -1), ".local.prior"),
        (lambda d: d.__setitem__("neighbours", 0), ".local.neighbours"),
        (lambda d: d.__setitem__("ridge", -0.3), ".local.ridge"),
        (lambda d: d["points"].__setitem__("shape", [d["points"]["shape"][0], 3]), ".local.points.shape"),
        (lambda d: d.__setitem__("residuals", {**d["residuals"], "shape": [1]}), ".local.residuals"),
    ],
)
def test_a_bad_local_correction_is_refused_where_it_is_bad(edit, where, tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    key = next(k for k, v in doc["variants"].items() if v.get("local") and v["op"] == "conv_fwd")
    check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
    edit(doc["variants"][key]["local"])
    with pytest.raises(SeerError, match=re.escape(f'variants["{key}"]{where}')):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


def test_the_local_choice_of_each_op_is_checked(tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    assert set(doc["local"]) <= {"conv_fwd", "conv_bwd_data", "conv_bwd_filter", "gemm"}
    doc["local"]["conv_fwd"]["loo_rmspe"] = -0.1
    with pytest.raises(SeerError, match=re.escape("local.conv_fwd.loo_rmspe")):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
    doc["local"]["conv_fwd"]["loo_rmspe"] = 0.1
    doc["local"]["conv_fwd"]["lent"] = 1.5
    with pytest.raises(SeerError, match=re.escape("local.conv_fwd.lent")):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")
