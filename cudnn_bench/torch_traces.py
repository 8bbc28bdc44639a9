"""python3 -m cudnn_bench.torch_traces: record PyTorch profiler (Kineto) Chrome traces of two
plain-PyTorch models, inference and training steps, so that seer's trace parser and replay have
real traces from a known GPU, known models and known settings to work on.

Models (no model hub, no torchvision): a GPT-style decoder stack whose attention is written out
as matmul / masked_fill / softmax / matmul, so that each op and its kernels show in the trace,
and a ResNet-style bottleneck conv stack on 224x224 images. FP32 with TF32 off and
cudnn.benchmark off, so that cuBLAS and cuDNN make their deterministic heuristic picks.

A training step (--modes training) is zero_grad, forward, cross-entropy loss, backward and an
SGD step (momentum 0.9) in train mode: the backward kernels, batch norm's training kernels and
the optimizer's `Optimizer.step#SGD.step` range all show in the trace. Its files end in _train.

For each model, batch size and mode this writes, under --out (a trace already listed in
traces.json with its file present is kept, not recorded again: a rerun adds what is missing):
  <model>_b<batch>.pt.trace.json.gz   the Kineto Chrome trace (gzip), ProfilerStep#N ranges,
                                      cpu_op events with "Input Dims" (record_shapes=True)
  <model>_b<batch>.et.json.gz         the execution trace of the same profiled steps, when
                                      torch's ExecutionTraceObserver works (else a note)
  traces.json                         one entry per trace: model config, steps, median wall ms
                                      per un-profiled step, torch / CUDA / cuDNN versions, GPU

torch is imported inside main(), so this module imports without it; like the rest of
cudnn_bench, every failure the user can act on ends with one sentence on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from .cli import Parser

PROG = "python3 -m cudnn_bench.torch_traces"
NAME = "cudnn_bench.torch_traces"
MODELS = ("gpt", "resnet")
MODES = ("inference", "training")
DEFAULT_BATCHES: dict[str, tuple[int, ...]] = {"gpt": (1, 8), "resnet": (1, 32)}
WAIT_STEPS = 1  # profiler schedule: steps skipped before the profiler warms up
WARMUP_STEPS = 1  # profiler schedule: steps recorded and thrown away (profiler warm-up)

EXAMPLES = """
--batches takes either one list for every model ("1,8") or per-model lists separated by ';'
("gpt=1,8;resnet=1,32"); a model left out of a per-model list keeps its defaults
(gpt: 1,8; resnet: 1,32).

examples:
  python3 -m cudnn_bench.torch_traces --out traces     # gpt b1,b8 + resnet b1,b32, inference and training
  python3 -m cudnn_bench.torch_traces --out traces --modes training --models resnet --batches 32
  python3 -m cudnn_bench.torch_traces --out traces --models gpt --batches 1,4,16 --steps 5
  python3 -m cudnn_bench.torch_traces --out traces --batches 'gpt=8;resnet=64' --no-et
  python3 -m cudnn_bench.torch_traces --out /tmp/t --device cpu --batches 1   # no GPU needed
"""


def fail(sentence: str) -> NoReturn:
    """End with one sentence on stderr and exit code 2 (missing prerequisite, bad input)."""
    sys.stderr.write(f"{NAME}: {sentence}\n")
    raise SystemExit(2)


# ---------------------------------------------------------------------------- configurations


@dataclass(frozen=True)
class GPTConfig:
    """GPT-2-small-like decoder sizes (fewer layers, so that a step stays in milliseconds)."""

    vocab: int = 32000
    seq: int = 512
    hidden: int = 768
    heads: int = 12
    layers: int = 4
    mlp: int = 3072


@dataclass(frozen=True)
class ResNetConfig:
    """ResNet-50-like bottleneck stack; stages are (mid channels, out channels, blocks, stride)."""

    image: int = 224
    in_channels: int = 3
    stem: int = 64
    stages: tuple[tuple[int, int, int, int], ...] = (
        (64, 256, 2, 1),
        (128, 512, 2, 2),
        (256, 1024, 2, 2),
        (512, 2048, 1, 2),
    )
    classes: int = 1000


MODE_TRAINING = "training (train mode; zero_grad, forward, cross-entropy, backward, SGD momentum 0.9)"

FULL: dict[str, Any] = {"gpt": GPTConfig(), "resnet": ResNetConfig()}
# --tiny (hidden, for tests): the same graph at toy sizes, a CPU step in milliseconds.
TINY: dict[str, Any] = {
    "gpt": GPTConfig(vocab=256, seq=32, hidden=64, heads=4, layers=2, mlp=256),
    "resnet": ResNetConfig(image=32, stem=8, stages=((8, 32, 1, 1), (16, 64, 1, 2)), classes=10),
}


# ---------------------------------------------------------------------------- argument parsing


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _int_list(text: str) -> tuple[int, ...]:
    """'1,8' -> (1, 8); every item a whole number >= 1, at least one item."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected a list of batch sizes like 1,8, got {text!r}")
    return tuple(positive_int(t) for t in items)


