"""seer.workload.hf: BERT-Large and GPT2-Large from their published configs, against NeuSight's graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from seer.errors import SeerError
from seer.predict import available, load_or_transfer
from seer.workload.capture import capture, predict_capture
from seer.workload.graph import read_graph
from seer.workload.hf import hf_model
from seer.workload.match import compare
from seer.workload.model_time import model_time

CONFIGS = Path(__file__).parents[2] / "data" / "hf"
# NeuSight's graph, the config, the class NeuSight traced, batch, sequence; BERT's graph adds an
# attention mask in every layer (transformers 4.x always built one), so the capture passes one
MODELS = {
    "gpt2_large-inf-1024-4": ("gpt2-large.json", None, 4, 1024, False),
    "bert_large-inf-512-8": ("bert-large-uncased.json", "BertForSequenceClassification", 8, 512, True),
}
KEPT_APART = {"linear", "bmm", "conv", "softmax", "layer_norm", "embedding"}  # kinds that must match exactly


@pytest.fixture(scope="module")
def graphs():
    folder = Path(__file__).parents[4] / "shared" / "datasets" / "neusight-models"
    if not folder.is_dir():
        pytest.skip("../shared/datasets/neusight-models not found")
    return folder


@pytest.fixture(scope="module")
def captured():
    out = {}
    for name, (config, arch, batch, seq, mask) in MODELS.items():
        model, inputs = hf_model(CONFIGS / config, batch, seq, architecture=arch, attention_mask=mask)
        out[name] = capture(model, inputs)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_the_capture_launches_the_graphs_kernels_with_their_shapes(graphs, captured, name):
    """Node by node, by what seer times: every GEMM, softmax, norm and embedding of NeuSight's graph
    (x num_layer) is in the capture with the same shapes and count; the element-wise kernels
    differ only where transformers 5 spells attention differently (scaled by a multiply, no
    scalar `full` tensors) and in matmul's copies of non-contiguous operands, which eager PyTorch
    launches inside NeuSight's `matmul` node too."""
    graph = read_graph(next(graphs.glob(f"*/{name}.csv")))
    table = compare(graph.ops, captured[name].ops)
    size = [c.get("rows", 1) * c.get("cols", 1) * c.get("m", 1) * c.get("n", 1) for c in table["config"]]
    strict = table[
        table["kind"].isin(KEPT_APART).to_numpy() & (np.array(size) >= 1 << 16)
    ]  # not a mask's 512 gathered ids
    assert (strict["difference"] == 0).all(), strict[strict["difference"] != 0]
    assert len(strict) >= 8
    extra = table[(table["difference"] != 0) & ~table["kind"].isin(KEPT_APART)]
    big = [c for c in extra["config"] if c["rows"] * c["cols"] > 1 << 20]
    # the large kernels that differ: copies of a matmul's operands (q, k^T, v per layer) and, once,
    # the building of the attention mask (one or two kernels in the prologue)
    large = np.array([c["rows"] * c["cols"] > 1 << 20 for c in extra["config"]], dtype=bool)
    copies = extra[(extra["kind"] == "copy").to_numpy() & (extra["difference"] > 0).to_numpy() & large]
    assert copies["difference"].sum() == 3 * graph.num_layer
    others = extra[~extra.index.isin(copies.index) & large]
    assert len(big) == len(copies) + len(others) and (others["difference"].abs() <= 2).all()  # prologue only


@pytest.mark.parametrize("name", MODELS)
def test_whole_model_within_two_and_a_half_percent_of_the_graphs_prediction_on_every_gpu(graphs, captured, name):
    """The capture launches matmul's copies of non-contiguous operands, which the graph counts
    inside its `matmul` nodes: on the H100's fits about 1.1 ms of BERT-Large's 68 (1.5%), and its
    linear layers come 1% under the graph's; 1.9% apart in all before the H100's GEMMs were
    fitted with their split-K counts (2026-12-01), 2.0% since."""
    path = next(graphs.glob(f"*/{name}.csv"))
    for gpu in available():
        fits = load_or_transfer(gpu)
        mine = predict_capture(captured[name], fits=fits).totals
        ref = model_time(path, fits=fits).totals
        if ref["unmodelled_ms"] > 0:  # the GPU's fits lack GEMMs: the graph counts them as measured (on another GPU)
            unmodelled = set(model_time(path, fits=fits).ops.query("kind == 'unmodelled'")["name"])
            assert unmodelled and mine["unmodelled_ms"] == 0
            continue
        assert mine["predicted_ms"] == pytest.approx(ref["predicted_ms"], rel=0.025), gpu


def test_a_config_without_model_type_or_a_missing_file_is_a_seer_error(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 8}')
    with pytest.raises(SeerError, match="model_type"):
        hf_model(bad)
    with pytest.raises(SeerError, match="no such config file"):
        hf_model(tmp_path / "missing.json")
    with pytest.raises(SeerError, match="exceeds"):
        hf_model(CONFIGS / "bert-large-uncased.json", 1, 4096)


def test_a_tiny_config_trains_in_half_precision():
    config = {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 256, "n_positions": 64}
    model, inputs = hf_model(config, 2, 32, dtype="float16")
    mt = predict_capture(capture(model, inputs, training=True), "h100-sxm", optimizer="adam")
    assert set(mt.ops["dtype"]) >= {"float16"}
    assert {"forward", "backward", "optimizer"} == set(mt.ops["direction"])
    back = set(mt.ops.query("direction == 'backward'")["op"])
    assert {"native_layer_norm_backward", "_softmax_backward_data", "embedding_dense_backward", "mm"} <= back


@pytest.mark.parametrize(
    "graph,config,batch,seq,mask",
    [("gpt2_large-train-1024-1", "gpt2-large.json", 1, 1024, False),
     ("bert_large-train-512-2", "bert-large-uncased.json", 2, 512, True)],
)  # fmt: skip
def test_a_captured_training_step_agrees_with_neusights_training_graph(graphs, graph, config, batch, seq, mask):
    """AOTAutograd's backward ops (the capture) against seer's backward rules on NeuSight's training
    graph of the same model: forward and backward kernel time within 5% on the V100 (the graph's
    gradient accumulation and the capture's optimizer left out: one has only the other)."""
    from seer.workload.hf import predict_hf

    path = graphs.parent / "neusight-train" / "Tesla_V100-PCIE-32GB" / f"{graph}.csv"
    if not path.exists():
        pytest.skip(f"{path} not found")
    cap = predict_hf(CONFIGS / config, "v100-pcie", batch=batch, seq=seq, training=True, optimizer=None,
                     attention_mask=mask)  # fmt: skip
    ref = model_time(path)

    def kernels(ops, direction):
        timed = ops["predicted_ms"].where(ops["kind"] != "dispatch", 0) * ops["count"]
        return float(timed[ops["direction"] == direction].sum())

    for d in ("forward", "backward"):
        assert kernels(cap.ops, d) == pytest.approx(kernels(ref.ops, d), rel=0.05), d
    assert set(cap.ops["direction"]) == {"forward", "backward"} and not (cap.ops["kind"] == "unmodelled").any()
