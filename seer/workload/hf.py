"""A Hugging Face architecture from its config, built without weights, ready for seer to capture.

`hf_model(config, batch, seq)` reads a config (a config.json path, a dict, or a hub model id where
the hub is reachable: only the config is fetched), builds the model class of its `architectures`
(or the one named) under a FakeTensorMode (seer.workload.capture.fake_mode: no weights, no
memory) and gives it with token ids of batch x seq. Attention is the eager implementation: its
matmul, softmax, matmul ops are what seer has predictors for (a fused SDPA kernel it has not), and
what NeuSight's traced graphs hold.

transformers is imported inside the functions: `import seer` stays light.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seer.errors import SeerError
from seer.workload.capture import fake_mode, require_torch

DTYPES = ("float32", "float16", "bfloat16")


def require_transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise SeerError("a Hugging Face model needs transformers: pip install 'seer[torch]'") from None
    return transformers


def load_config(config: str | Path | dict) -> Any:
    """A transformers config from a dict, a config.json file or a hub model id."""
    tf = require_transformers()
    if isinstance(config, dict):
        values = dict(config)
    elif Path(config).is_file():
        try:
            values = json.loads(Path(config).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SeerError(f"{config}: not a readable config.json ({exc})") from None
    elif str(config).endswith(".json"):
        raise SeerError(f"{config}: no such config file")
    else:  # a hub model id: its config only
        try:
            return tf.AutoConfig.from_pretrained(str(config))
        except Exception as exc:
            raise SeerError(
                f"{config}: neither a config file nor a model id the hub gave a config for ({exc})"
            ) from None
    if not isinstance(values, dict) or "model_type" not in values:
        raise SeerError(f"{config}: a config needs model_type (as a Hugging Face config.json has)")
    model_type = values.pop("model_type")
    try:
        return tf.AutoConfig.for_model(model_type, **values)
    except ValueError as exc:
        raise SeerError(f"{config}: {exc}") from None


def model_class(cfg: Any, architecture: str | None = None) -> Any:
    """The class named (or the config's first architecture; AutoModel's base model without one)."""
    tf = require_transformers()
    name = architecture or next(iter(getattr(cfg, "architectures", None) or []), None)
    if name is None:
        return None
    cls = getattr(tf, name, None)
    if cls is None:
        raise SeerError(f"transformers {tf.__version__} has no model class {name!r}")
    return cls


def hf_model(
    config: str | Path | dict,
    batch: int = 1,
    seq: int = 128,
    *,
    dtype: str = "float32",
    architecture: str | None = None,
    attention_mask: bool = False,
) -> tuple[Any, tuple]:
    """(model, example inputs): the architecture built on fake tensors (no weights) in `dtype`,
    and input ids of batch x seq (and an all-ones attention mask: the model's second argument,
    which an encoder then adds to its attention scores in every layer, as a padded batch would)."""
    torch = require_torch()
    tf = require_transformers()
    if dtype not in DTYPES:
        raise SeerError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    if batch < 1 or seq < 1:
        raise SeerError(f"batch and sequence length must be >= 1, got {batch} and {seq}")
    cfg = load_config(config)
    cfg._attn_implementation = "eager"
    cfg.use_cache = False  # one pass over the whole sequence: no key/value cache to build
    limit = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
    if limit and seq > limit:
        raise SeerError(f"sequence length {seq} exceeds the model's {limit} positions")
    cls = model_class(cfg, architecture)
    mode = fake_mode()
    default = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))  # built in dtype: fake parameters cannot be converted after
    try:
        with mode:
            model = cls(cfg) if cls is not None else tf.AutoModel.from_config(cfg)
            ids = torch.zeros(batch, seq, dtype=torch.long)
            mask = torch.ones(batch, seq, dtype=torch.long)
    finally:
        torch.set_default_dtype(default)
    return model, ((ids, mask) if attention_mask else (ids,))


def predict_hf(
    config: str | Path | dict,
    gpu: str | None = "h100-sxm",
    *,
    batch: int = 1,
    seq: int = 128,
    dtype: str = "float32",
    training: bool = False,
    optimizer: str | None = "sgd",
    architecture: str | None = None,
    attention_mask: bool = False,
) -> Any:
    """A Hugging Face architecture's time on `gpu` (seer.workload.capture.predict_model)."""
    from seer.workload.capture import predict_model

    model, inputs = hf_model(config, batch, seq, dtype=dtype, architecture=architecture, attention_mask=attention_mask)
    name = Path(str(config)).stem if not isinstance(config, dict) else type(model).__name__
    source = f"{name} (batch {batch}, seq {seq}, {dtype}{', training' if training else ''})"
    return predict_model(model, inputs, gpu, training=training, optimizer=optimizer, source=source)
