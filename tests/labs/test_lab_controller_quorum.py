"""Lab 13 (KIP-853 controller quorum changes, Kafka 4.1+) on the KRaft labs' cluster: the walk
(kraft.version 0 -> 1, controller 3 removed and an observer, the cluster serving a new RF=3
topic), and `lab reset` adding controller 3 back: three voters again. The labs after it in
this session (test_labs.py: 04, 05, 06) then run on the dynamic quorum."""

from __future__ import annotations

import re

import pytest

from tests.labs.helpers import start_check_solve_reset

pytestmark = pytest.mark.cluster


def voters(cluster) -> list[str]:
    status = cluster.kafkalab(
        "exec",
        "kafka1",
        "--",
        "kafka-metadata-quorum.sh",
        "--bootstrap-server",
        "kafka1:9092",
        "describe",
        "--status",
    ).stdout
    line = next(ln for ln in status.splitlines() if ln.startswith("CurrentVoters"))
    return re.findall(r'"id": (\d+)', line)


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_lab_13_controller_quorum(cluster):
    solved = start_check_solve_reset(cluster, "13")
    assert "kraft.version was upgraded to 1" in solved or "kraft.version 1" in solved
    assert "Removed KRaft controller 3" in solved.replace("  ", " ")
    assert re.search(r"^\s*3\s+\S{22}\s+\d+\s+\d+\s+\d+\s+\d+\s+Observer", solved, re.MULTILINE)
    assert voters(cluster) == ["1", "2", "3"]  # the reset added it back
