"""python -m seer.evaluate --set transfer's pieces (seer.evaluate.transfer): leave-one-GPU-out
sources and the whole-model table beside NeuSight's errors."""

import numpy as np
import pandas as pd

from seer import fitsfile
from seer.evaluate import transfer as ev
from seer.predict.transfer import chip


def test_a_gpu_is_never_predicted_from_its_own_chips_fits():
    of = ev.transferred_fits(fitsfile.FITS_DIR)
    for name in ("Tesla T4", "NVIDIA A100-PCIE-40GB", "Tesla V100-PCIE-32GB"):
        tf = of(name)
        assert tf.source == "transferred"
        assert tf.transferred_from and all(chip(s) != chip(tf.gpu.slug) for s in tf.transferred_from)
        # the power model was fitted on the sources only
        assert tf.gpu.slug not in tf.meta["power"].fitted_on
        assert all(chip(s) != chip(tf.gpu.slug) for s in tf.meta["power"].fitted_on)
    assert of("Tesla T4") is of("t4")  # built once per GPU


def test_models_table_has_neusight_beside_and_a_mean_per_gpu():
    models = pd.DataFrame(
        {
            "gpu": ["Tesla T4", "Tesla T4", "Tesla P4"],
            "model": ["bert", "gpt2", "bert"],
            "measured_ms": [100.0, 200.0, 300.0],
            "predicted_ms": [110.0, 180.0, 300.0],
            "ape": [0.1, 0.1, 0.0],
            "neusight_ape": [0.3, 0.05, np.nan],
        }
    )
    t = ev.models_table(models)
    assert list(t.columns) == ["gpu", "model", "measured_ms", "predicted_ms", "ape", "neusight_ape"]
    mean = t[(t["gpu"] == "t4") & (t["model"] == "mean")].iloc[0]
    assert mean["ape"] == 0.1 and mean["neusight_ape"] == 0.175
    assert t["model"].tolist() == ["bert", "gpt2", "mean", "bert", "mean"]  # each GPU's mean after its models
