"""The one error family seer raises for bad input.

Every user-facing failure is a :class:`SeerError` whose message is one sentence; the command
line tools print it and exit with code 2 instead of showing a traceback.
"""

from __future__ import annotations

from typing import Any


class SeerError(Exception):
    """Bad input or an unsupported request, explained in one sentence."""


class DataError(SeerError, ValueError):
    """A value in a data file is missing or wrong; names the file, row, column and expectation."""

    def __init__(
        self, file: str, row: int | None, column: str | None, expected: str, value: Any = None, *, where: str = "row"
    ):
        self.file, self.row, self.column = file, row, column
        self.expected, self.value = expected, value
        parts = [str(file)]
        if row is not None:
            parts.append(f"{where} {row}")
        if column is not None:
            parts.append(f"column '{column}'")
        got = "" if value is None else f", got {value!r}"
        super().__init__(f"{', '.join(parts)}: expected {expected}{got}")


class UnknownGPUError(SeerError, KeyError):
    """A GPU name that is neither in the spec table nor described by a device JSON."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class SeerWarning(UserWarning):
    """An answer given with a caveat: outside the fitted range, or raised to what the hardware
    allows. Python's warnings show it once per call site; `warnings.simplefilter("error",
    SeerWarning)` turns it into an error."""
