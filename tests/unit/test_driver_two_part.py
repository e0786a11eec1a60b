"""Two-part driver versions (470.86, 550.135, Jetson Thor's 580.00) where a fleet node states its
driver: node features and the Kubernetes driver-floor expressions read them as X.Y.0."""

from __future__ import annotations

import pytest

from envbuilder.fleet.classes import facts_from_features
from envbuilder.fleet.kubernetes import driver_at_least


@pytest.mark.parametrize("driver", ["550.135", "470.86", "580.00"])
def test_a_node_feature_with_a_two_part_driver_is_read(driver: str) -> None:
    got, _, facts = facts_from_features((f"nvidia_driver_{driver}",))
    assert got == driver and facts == [f"driver {driver}: node feature nvidia_driver_{driver}"]


def test_a_two_part_floor_is_the_same_as_its_zero_padded_form() -> None:
    assert driver_at_least("580.00") == driver_at_least("580.0.0")
    assert driver_at_least("550.135") == driver_at_least("550.135.0")