def _names(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    """Comma-separated names out of `allowed`, in the order given, no repeats."""
    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    if not names or any(n not in allowed for n in names):
        raise argparse.ArgumentTypeError(f"expected {what} out of {','.join(allowed)}, got {text!r}")
    return tuple(dict.fromkeys(names))


def model_list(text: str) -> tuple[str, ...]:
    """argparse type: comma-separated model names out of MODELS, in the order given, no repeats."""
    return _names(text, MODELS, "models")


def mode_list(text: str) -> tuple[str, ...]:
    """argparse type: comma-separated modes out of MODES, in the order given, no repeats."""
    return _names(text, MODES, "modes")


def batch_spec(text: str) -> dict[str, tuple[int, ...]]:
    """argparse type: '1,8' (every model) or 'gpt=1,8;resnet=1,32' (per model; others default).

    Returns {model: batches} for the models named, or {'*': batches} for the plain form."""
    if "=" not in text:
        return {"*": _int_list(text)}
    spec: dict[str, tuple[int, ...]] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        name, sep, values = part.partition("=")
        name = name.strip().lower()
        if not sep or name not in MODELS:
            raise argparse.ArgumentTypeError(
                f"expected 'model=b1,b2;...' with models out of {','.join(MODELS)}, got {part!r}"
            )
        spec[name] = _int_list(values)
    return spec


def batches_for(model: str, spec: dict[str, tuple[int, ...]] | None) -> tuple[int, ...]:
    """The batch sizes to record for one model: --batches if it names them, else the default."""
    if spec:
        return spec.get("*", spec.get(model, DEFAULT_BATCHES[model]))
    return DEFAULT_BATCHES[model]


def build_parser() -> Parser:
    p = Parser(
        prog=PROG,
        name=NAME,
        description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", required=True, type=Path, help="folder for the traces and traces.json")
    p.add_argument(
        "--models",
        type=model_list,
        default=MODELS,
        help="comma-separated models to record: gpt, resnet (default: both)",
    )
    p.add_argument(
        "--modes",
        type=mode_list,
        default=MODES,
        help="comma-separated steps to record: inference (eval, no grad), training (forward, backward, "
        "SGD step) (default: both)",
    )
    p.add_argument(
        "--batches",
        type=batch_spec,
        default=None,
        help="batch sizes: '1,8' for every model or 'gpt=1,8;resnet=1,32' (default: gpt 1,8 and resnet 1,32)",
    )
    p.add_argument(
        "--steps",
        type=positive_int,
        default=3,
        help="profiled (active) steps per trace, after 1 wait and 1 warm-up step (default: 3)",
    )
    p.add_argument(
        "--timed",
        type=positive_int,
        default=10,
        help="un-profiled steps timed for traces.json's median ms/step (default: 10)",
    )
    p.add_argument(
        "--warmup",
        type=positive_int,
        default=3,
        help="un-profiled warm-up steps before timing and profiling (default: 3)",
    )
    p.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="cuda (default; CPU and CUDA activities) or cpu (CPU activity only)",
    )
    p.add_argument(
        "--no-et",
        dest="et",
        action="store_false",
        help="skip the execution trace (ExecutionTraceObserver) beside each trace",
    )
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # toy sizes, for tests
    return p


# ---------------------------------------------------------------------------- models


def define_models(torch: Any) -> tuple[Callable[[GPTConfig], Any], Callable[[ResNetConfig], Any]]:
    """The two model classes, defined here because nn.Module needs torch, which this module
    imports only inside main()."""
    nn = torch.nn

    class Block(torch.nn.Module):
        """Pre-LN decoder block with attention written out op by op (no fused SDPA)."""

        def __init__(self, cfg: GPTConfig) -> None:
            super().__init__()
            h = cfg.hidden
            self.heads = cfg.heads
            self.scale = (h // cfg.heads) ** -0.5
            self.ln1 = nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h)
            self.proj = nn.Linear(h, h)
            self.ln2 = nn.LayerNorm(h)
            self.fc1 = nn.Linear(h, cfg.mlp)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(cfg.mlp, h)

        def forward(self, x: Any, mask: Any) -> Any:
            b, t, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
            q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
            att = torch.matmul(q, k.transpose(-2, -1)) * self.scale
            att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, h)
            x = x + self.proj(y)
            return x + self.fc2(self.act(self.fc1(self.ln2(x))))

    class GPT(torch.nn.Module):
        """Token + position embedding, decoder blocks, final LayerNorm, LM head."""

        def __init__(self, cfg: GPTConfig) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.hidden)
            self.pos = nn.Embedding(cfg.seq, cfg.hidden)
            self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
            self.ln_f = nn.LayerNorm(cfg.hidden)
            self.head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
            self.register_buffer("positions", torch.arange(cfg.seq), persistent=False)
            causal = torch.triu(torch.ones(cfg.seq, cfg.seq, dtype=torch.bool), diagonal=1)
            self.register_buffer("mask", causal, persistent=False)

        def forward(self, idx: Any) -> Any:
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(self.positions[:t])
            mask = self.mask[:t, :t]
            for block in self.blocks:
                x = block(x, mask)
            return self.head(self.ln_f(x))

    def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1) -> Any:
        return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout))

    class Bottleneck(torch.nn.Module):
        """1x1 -> 3x3 (strided, v1.5) -> 1x1 with BN and ReLU; a 1x1 downsample when shapes change."""

        def __init__(self, cin: int, mid: int, cout: int, stride: int) -> None:
            super().__init__()
            self.a = conv_bn(cin, mid, 1)
            self.b = conv_bn(mid, mid, 3, stride)
            self.c = conv_bn(mid, cout, 1)
            self.relu = nn.ReLU(inplace=True)
            self.down = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

        def forward(self, x: Any) -> Any:
            skip = x if self.down is None else self.down(x)
            y = self.relu(self.a(x))
            y = self.relu(self.b(y))
            return self.relu(self.c(y) + skip)

    class ResNet(torch.nn.Module):
        """Stem conv7x7/2 + BN + ReLU + maxpool, bottleneck stages, global avgpool, Linear."""

        def __init__(self, cfg: ResNetConfig) -> None:
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(cfg.in_channels, cfg.stem, 7, 2, 3, bias=False),
                nn.BatchNorm2d(cfg.stem),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, 2, 1),
            )
            blocks, cin = [], cfg.stem
            for mid, cout, count, stride in cfg.stages:
                for i in range(count):
                    blocks.append(Bottleneck(cin, mid, cout, stride if i == 0 else 1))
                    cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, cfg.classes)

        def forward(self, x: Any) -> Any:
            return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))

    return GPT, ResNet


