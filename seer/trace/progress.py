"""A progress bar over the steps of explaining a trace (tqdm, on stderr).

A 200 MB trace takes tens of seconds, most of it in steps that are one call each (parsing the
JSON, mapping every op), so the bar counts steps and names the one running. tqdm turns itself off
where stderr is not a terminal (a pipe, a test), so piped output stays clean.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def steps(total: int, desc: str, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """Yields `stage(name)`: the previous step is done, `name` starts."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, file=sys.stderr, disable=None if enabled else True, leave=False,
               bar_format="{desc}: {n_fmt}/{total_fmt}{postfix} [{elapsed}]")  # fmt: skip
    started = False

    def stage(name: str) -> None:
        nonlocal started
        if started:
            bar.update(1)
        started = True
        bar.set_postfix_str(name)

    try:
        yield stage
        if started:
            bar.update(1)
    finally:
        bar.close()
