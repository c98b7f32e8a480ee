"""Lab 12 (KIP-932 share groups, Kafka 4.2+) on the KRaft labs' cluster: the walk, and what the
workers printed proves the queue: both read partition 0, every job once, and the released
job-3 came back with a higher delivery count each time until its fifth delivery.

The solve prints w1's whole output, then w2's (two `wait` steps), so job-3's deliveries show
grouped by worker (w1 3 4 5, then w2 1 2 in one CI run): each worker's own are in order, and
together they are deliveries 1 to 5."""

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
    released: dict[str, list[int]] = {"w1": [], "w2": []}
    for w, _o, job, d, _verdict in got:
        if job == "job-3":
            released[w].append(int(d))
    for worker, deliveries in released.items():  # in order on each worker
        assert deliveries == sorted(set(deliveries)), (worker, deliveries)
    assert sorted(released["w1"] + released["w2"]) == [1, 2, 3, 4, 5]  # then archived: the limit