def make_workload(torch: Any, model: str, cfg: Any, batch: int, device: str) -> tuple[Any, Any, Any]:
    """The model (eval mode, on device), one fixed input batch and its class targets (next
    tokens, image labels) for it (seeded: repeatable)."""
    gpt_cls, resnet_cls = define_models(torch)
    torch.manual_seed(0)
    if model == "gpt":
        net = gpt_cls(cfg)
        x = torch.randint(0, cfg.vocab, (batch, cfg.seq))
        y = torch.randint(0, cfg.vocab, (batch * cfg.seq,))
    else:
        net = resnet_cls(cfg)
        x = torch.randn(batch, cfg.in_channels, cfg.image, cfg.image)
        y = torch.randint(0, cfg.classes, (batch,))
    return net.to(device).eval(), x.to(device), y.to(device)


def make_step(torch: Any, net: Any, x: Any, y: Any, mode: str) -> Callable[[], Any]:
    """One step: a no-grad forward (inference), or zero_grad, forward, cross-entropy loss,
    backward and an SGD step (training, the model in train mode)."""
    if mode == "inference":

        def infer() -> Any:
            with torch.inference_mode():
                return net(x)

        return infer
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)

    def train() -> Any:
        opt.zero_grad(set_to_none=True)
        out = net(x)
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y)
        loss.backward()
        opt.step()
        return loss

    return train


