"""A GPU the table lacks, described by the user: the one way every CLI's --gpu / --gpu-info and
the API build its spec.

A description is any of:

- key=value text: `"name=My GPU,cc=8.6,sms=84,boost_mhz=1695,dram_gbs=936,tdp_w=350"` (keys:
  GPUSpec's fields: name, cc, sms, boost_mhz, base_mhz, fp32_tflops, dram_gbs, l2_mb, tdp_w,
  memory_gb, memory_type, process, fp16_tensor_tflops);
- a JSON file of those keys, of NeuSight's device_configs keys, or a trace's deviceProperties;
- `nvidia-smi -q` output or `nvidia-smi --query-gpu=name,compute_cap,clocks.max.sm,
  power.default_limit,memory.total --format=csv` output (a file or its text): the driver gives
  the name, clocks, power limit and memory, not the SM count.

A name the table knows is its row, with what the description says differently on top (a power
limit below the datasheet TDP, say) under a slug of its own. An unknown name needs the compute
capability and SM count; the rest is taken from the table's chip of that compute capability
nearest in SMs (its family's first), and FP32 = SMs x lanes x 2 x boost where not given. The
note says every figure that was assumed.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from seer.errors import SeerError, UnknownGPUError
from seer.hardware import gpus
from seer.hardware.device import FP32_LANES, Device, Resolved, _family, occupancy_cc, resolve

NUMBERS = ("sms", "boost_mhz", "base_mhz", "fp32_tflops", "dram_gbs", "l2_mb", "tdp_w", "memory_gb",
           "fp16_tensor_tflops")  # fmt: skip
TEXTS = ("name", "cc", "memory_type", "process")
_UNITS = {"sms": "SMs", "boost_mhz": "MHz", "base_mhz": "MHz base", "fp32_tflops": "TFLOP/s", "dram_gbs": "GB/s",
          "l2_mb": "MB L2", "tdp_w": "W"}  # fmt: skip


def is_description(text: str) -> bool:
    """A --gpu value that describes a GPU rather than names one: key=value text."""
    return "=" in text


def parse_pairs(text: str) -> dict[str, Any]:
    """'cc=8.6, sms=84' -> {'cc': '8.6', 'sms': 84.0}; an unknown key or a bad number is an error."""
    out: dict[str, Any] = {}
    for part in re.split(r"[,;]", text):
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        key, val = key.strip().lower(), val.strip()
        if not sep or key not in (*NUMBERS, *TEXTS):
            raise SeerError(
                f"GPU description {text!r}: expected key=value pairs with keys {', '.join((*TEXTS, *NUMBERS))}"
            )
        out[key] = val if key in TEXTS else _number(key, val, text)
    return out


def _number(key: str, val: Any, where: str) -> float:
    try:
        num = float(str(val).split()[0])
    except (ValueError, IndexError):
        raise SeerError(f"GPU description {where}: {key} must be a positive number, got {val!r}") from None
    if not (num > 0 and math.isfinite(num)):
        raise SeerError(f"GPU description {where}: {key} must be a positive number, got {val!r}")
    return num


def _mhz(text: str) -> float | None:
    m = re.match(r"\s*([\d.]+)\s*MHz", text)
    return float(m.group(1)) if m else None


def parse_nvidia_smi(text: str) -> dict[str, Any]:
    """The fields nvidia-smi gives: `-q` output (first GPU) or `--query-gpu=... --format=csv`."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and "," in lines[0] and ":" not in lines[0]:  # --query-gpu CSV with its header
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        head = [h.strip().split(" [")[0].lower() for h in rows[0]]
        vals = dict(zip(head, (v.strip() for v in rows[1]))) if len(rows) > 1 else {}
        keys = {"name": "name", "compute_cap": "cc", "clocks.max.sm": "boost_mhz", "clocks.max.graphics": "boost_mhz",
                "enforced.power.limit": "tdp_w", "power.limit": "tdp_w", "power.default_limit": "tdp_w",
                "memory.total": "memory_gb"}  # fmt: skip
        out: dict[str, Any] = {}
        for k, v in vals.items():
            if k in keys and v and v.lower() not in ("[n/a]", "n/a", "[not supported]"):
                dst = keys[k]
                if dst in ("name", "cc"):
                    out[dst] = v
                elif dst not in out:
                    out[dst] = (
                        round(float(v.split()[0]) * 2**20 / 1e9, 1) if dst == "memory_gb" else float(v.split()[0])
                    )
        return out
    out = {}
    section = ""
    for ln in lines:
        if ":" not in ln:
            section = ln.strip().lower()
            continue
        key, _, val = ln.partition(":")
        key, val = key.strip().lower(), val.strip()
        if key == "product name" and "name" not in out:
            out["name"] = val
        elif key == "gpu" and section == "" and out:  # a second GPU's block: keep the first
            break
        elif section == "max clocks" and key == "sm" and _mhz(val):
            out["boost_mhz"] = _mhz(val)
        elif key in ("current power limit", "enforced power limit", "power limit") and re.match(r"[\d.]+\s*W", val):
            out["tdp_w"] = float(val.split()[0])  # the limit the card runs under: a cap below the TDP counts
        elif key == "default power limit" and re.match(r"[\d.]+\s*W", val):
            out.setdefault("tdp_w", float(val.split()[0]))
        elif section == "fb memory usage" and key == "total" and re.match(r"[\d.]+\s*MiB", val):
            out["memory_gb"] = round(float(val.split()[0]) * 2**20 / 1e9, 1)
        elif key in ("cuda compute capability", "compute capability"):
            out["cc"] = val
    if "name" not in out:
        raise SeerError("nvidia-smi output: no 'Product Name' line (give the output of nvidia-smi -q)")
    return out


