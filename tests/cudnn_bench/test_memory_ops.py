"""The memory-bound suite: PyTorch's kernels timed by the harness (cudnn_bench.memory_ops), stored
like every other suite, and read and fitted by seer's memory-bound model."""
from __future__ import annotations

import collections

import pytest
from fakes import fake_env

from cudnn_bench import collect as K
from cudnn_bench.configs import ELEMENTWISE_FNS, EmbConfig, MemConfig, config_from_key
from cudnn_bench.cost import CostModel
from cudnn_bench.errors import BenchError
from cudnn_bench.memory_ops import TorchOps, op_call
from cudnn_bench.plan import Budget, stratified_order, stratum
from cudnn_bench.suites import MAX_TABLE_BYTES, MEMORY_MAX_ELEMENTS, SUITES, memory_ops
from seer.data import records
from seer.fit.gpu import fit_memory
from seer.hardware import gpus

KINDS = {("elementwise", fn) for fn in ELEMENTWISE_FNS} | {
    ("softmax", ""), ("layer_norm", ""), ("transpose", ""), ("concat", "")}


def test_a_memory_config_names_itself_and_says_what_the_harness_runs():
    c = MemConfig("elementwise", 1024, 4096, "gelu")
    assert c.key() == "elementwise:r1024:c4096:gelu" and config_from_key(c.key()) == c
    assert config_from_key("softmax:r8:c50257:-") == MemConfig("softmax", 8, 50257)
    assert c.tensor_bytes() == {"x": 1024 * 4096 * 4, "y": 1024 * 4096 * 4}
    assert MemConfig("elementwise", 2, 4, "add").tensor_bytes("float16") == {"x": 32, "y": 16}  # two operands
    assert c.fields() == {"op": "elementwise", "rows": 1024, "cols": 4096, "fn": "gelu"}
    for bad in (MemConfig("elementwise", 2, 4, "frobnicate"), MemConfig("softmax", 2, 4, "relu"),
                MemConfig("concat", 2, 5), MemConfig("memcpy", 2, 4, "d2d"), MemConfig("concat", 2, 4, "add"),
                MemConfig("conv", 2, 4), MemConfig("layer_norm", 0, 4),
                MemConfig("transpose", 1, 768), MemConfig("transpose", 768, 1)):  # views: no kernel runs
        assert not bad.valid, bad
    assert MemConfig("transpose", 2, 768).valid


def test_the_suite_covers_every_kernel_and_any_prefix_spreads_over_them():
    cfgs = memory_ops()
    assert len(cfgs) == len({c.key() for c in cfgs}) and all(c.valid for c in cfgs)
    rows = [c for c in cfgs if isinstance(c, MemConfig)]
    assert {(c.op, c.fn) for c in rows} == KINDS
    assert max(c.rows * c.cols for c in rows) <= MEMORY_MAX_ELEMENTS
    per = collections.Counter(c.op for c in cfgs)
    assert per["softmax"] > 5 * per["concat"]  # every row width for the row-wise kernels
    lookups = {stratum(c) for c in cfgs if isinstance(c, EmbConfig)}
    assert lookups == {("embedding_fwd", False), ("embedding_fwd", True)}  # gathers and bags
    first = stratified_order(cfgs, salt="memory_ops")[: len(KINDS) + len(lookups)]
    assert {stratum(c) for c in first} == KINDS | lookups
    assert SUITES["memory_ops"].op == "memory"


def test_an_embedding_lookup_names_itself_and_costs_what_it_moves():
    c = EmbConfig(512, 50257, 768)
    assert c.key() == "embedding_fwd:b512:e50257:t1:l1:d768:sum" and config_from_key(c.key()) == c
    assert c.fields() == {"op": "embedding_fwd", "batch": 512, "num_embeddings": 50257, "num_tables": 1,
                          "bag_size": 1, "emb_dim": 768}
    assert c.tensor_bytes()["table"] == 50257 * 768 * 4  # allocated (the plan checks it fits)
    assert c.moved_bytes() == 512 * 768 * 4 * 2 + 512 * 8  # read and written rows, the indices
    bag = EmbConfig(2048, 10**6, 64, 32)
    assert bag.flops() == 2048 * 31 * 64 and bag.moved_bytes() == 2048 * 32 * 64 * 4 + 2048 * 32 * 8 + 2048 * 64 * 4
    cost = CostModel.for_gpu(gpus.lookup("h100-sxm"))
    assert cost.call_s(c) < 2 * cost.launch_s  # a gather of 1.6 MB, not the 154 MB table
    assert not EmbConfig(8, 100, 16, num_tables=2).valid and not EmbConfig(0, 100, 16).valid
    tables = [e.tensor_bytes()["table"] for e in memory_ops() if isinstance(e, EmbConfig)]
    assert max(tables) <= MAX_TABLE_BYTES and len(tables) > 200


