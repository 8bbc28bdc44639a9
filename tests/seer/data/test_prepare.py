"""default_data: without any data, one sentence that says what is missing, where seer looked and
what to do, in a clone and in an installed copy alike."""

from __future__ import annotations

import pytest

from seer.data import paths, prepare, records
from seer.errors import SeerError


@pytest.mark.parametrize("checkout", [True, False])
def test_no_data_says_what_is_missing_where_and_what_to_do(tmp_path, monkeypatch, checkout):
    monkeypatch.setattr(paths, "OWN_DATA", tmp_path / "data")
    monkeypatch.setattr(paths, "in_checkout", lambda: checkout)
    monkeypatch.setattr(records, "neusight_dir", lambda: None)
    with pytest.raises(SeerError) as exc:
        prepare.default_data()
    msg = str(exc.value)
    assert "\n" not in msg and "no measurements" in msg and "--data" in msg and "SEER_NEUSIGHT" in msg
    if checkout:
        assert f"{tmp_path / 'data'}/<gpu>/" in msg and "make collect" in msg
    else:
        assert "installed, not a clone" in msg and "data/<gpu>/" in msg
