"""Ray, for users who already run a cluster: one way to join it, with one-sentence errors.

Ray is the optional extra `cluster` (`pip install 'seer[cluster]'`); nothing imports it until a
command is given `--ray`. The address is Ray's own: none (the cluster this machine was joined
to with `ray start`, or RAY_ADDRESS, else a new local one with every GPU of this machine),
`auto` (a running cluster, or fail), `local` (always a new local one), `host:6379`, or
`ray://host:10001` (Ray Client). Where Ray is already initialised (a notebook, a test that
started a local cluster), that session is used and left running.
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from seer.errors import SeerError

INSTALL = "pip install 'seer[cluster]'"


def add_argument(parser, what: str) -> None:
    """The --ray [ADDRESS] option, one definition for every command that takes it."""
    parser.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help=f"{what} on a Ray cluster ({INSTALL}): host:6379, ray://host:10001, auto (a running "
        "cluster), local (a new one on this machine); no ADDRESS: the cluster this machine "
        "joined, else a local one",
    )


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise SeerError(f"--ray needs Ray, which is not installed here: {INSTALL}") from None
    return ray


def unreachable(address: str | None, timeout: float = 5.0) -> str | None:
    """Why nothing answers at a host:port (or ray://host:port) address, None if something does
    or the address is not one: Ray itself would retry a dead address for minutes."""
    m = re.fullmatch(r"(?:ray://)?\[?([^\]/]+?)\]?:(\d+)", address or "")
    if not m:
        return None
    try:
        socket.create_connection((m.group(1), int(m.group(2))), timeout=timeout).close()
    except OSError as exc:
        return str(exc) or type(exc).__name__
    return None


@contextmanager
def session(address: str | None) -> Iterator[ModuleType]:
    """The `ray` module, connected to the cluster at `address` for the block's life."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    why = unreachable(address)
    if why:
        raise SeerError(f"no Ray cluster answers at {address} ({why}): start one there (ray start --head) or fix --ray")
    try:
        ray.init(address=address or None, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SeerError(f"no Ray cluster could be joined at {address or 'this machine'}: {first}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def cause(exc: BaseException) -> BaseException:
    """The exception a Ray task raised (RayTaskError wraps it), else `exc` itself."""
    inner = getattr(exc, "cause", None)
    return inner if isinstance(inner, BaseException) else exc


def reason(exc: BaseException) -> str:
    """One line for a failed task: the task's own message, or what Ray says befell it."""
    inner = cause(exc)
    lines = str(inner).strip().splitlines()
    first = lines[0] if lines else ""
    return first if isinstance(inner, SeerError) else f"{type(inner).__name__}: {first}"
