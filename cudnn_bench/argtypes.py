"""argparse types of the harness's options: a value that would quietly change what is
measured (a negative count, NaN ms, an empty suite list) is refused in one line, exit code 2.
Shared by `python -m cudnn_bench` and the one-shot call (cudnn_bench.oneshot)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

from seer.errors import SeerError

from .maths import MATHS
from .plan import Budget, Shard
from .redo import REASONS
from .store import out_folder
from .suites import SUITES, parse_suites


def size_bytes(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*", str(text).lower())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 8GiB, 512MiB, 1000000)")
    mult = {
        None: 1,
        "b": 1,
        "k": 1 << 10,
        "kb": 1 << 10,
        "kib": 1 << 10,
        "m": 1 << 20,
        "mb": 1 << 20,
        "mib": 1 << 20,
        "g": 1 << 30,
        "gb": 1 << 30,
        "gib": 1 << 30,
        "t": 1 << 40,
        "tb": 1 << 40,
        "tib": 1 << 40,
    }[m.group(2)]
    return int(float(m.group(1)) * mult)


def whole(minimum: int) -> Callable[[str], int]:
    """argparse type: a whole number >= minimum (a negative count would be taken as given and
    quietly change what is measured)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
        return value

    return parse


def folder(text: str) -> Path:
    """argparse type of an output folder (--out): refused before any work when it is a file, or
    lies under one (collect would fail after opening the GPU, merge after reading every store)."""
    if not str(text).strip():
        raise argparse.ArgumentTypeError("expected a folder, got ''")
    try:
        return out_folder(Path(text))
    except SeerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_ms(text: str) -> float:
    """argparse type: a time in ms, finite and > 0 (nan or inf would break the repetition plan)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a time in ms > 0, got {text!r}")
    return value


def budget(text: str) -> Budget:
    try:
        return Budget.parse(text)
    except SeerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except SeerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def maths(text: str) -> list[str]:
    names = MATHS if text.strip() == "all" else [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in names if m not in MATHS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"math must be one or more of {', '.join(MATHS)} (or all)")
    return list(names)


def suites(text: str) -> list[str]:
    if not any(part.strip() for part in text.split(",")):  # "" or ",": not all suites by accident
        raise argparse.ArgumentTypeError(f"expected one or more of {', '.join(SUITES)} (or all), got {text!r}")
    try:
        return parse_suites(text)
    except SeerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def algos(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if re.fullmatch(r"\d+-\d+", part):
            a, b = map(int, part.split("-"))
            out += range(a, b + 1)
        elif part.isdigit():
            out.append(int(part))
        else:
            raise argparse.ArgumentTypeError(f"{text!r}: algorithms are numbers 0-7, e.g. 0-7 or 0,1,2")
    if not out or any(a < 0 or a > 7 for a in out):
        raise argparse.ArgumentTypeError("algorithms are numbers 0-7")
    return tuple(dict.fromkeys(out))


def redo_reasons(text: str) -> list[str]:
    """argparse type: comma-separated reasons to measure stored configurations again."""
    names = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in names if r not in REASONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"--redo takes one or more of {', '.join(REASONS)}, got {text!r}")
    return list(dict.fromkeys(names))


def resources(text: str) -> dict[str, float]:
    """argparse type: NAME=AMOUNT[,NAME=AMOUNT], the Ray resources a shard task asks for."""
    out: dict[str, float] = {}
    for part in text.split(","):
        name, eq, amount = part.strip().partition("=")
        try:
            value = float(amount)
        except ValueError:
            value = math.nan
        if not (name.strip() and eq and math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected NAME=AMOUNT[,NAME=AMOUNT] with amounts > 0, got {text!r}")
        out[name.strip()] = value
    return out
