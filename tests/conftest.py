"""Shared fixtures: the NeuSight data set beside the repo (tests skip with a reason without it)."""
from __future__ import annotations

import pytest

from seer.data.records import neusight_dir


@pytest.fixture(scope="session")
def neusight_path():
    path = neusight_dir()
    if path is None:
        pytest.skip("NeuSight data not found: set SEER_NEUSIGHT or place ../shared/datasets/neusight")
    return path


@pytest.fixture(scope="session")
def neusight(neusight_path):
    from seer.data.records import read_neusight

    return read_neusight(neusight_path)


@pytest.fixture(scope="session")
def a100_80_conv(neusight_path):
    """NeuSight's A100-80GB conv records and their fits document, fitted once per session."""
    from seer import fit
    from seer.data import records

    rec = records.read_neusight(neusight_path / "conv" / "NVIDIA_A100_80GB_PCIe.csv")
    doc = fit.fit_all(rec, data_path="../shared/datasets/neusight", log=lambda s: None)  # as bundled
    return rec, doc["a100-80gb-pcie"]
