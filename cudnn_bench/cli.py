"""The command-line rule every cudnn_bench entry point shares: a bad argument is one line on
stderr and exit code 2. Kept apart (no pandas, no GPU module) so that light entry points such
as `cudnn_bench.torch_traces` can use it."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line, prefixed by `name`, and exits with 2."""

    def __init__(self, *args, name: str = "cudnn_bench", **kw):
        super().__init__(*args, **kw)
        self.name = name

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.name}: {message} (see --help)\n")
        raise SystemExit(2)
