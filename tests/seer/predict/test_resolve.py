"""One fits resolution for every whole-model path: a GPU's own fits, else fits transferred to it
from the fits folder's other GPUs, and the sentence that says which."""

from __future__ import annotations

import shutil

import pytest

from seer import fitsfile
from seer.errors import SeerError
from seer.predict.resolve import fits_for, provenance

T4 = fitsfile.FITS_DIR / "t4.json"
V100 = fitsfile.FITS_DIR / "v100-pcie.json"


@pytest.fixture
def folder(tmp_path):
    if not (T4.exists() and V100.exists()):
        pytest.skip("no bundled t4 / v100-pcie fits")
    for f in (T4, V100):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path


def test_own_fits_where_the_folder_has_them(folder):
    f = fits_for("Tesla T4", folder)
    assert f.source == "fitted" and f.gpu.slug == "t4"
    assert provenance(f) == f"own fits ({folder / 't4.json'})"


def test_a_gpu_without_fits_gets_the_folders_others_of_its_cc_first(folder):
    """A TITAN RTX (CC 7.5) from the T4 (7.5) only; an L4 (8.9, none there) from both."""
    f = fits_for("titan-rtx", folder)
    assert f.source == "transferred" and f.transferred_from == ["t4"]
    assert provenance(f) == "no fits of its own: transferred from t4"
    assert sorted(fits_for("l4", folder).transferred_from) == ["t4", "v100-pcie"]


def test_a_folder_without_other_fits_says_so(tmp_path):
    with pytest.raises(SeerError, match="no other GPU's fits there to transfer from"):
        fits_for("l4", tmp_path)


def test_the_bundled_fits_are_the_default():
    f = fits_for("l4")
    assert f.source == "transferred" and f.transferred_from and "l4" not in f.transferred_from