# ---------------------------------------------------------------------------- measuring


def set_fp32_flags(torch: Any) -> dict[str, Any]:
    """TF32 off and cudnn.benchmark off (true FP32, cuDNN's deterministic heuristic picks);
    returns the flags as they now read, for traces.json."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    flags = {
        "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    return flags


def time_steps(torch: Any, step: Callable[[], Any], count: int, device: str) -> list[float]:
    """Wall ms of `count` un-profiled steps, each alone: CUDA events around it on a GPU (the
    device's time from first launch to last kernel end), perf_counter on the CPU."""
    times = []
    for _ in range(count):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(float(start.elapsed_time(end)))
        else:
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def make_et(torch: Any, path: Path) -> Any | None:
    """An ExecutionTraceObserver writing to path (uncompressed), or None with a printed note:
    the execution trace is a bonus and must never stop the Kineto recording."""
    try:
        et = torch.profiler.ExecutionTraceObserver()
        return et.register_callback(str(path))
    except Exception as exc:  # any failure here only skips the bonus file
        print(f"  note: no execution trace ({type(exc).__name__}: {exc})")
        return None


def finish_et(et: Any, plain: Path, target: Path) -> Path | None:
    """Finalise the execution trace and gzip it to target; None with a note if that fails."""
    try:
        et.unregister_callback()
        if not plain.exists() or plain.stat().st_size == 0:
            raise RuntimeError("the observer wrote nothing")
        with open(plain, "rb") as fin, gzip.open(target, "wb") as fout:
            shutil.copyfileobj(fin, fout)
        return target
    except Exception as exc:  # see make_et
        print(f"  note: no execution trace ({type(exc).__name__}: {exc})")
        return None
    finally:
        plain.unlink(missing_ok=True)


def profile_steps(torch: Any, step: Callable[[], Any], trace: Path, steps: int, device: str, et: Any | None) -> None:
    """Run wait + warm-up + `steps` steps under the profiler, prof.step() after each, so the
    trace holds ProfilerStep#N ranges; the handler exports the Chrome trace (gzip by name)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    exported: list[Path] = []

    def handler(prof: Any) -> None:
        prof.export_chrome_trace(str(trace))
        exported.append(trace)

    sched = schedule(wait=WAIT_STEPS, warmup=WARMUP_STEPS, active=steps, repeat=1)
    kwargs = {"execution_trace_observer": et} if et is not None else {}
    with profile(activities=activities, record_shapes=True, schedule=sched, on_trace_ready=handler, **kwargs) as prof:
        for _ in range(WAIT_STEPS + WARMUP_STEPS + steps):
            step()
            if device == "cuda":
                torch.cuda.synchronize()
            prof.step()
    if not exported:
        raise RuntimeError(f"the profiler did not hand back a trace for {trace.name}")


def stem_of(model: str, batch: int, mode: str) -> str:
    return f"{model}_b{batch}" + ("_train" if mode == "training" else "")


def record_one(
    torch: Any, model: str, cfg: Any, batch: int, mode: str, args: argparse.Namespace, env: dict[str, Any]
) -> dict[str, Any]:
    """Warm up, time un-profiled steps, profile, and return this trace's traces.json entry."""
    net, x, y = make_workload(torch, model, cfg, batch, args.device)
    stem = stem_of(model, batch, mode)
    trace = args.out / f"{stem}.pt.trace.json.gz"
    step = make_step(torch, net, x, y, mode)

    time_steps(torch, step, args.warmup, args.device)
    times = time_steps(torch, step, args.timed, args.device)
    plain_et = args.out / f"{stem}.et.json"
    et = make_et(torch, plain_et) if args.et else None
    t0 = time.perf_counter()
    try:
        profile_steps(torch, step, trace, args.steps, args.device, et)
    finally:
        et_file = finish_et(et, plain_et, args.out / f"{stem}.et.json.gz") if et else None
    profiled_s = time.perf_counter() - t0
    return {
        "file": trace.name,
        "execution_trace": et_file.name if et_file else None,
        "model": model,
        "batch": batch,
        "config": dataclasses.asdict(cfg),
        "dtype": "float32",
        "mode": "inference (eval, inference_mode)" if mode == "inference" else MODE_TRAINING,
        "device": args.device,
        "steps": args.steps,
        "schedule": {"wait": WAIT_STEPS, "warmup": WARMUP_STEPS, "active": args.steps},
        "timed_steps": len(times),
        "median_ms_per_step": round(statistics.median(times), 4),
        "min_ms_per_step": round(min(times), 4),
        "profiled_wall_s": round(profiled_s, 3),
        "bytes": trace.stat().st_size,
        **env,
    }


def environment(torch: Any, device: str, flags: dict[str, Any]) -> dict[str, Any]:
    """Versions, GPU name and precision flags: what traces.json needs to say where a trace is from."""
    cuda = device == "cuda"
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "cpu": platform.processor() or platform.machine(),
        "cpu_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "flags": flags,
    }


