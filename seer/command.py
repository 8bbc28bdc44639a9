"""The `seer` command: one entry point over the `python -m` tools, which keep working as they are.

`seer SUBCOMMAND ARGS` runs the tool's own main with ARGS, so options, defaults, errors and exit
codes are the tool's; only its name in usage lines becomes `seer SUBCOMMAND`. Nothing heavy is
imported before a subcommand is chosen: `seer --help` stays as quick as Python's start.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Subcommand:
    """A `python -m` tool as a subcommand: its module, the prog its parser names, the words put
    before the user's arguments (cudnn_bench's own subcommand), and the line `seer --help` shows."""

    module: str
    prog: str
    summary: str
    prefix: tuple[str, ...] = ()
    entry: str = "main"


SUBCOMMANDS: dict[str, Subcommand] = {
    "run": Subcommand("seer.__main__", "python -m seer", "fit and evaluate the built-in data (what `make run` runs)"),
    "fit": Subcommand(
        "seer.fit.__main__", "python -m seer.fit", "fit every kernel variant of a data set: fits/<gpu>.json"
    ),
    "evaluate": Subcommand(
        "seer.evaluate.__main__", "python -m seer.evaluate", "how good the predictions are (Test-set-I, II, models...)"
    ),
    "predict": Subcommand(
        "seer.predict.__main__", "python -m seer.predict", "a whole model's time on a GPU, from a graph or a trace"
    ),
    "trace": Subcommand(
        "seer.predict.__main__",
        "python -m seer.predict",
        "a PyTorch profiler trace's ops and step time; `seer trace summary|augment|diff` kernel by kernel",
        entry="trace_main",
    ),
    "collect": Subcommand(
        "cudnn_bench.__main__",
        "python -m cudnn_bench",
        "measure cuDNN/cuBLASLt kernels on this machine's GPU (python -m cudnn_bench collect)",
        prefix=("collect",),
    ),
}


# `seer trace VERB ...`: python -m seer.trace (a trace kernel by kernel) instead of seer.predict on the trace
TRACE_VERBS = Subcommand("seer.trace.__main__", "python -m seer.trace", "a trace kernel by kernel")
VERBS = ("summary", "augment", "diff")


def usage() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {name:{width}}  {sub.summary}" for name, sub in SUBCOMMANDS.items()]
    return (
        "usage: seer [-h] [--version] SUBCOMMAND [ARGS...]\n\n"
        "GPU kernel and whole-model time predictions (SEER-style per-variant models).\n\n"
        "subcommands:\n" + "\n".join(lines) + "\n\n"
        "`seer SUBCOMMAND --help` explains each. Each is also `python -m MODULE`:\n"
        "seer, seer.fit, seer.evaluate, seer.predict (predict and trace), seer.trace (trace VERB),\n"
        "cudnn_bench collect.\n"
    )


@contextmanager
def renamed(old: str, new: str) -> Iterator[None]:
    """Parsers built meanwhile whose prog is `old` are named `new`: the tool's usage and --help
    then say `seer fit`, without each tool knowing the `seer` command exists."""
    init = argparse.ArgumentParser.__init__

    def renaming(self: argparse.ArgumentParser, *args, **kw) -> None:
        init(self, *args, **kw)
        if self.prog == old:
            self.prog = new

    argparse.ArgumentParser.__init__ = renaming  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.__init__ = init  # type: ignore[method-assign]


def _entry(sub: Subcommand) -> Callable[[list[str]], int]:
    main = getattr(importlib.import_module(sub.module), sub.entry)
    if sub.module == "seer.__main__":  # its main leaves errors to the caller (python -m seer wraps it)
        from seer.cli import run

        return lambda argv: run(lambda: main(argv), "seer")
    return main


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage(), end="", file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    if args[0] == "--version":
        from seer import __version__

        print(f"seer {__version__}")
        return 0
    name, rest = args[0], args[1:]
    sub = SUBCOMMANDS.get(name)
    if sub is None:
        close = difflib.get_close_matches(name, SUBCOMMANDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        print(f"seer: unknown subcommand {name!r} (choose from {', '.join(SUBCOMMANDS)}){hint}", file=sys.stderr)
        return 2
    if name == "trace" and rest and rest[0] in VERBS:
        sub = TRACE_VERBS
    # cudnn_bench's parser names its subcommands after itself: `seer` + `collect` reads `seer collect`
    new = "seer" if sub.prefix else f"seer {name}"
    with renamed(sub.prog, new):
        return _entry(sub)([*sub.prefix, *rest])


if __name__ == "__main__":
    sys.exit(main())
