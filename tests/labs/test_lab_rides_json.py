"""Lab 09 (seed 003's kafka-python JSON producer and consumer group) on the labs tier's
KRaft cluster, the one test_labs.py uses: start -> check fails -> solve -> check passes
-> reset -> check fails. The solve runs the page's scripts inside the lab network."""

from __future__ import annotations

import pytest

from tests.labs.helpers import start_check_solve_reset

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_lab_09_rides_json(cluster):
    out = start_check_solve_reset(cluster, "09")
    assert "sent 3000 of 3000 rides to rides" in out
    assert "read 3000 rides" in out
    assert "consumer.group.id.json-example.1" in out
    assert "3000 JSON records in rides for 3000 rows" in out