def describe(spec: str | Path | dict[str, Any], extra: str | None = None) -> Resolved:
    """The spec of a described GPU and what was assumed (see the module docstring); the name is
    registered so that lookup() and the fits resolution find it afterwards. `extra`: key=value
    text that adds to a file's description (the SM count nvidia-smi does not give)."""
    if isinstance(spec, dict):
        fields, what = dict(spec), "the description"
    elif isinstance(spec, str) and is_description(spec):
        fields, what = parse_pairs(spec), "the description"
    else:
        path = Path(spec)
        try:
            text = path.read_text()
        except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
            raise SeerError(f"GPU description {spec}: expected key=value text or an existing file") from None
        what = str(path)
        try:
            raw = json.loads(text)
        except json.JSONDecodeError:
            fields = parse_nvidia_smi(text)
            what = f"nvidia-smi output {path}"
        else:
            if not isinstance(raw, dict):
                raise SeerError(f"GPU description {path}: expected a JSON object")
            if "computeMajor" in raw:  # a trace's deviceProperties
                return resolve(Device.from_properties(raw))
            if "Device" in raw:  # NeuSight's device_configs
                return Resolved(gpus.load_device_json(path), f"{raw['Device']!r} as {path} describes it")
            fields = {
                k: (v if k in TEXTS else _number(k, v, str(path))) for k, v in raw.items() if k in (*TEXTS, *NUMBERS)
            }
    if extra:
        fields.update(parse_pairs(extra))
        what += f" and {extra!r}"
    for k in TEXTS:
        if k in fields:
            fields[k] = str(fields[k]).strip()
    out = build(fields, what)
    gpus.register(out.spec.name, out.spec)
    return out


