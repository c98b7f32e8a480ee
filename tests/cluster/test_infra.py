"""Run the testinfra tier (tests/infra) against the embedded cluster's inventory."""

import pytest

from tests.testinfra_tier import assert_testinfra_passes

pytestmark = pytest.mark.cluster


def test_testinfra_tier_passes_on_every_host(cluster):
    assert_testinfra_passes(cluster.inventory_path)