# ---------------------------------------------------------------------------- entry point


def import_torch() -> Any:
    """torch, or one sentence and exit 2 (it is a GPU-machine prerequisite, not a dependency)."""
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed in this Python (pip install torch on the GPU machine, then run again).")
    except Exception as exc:  # a broken install (missing CUDA libs) is reported too
        fail(f"PyTorch failed to import ({type(exc).__name__}: {exc}).")
    return torch


def check_device(torch: Any, device: str) -> None:
    """--device cuda needs a working CUDA GPU; say so in one sentence otherwise."""
    if device == "cuda" and not torch.cuda.is_available():
        fail(
            "--device cuda needs a CUDA GPU, but torch.cuda.is_available() is False here "
            f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); "
            "use --device cpu for a CPU-only trace."
        )


def write_index(out: Path, entries: list[dict[str, Any]]) -> None:
    """traces.json, rewritten after each trace so that an interrupted run still lists its files."""
    tmp = out / "traces.json.tmp"
    tmp.write_text(json.dumps(entries, indent=1) + "\n")
    os.replace(tmp, out / "traces.json")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch = import_torch()
    check_device(torch, args.device)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create the output folder {args.out} ({exc.strerror or exc}).")
    env = environment(torch, args.device, set_fp32_flags(torch))
    configs = TINY if args.tiny else FULL
    print(
        f"{NAME}: torch {env['torch']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}, "
        f"{env['gpu'] or 'CPU ' + env['cpu']}, out {args.out}"
    )
    entries = recorded(args.out)
    done = {e["file"] for e in entries}
    t0 = time.perf_counter()
    for mode in args.modes:
        for model in args.models:
            for batch in batches_for(model, args.batches):
                if f"{stem_of(model, batch, mode)}.pt.trace.json.gz" in done:
                    print(f"  {stem_of(model, batch, mode)}: recorded before, kept")
                    continue
                entries.append(record_traced(torch, model, configs[model], batch, mode, args, env))
                write_index(args.out, entries)
    print(f"{NAME}: {len(entries)} traces + traces.json in {args.out} ({time.perf_counter() - t0:.1f} s)")
    return 0


def recorded(out: Path) -> list[dict[str, Any]]:
    """The entries of an earlier run's traces.json whose trace files are still there."""
    try:
        entries = json.loads((out / "traces.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and (out / str(e.get("file", ""))).is_file()]


def record_traced(
    torch: Any, model: str, cfg: Any, batch: int, mode: str, args: argparse.Namespace, env: dict[str, Any]
) -> dict[str, Any]:
    """record_one with a one-sentence end on running out of GPU memory, and a printed line."""
    try:
        entry = record_one(torch, model, cfg, batch, mode, args, env)
    except torch.cuda.OutOfMemoryError:
        fail(f"{model} at batch {batch} ({mode}) ran out of GPU memory; pass smaller --batches.")
    if args.device == "cuda":
        torch.cuda.empty_cache()  # the last model's tensors are gone with record_one's frame
    print(
        f"  {entry['file']}: {entry['bytes'] / 2**20:.2f} MiB, "
        f"{entry['median_ms_per_step']:.3f} ms/step (median of {entry['timed_steps']})"
    )
    return entry


if __name__ == "__main__":
    raise SystemExit(main())
