"""Where things lie: the one lookup of the repository's folders that every stage uses.

In a source checkout (or an editable install) the repository holds the project's own data
(`data/<gpu-slug>/`), the bundled fits (`fits/`) and, beside it, `../shared/datasets/`. An
installed wheel has none of them: `in_checkout()` says which case this is.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OWN_DATA = REPO / "data"


def in_checkout() -> bool:
    """Whether seer runs from a source checkout (its pyproject.toml beside the package)."""
    return (REPO / "pyproject.toml").is_file()


def shared_dataset(name: str) -> Path | None:
    """`../shared/datasets/<name>` beside the repository (or beside the working directory)."""
    for root in (REPO.parent, Path.cwd().parent):
        cand = root / "shared" / "datasets" / name
        if cand.is_dir():
            return cand
    return None


def shown(path: str | os.PathLike) -> str:
    """A path as a fits file records it: relative to the repository where it can be
    (../shared/datasets/neusight), so the file does not depend on where the clone lives."""
    try:
        return os.path.relpath(os.path.abspath(path), REPO)
    except ValueError:
        return str(path)
