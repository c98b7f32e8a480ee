"""Every lab against the embedded cluster: start -> check fails (nothing done) -> solve
(which ends with the check, passing) -> reset -> check fails again; the state follows.

Labs 01 and 06 run in both modes, the others on KRaft only (they do not depend on the
mode, and the suite should stay short). The cluster fixture's own params (kraft, then
zookeeper) keep one cluster per mode for the whole session. Durations and reset times:
`pytest -s --durations=0 tests/labs`.
"""

from __future__ import annotations

import re

import pytest

from kafkalab.streaming import kstreams
from tests.labs.helpers import start_check_solve_reset

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("lab", ["01", "06"])
def test_lab_in_both_modes(cluster, lab):
    start_check_solve_reset(cluster, lab)


# Lab 03 is walked with each Python client in tests/cluster/test_course.py.
@pytest.mark.parametrize("lab", ["02", "04", "05"])
@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_lab_on_kraft(cluster, lab):
    start_check_solve_reset(cluster, lab)


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_lab_10_kafka_streams_on_kraft(cluster):
    """Lab 10's application (built by `make setup-test`'s fetch) on the KRaft labs' cluster:
    the walk (its check compares every count with rides.csv), and what the learner sees in
    solve: the changelog topic, no repartition topic (groupByKey keeps the key), the Long
    counts printed as numbers."""
    solved = start_check_solve_reset(cluster, "10")
    unwrapped = re.sub(r"\s+", "", solved)  # the console folds the long topic names
    assert kstreams.CHANGELOG in unwrapped
    assert "-repartition" not in unwrapped
    assert re.search(r"^\s+\d+\s+\d+$", solved, re.MULTILINE), solved[-3000:]  # key, count


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
@pytest.mark.parametrize(("lab", "host"), [("07", "spark"), ("08", "ksqldb")])
def test_a_streaming_lab_without_its_host_is_refused_with_the_fix(cluster, lab, host):
    proc = cluster.kafkalab("lab", "start", lab, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"needs the {host} host(s) this cluster does not have" in proc.stderr
    assert f"kafkalab up --with {host}" in proc.stderr
