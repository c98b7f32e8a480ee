"""Lab 12 (KIP-932 share groups, Kafka 4.2+) on the KRaft labs' cluster: the walk, and what the
workers printed proves the queue: both read partition 0, every job once, and the released
job-3 came back with a higher delivery count each time until its fifth delivery."""

from __future__ import annotations

import re

import pytest

from tests.labs.helpers import start_check_solve_reset

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_lab_12_share_groups(cluster):
    solved = start_check_solve_reset(cluster, "12")
    got = re.findall(r"^\s*(w[12]) p0@(\d+) (job-\d+) delivery=(\d) (\w+)$", solved, re.MULTILINE)
    assert {w for w, *_ in got} == {"w1", "w2"}, solved[-3000:]  # one partition, two workers
    accepted = [job for _w, _o, job, _d, verdict in got if verdict == "ACCEPT"]
    assert sorted(accepted) == sorted(f"job-{i}" for i in range(1, 21) if i != 3)
    released = [int(d) for _w, _o, job, d, verdict in got if job == "job-3"]
    assert released == [1, 2, 3, 4, 5]  # then archived: the delivery limit
