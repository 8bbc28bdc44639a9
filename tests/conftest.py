"""Shared fixtures: the NeuSight data set beside the repo (tests skip with a reason without it)."""
from __future__ import annotations

import pytest

from seer.records import neusight_dir


@pytest.fixture(scope="session")
def neusight_path():
    path = neusight_dir()
    if path is None:
        pytest.skip("NeuSight data not found: set SEER_NEUSIGHT or place ../shared/datasets/neusight")
    return path


@pytest.fixture(scope="session")
def neusight(neusight_path):
    from seer.records import read_neusight

    return read_neusight(neusight_path)
