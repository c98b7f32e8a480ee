"""Lab 11 (KIP-848's consumer group protocol, Kafka 4.x) on the KRaft labs' cluster: the walk,
and what the members printed proves the protocols differ: on the new one the first member
gives up only the partitions the second takes, on the classic one it gives up all six."""

from __future__ import annotations

import re

import pytest

from tests.labs.helpers import start_check_solve_reset

pytestmark = pytest.mark.cluster


def first_revoke(solved: str, member: str) -> list[int]:
    """The partitions a member gave up first, from its `-[...]` line in the solve output."""
    found = re.search(rf"^\s*{member}\s+[\d.]+s -\[([\d, ]*)\]", solved, re.MULTILINE)
    assert found, f"{member} gave up no partition:\n{solved[-3000:]}"
    return [int(p) for p in found.group(1).split(",")]


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_lab_11_consumer_protocol(cluster):
    solved = start_check_solve_reset(cluster, "11")
    assert len(first_revoke(solved, "d1")) == 3  # only what moved to d2
    assert first_revoke(solved, "l1") == [0, 1, 2, 3, 4, 5]  # eager: everything
    assert re.search(r"dispatch\s+Consumer\s+consumer", solved)
    assert re.search(r"legacy\s+Classic\s+consumer", solved)