@pytest.mark.parametrize("bag", [1, 3])
def test_a_lookup_gathers_its_rows_and_sums_its_bags_on_any_torch_device(bag):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    out = op_call(torch, EmbConfig(4, 10, 6, bag), "float32", torch.device("cpu"))()
    torch.manual_seed(0)  # the same table and indices again
    table, idx = torch.rand(10, 6), torch.randint(0, 10, (4 * bag,))
    assert torch.allclose(out, table[idx].view(4, bag, 6).sum(dim=1))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_call_computes_its_op_on_any_torch_device(kind):
    torch = pytest.importorskip("torch")
    op, fn = kind
    cfg = MemConfig(op, 3, 8, fn)
    out = op_call(torch, cfg, "float32", torch.device("cpu"))()
    assert tuple(out.shape) == ((8, 3) if op == "transpose" else (3, 8))
    if op == "softmax":
        assert torch.allclose(out.sum(dim=1), torch.ones(3))
    if op == "layer_norm":
        assert torch.allclose(out.mean(dim=1), torch.zeros(3), atol=1e-5)
    if (op, fn) == ("elementwise", "relu"):
        assert bool((out >= 0).all())
    with pytest.raises(BenchError, match="not a memory-bound configuration"):
        op_call(torch, MemConfig(op, 3, 8, "nope"), "float32", torch.device("cpu"))


def test_pytorch_without_a_gpu_is_one_sentence():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(BenchError, match="sees no CUDA GPU"):
        TorchOps(0, 0)


def test_pytorchs_errors_become_the_calls_status():
    """Out of memory and other RuntimeErrors, in making a call or running it, become the
    harness's errors (recorded as the call's status), not a crash of the run."""
    torch = pytest.importorskip("torch")
    from cudnn_bench.errors import DeviceOutOfMemory, TorchError, status_of

    ops = object.__new__(TorchOps)
    ops.torch, ops.device = torch, torch.device("cpu")

    def oom():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore")

    def bad():
        raise RuntimeError("CUDA error: invalid configuration argument\nmore")

    with pytest.raises(DeviceOutOfMemory, match=r"Tried to allocate 2\.00 GiB$") as e:
        ops._checked(oom)
    assert status_of(e.value) == "out_of_memory"
    with pytest.raises(TorchError, match=r"invalid configuration argument$") as e2:
        ops._checked(bad)
    assert status_of(e2.value) == "failed"
    run = ops.make(MemConfig("softmax", 2, 4), "float32")
    assert run() is None


def _run(tmp_path, env, suites, limit=None):
    opts = K.Options(out=tmp_path, suites=suites, limit=limit, budget=Budget(), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=3, min_reps=1))
    return K.run(opts, env, log=lambda s: None)


def test_the_harness_times_the_suite_and_seer_fits_the_gpus_bandwidth(tmp_path):
    """The fake GPU's kernels stream 2 TB/s after 3 us: collected, read and fitted, the
    memory-bound model finds both."""
    env = fake_env()
    run = _run(tmp_path, env, ["memory_ops"], limit=280)
    assert run.measured == 280 and env.torch_ops.made == env.torch_ops.released == 280
    rec = records.read_csv(run.folder / "memory_ops.csv")
    assert set(zip(rec["op"], rec["fn"].fillna(""))) == KINDS | {("embedding_fwd", "")}
    lookups = rec[rec["op"] == "embedding_fwd"]
    moved = [EmbConfig(int(r.batch), int(r.num_embeddings), int(r.emb_dim), int(r.bag_size)).moved_bytes()
             for r in lookups.itertuples()]
    assert lookups["time_ms"].to_numpy() == pytest.approx([m / 2e9 + 0.003 for m in moved], rel=0.01)
    assert (rec["status"] == "ok").all() and (rec["time_basis"] == "span").mean() > 0.5
    assert rec["kernel"].str.contains("at::native|SoftMax").all()
    fit = fit_memory(rec.assign(source="memory_ops.csv"))
    kernels = fit.to_dict()["gpus"]["h100-sxm"]["kernels"]
    assert {"layer_norm", "concat", "transpose", "elementwise:gelu"} <= set(kernels)
    assert any(k.startswith("softmax") for k in kernels)
    for k in ("concat", "elementwise:add", "transpose"):
        assert kernels[k]["bw_gbs"] == pytest.approx(2000, rel=0.02) and kernels[k]["latency_us"] == pytest.approx(
            3, rel=0.05)


def test_without_pytorch_the_memory_suite_is_left_out_and_the_rest_measured(tmp_path):
    env = fake_env()
    env.torch_ops = None
    run = _run(tmp_path, env, ["gemm_layers", "memory_ops"], limit=2)
    assert run.measured == 2 and not (run.folder / "memory_ops.csv").exists()
