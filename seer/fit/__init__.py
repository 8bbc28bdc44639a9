"""Fit every kernel variant of a data set: one fits document per GPU (`python -m seer.fit`).

`fit_all(records)` fits each GPU of the records (seer.fit.gpu), one after another, in worker
processes or on a Ray cluster (seer.fit.workers); seer.fitsfile writes the documents.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from seer.fit.gpu import fit_gpu, fit_one
from seer.fit.workers import fit_parallel, fit_ray
from seer.models import DEFAULT, FitOptions


def fit_all(
    rec: pd.DataFrame,
    *,
    data_path: str,
    drift: bool = True,
    jobs: int = 1,
    options: FitOptions = DEFAULT,
    log: Callable[[str], None] = print,
    ray: str | None = None,
) -> dict[str, dict]:
    """One fits document per GPU in the records; `jobs` GPUs are fitted at once, or, with
    `ray` (an address, "" for this machine's cluster), every GPU as a task on a Ray cluster."""
    work = [(name, rec[rec["gpu"] == name], data_path, drift, options) for name in sorted(pd.unique(rec["gpu"]))]
    for name, g, *_ in work:
        log(f"fitting {name}: {len(g)} rows ...")
    if ray is not None:
        results = fit_ray(work, ray)
    elif jobs > 1 and len(work) > 1:
        results = fit_parallel(work, min(jobs, len(work)))
    else:
        results = [fit_one(w) for w in work]
    docs = {}
    for slug, doc, took in results:
        log(f"  {slug}: {len(doc['variants'])} variants in {took:.1f} s")
        docs[slug] = doc
    return docs


__all__ = ["fit_all", "fit_gpu"]
