"""The power model (seer.hardware.power): sustained clocks from TDP, node and peak."""

import dataclasses

import pytest

from seer.hardware import gpus, power

MODEL = power.PowerModel(e12=17.0, gamma=1.5, kernel={"linear:default": 0.85})


def test_a_70w_card_sustains_less_than_its_datasheet_on_gemms():
    t4, v100 = gpus.lookup("t4"), gpus.lookup("v100-pcie")
    assert MODEL.clock_fraction(t4) < 0.6  # 70 W cannot feed 8.1 TFLOP/s at 12 nm
    assert MODEL.clock_fraction(v100) == 1.0  # 250 W can feed 14.1
    assert MODEL.efficiency(t4, "linear:default") < 0.5 * MODEL.efficiency(v100, "linear:default") / 0.85


def test_more_watts_or_a_smaller_node_raise_the_clock():
    t4 = gpus.lookup("t4")
    assert MODEL.clock_fraction(dataclasses.replace(t4, tdp_w=140)) > MODEL.clock_fraction(t4)
    assert MODEL.clock_fraction(dataclasses.replace(t4, process="TSMC 7N")) > MODEL.clock_fraction(t4)


def test_a_spec_without_tdp_or_node_is_not_capped():
    bare = dataclasses.replace(gpus.lookup("t4"), tdp_w=None)
    assert not power.powered(bare) and MODEL.clock_fraction(bare) == 1.0
    assert MODEL.efficiency(bare, "bmm:default") is None  # a family it was not fitted on


def test_fit_recovers_the_constants_that_made_the_efficiencies():
    truth = power.PowerModel(e12=16.0, gamma=1.2, kernel={"linear:default": 0.8, "bmm:default": 0.9})
    specs = [gpus.lookup(s) for s in ("t4", "p4", "v100-pcie", "p100-pcie", "a100-40gb", "h100-sxm")]
    data = [(s, {k: truth.efficiency(s, k) for k in truth.kernel}) for s in specs]
    got = power.fit(data)
    assert got.fitted_on == tuple(s.slug for s in specs)
    for s in specs:
        assert got.clock_fraction(s) == pytest.approx(truth.clock_fraction(s), rel=0.05)
    assert got.kernel["linear:default"] == pytest.approx(0.8, rel=0.05)


def test_fit_leaves_out_saturated_efficiencies_and_unpowered_specs():
    t4 = gpus.lookup("t4")
    got = power.fit([(t4, {"linear:default": 1.0}), (dataclasses.replace(t4, tdp_w=None), {"linear:default": 0.4})])
    assert got.fitted_on == () and got.kernel == {} and got.clock_fraction(t4) == 1.0