def build(fields: dict[str, Any], what: str = "the description") -> Resolved:
    """A spec from described fields (name, cc, sms, ...), the rest from the table (see above)."""
    name = str(fields.get("name") or "").strip()
    row = None
    if name:
        try:
            row = gpus.lookup(name)
        except UnknownGPUError:
            row = None
    if row is not None:
        return _over_row(row, name, fields, what)
    cc, sms = fields.get("cc"), fields.get("sms")
    if not cc or not sms:
        who = repr(name) if name else "an unnamed GPU"
        raise UnknownGPUError(
            f"{who} is not in seer's table and {what} gives no "
            f"{' and '.join(w for w, v in (('compute capability (cc=)', cc), ('SM count (sms=)', sms)) if not v)}: "
            'describe it, e.g. --gpu "name=My GPU,cc=8.6,sms=84,boost_mhz=1695,dram_gbs=936"'
        )
    if not re.fullmatch(r"\d+\.\d", str(cc)) or str(cc) not in FP32_LANES:
        raise SeerError(f"{what}: cc must be an NVIDIA compute capability such as 8.6, got {cc!r}")
    cc = str(cc)
    sms = int(sms)
    arch_cc = occupancy_cc(cc)
    name = name or f"GPU CC {cc} {sms} SMs"
    family = _family(name)
    near = min(
        (g for g in gpus.GPUS.values() if occupancy_cc(g.cc) == arch_cc),
        key=lambda g: (_family(g.name) != family, abs(math.log(g.sms / sms)), g.sms),
    )
    assumed = []
    vals: dict[str, Any] = {}
    for key in ("boost_mhz", "dram_gbs", "l2_mb"):
        vals[key] = fields.get(key) or getattr(near, key)
        if key not in fields:
            assumed.append(f"{_show(key, vals[key])}")
    lanes = FP32_LANES[cc]
    derived = round(sms * lanes * 2 * vals["boost_mhz"] * 1e6 / 1e12, 2)
    fp32 = fields.get("fp32_tflops") or derived
    extra = {k: fields[k] for k in ("base_mhz", "tdp_w", "memory_gb", "fp16_tensor_tflops") if k in fields}
    texts = {k: fields[k] for k in ("memory_type", "process") if k in fields}
    spec = gpus.GPUSpec(
        slug=gpus.slug_for(name), name=name, cc=arch_cc, sms=sms, fp32_tflops=fp32, dram_gbs=vals["dram_gbs"],
        l2_mb=vals["l2_mb"], boost_mhz=vals["boost_mhz"],
        source=f"described by {what}; {', '.join(assumed) or 'nothing'} from {near.name}", **extra, **texts,
    )  # fmt: skip
    said = [f"CC {cc}, {sms} SMs"] + [_show(k, fields[k]) for k in _UNITS if k in fields and k != "sms"]
    note = f"{name!r} is not in seer's table: built from {what} ({', '.join(said)})"
    if assumed:
        note += f" with the {' and '.join(_label(a) for a in assumed)} of {near.name} assumed"
    if "fp32_tflops" not in fields:
        note += f"; FP32 {fp32:g} TFLOP/s = {sms} SMs x {lanes} lanes x 2 x boost"
    if arch_cc != cc:
        note += f"; kernels and occupancy of CC {arch_cc}"
    return Resolved(spec, note)


def _show(key: str, val: float) -> str:
    return f"{val:g} {_UNITS.get(key, key)}"


def _label(shown: str) -> str:
    """'1695 MHz' -> 'clock (1695 MHz)'."""
    unit = shown.split(" ", 1)[1]
    what = {"MHz": "clock", "GB/s": "DRAM bandwidth", "MB L2": "L2"}.get(unit, unit)
    return f"{what} ({shown.split(' ', 1)[0]} {unit.replace(' L2', '')})"


def _over_row(row: gpus.GPUSpec, name: str, fields: dict[str, Any], what: str) -> Resolved:
    """A table GPU with what the description says on top: figures the row lacks are filled in
    (the row still); figures that differ (a power cap, another clock) make a variant of its own."""
    if fields.get("cc") and str(fields["cc"]) != row.cc:
        raise SeerError(f"{what}: {name!r} is {row.name}, of compute capability {row.cc}, not {fields['cc']}")
    diff: dict[str, Any] = {}
    fill: dict[str, Any] = {}
    for k in NUMBERS:
        if k not in fields or k == "memory_gb":  # a board's usable memory is below its datasheet size
            continue
        val = int(fields[k]) if k == "sms" else float(fields[k])
        have = getattr(row, k)
        if have is None:
            fill[k] = val
        elif abs(val / float(have) - 1) > 0.02:
            diff[k] = val
    if not diff and not fill:
        return Resolved(row, "")
    if not diff:
        spec = dataclasses.replace(row, source=f"{row.source}; {', '.join(fill)} from {what}", **fill)
        return Resolved(spec, f"{name!r} is {row.name} of seer's table, with its {', '.join(fill)} from {what}")
    if "boost_mhz" in diff or "sms" in diff:  # the peak follows the clock and SMs unless given
        sms, boost = diff.get("sms", row.sms), diff.get("boost_mhz", row.boost_mhz)
        diff.setdefault("fp32_tflops", round(row.fp32_tflops * sms * boost / (row.sms * row.boost_mhz), 2))
    spec = dataclasses.replace(
        row, slug=f"{row.slug}-as-described", name=f"{row.name} (as described)", aliases=(),
        source=f"{row.source}; described by {what}", **fill, **diff,
    )  # fmt: skip
    said = ", ".join(f"{k} {getattr(row, k):g} -> {v:g}" for k, v in diff.items())
    note = (
        f"{name!r} is {row.name} of seer's table with {what}'s figures where they differ ({said}): a GPU of its "
        "own, timed with fits transferred to it"
    )
    return Resolved(spec, note)
