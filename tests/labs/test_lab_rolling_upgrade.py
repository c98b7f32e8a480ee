"""Lab 14 (a rolling upgrade from Kafka 3.9.2 to 4.3.1 in KRaft mode) on a lab of its own: it
starts on a release no other KRaft test runs, its solve rolls the cluster with `kafkalab up`
under a producer, and its reset is new storage (a cluster never goes back to 3.9). The walk:
start -> check fails -> solve -> check passes -> reset and a downgrading `up` refused in one
line, naming the way back (down --purge, up on 3.9.2), which changed nothing. That way back
is this fixture's own bring-up (a new 3.9.2 lab, where start -> check fails ran first); the
suite does not walk it a second time (~70 s)."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.conftest import lab_cluster
from tests.labs.helpers import assert_none_lost, check

pytestmark = pytest.mark.cluster

NS = f"{os.environ.get('KAFKALAB_TEST_NS', 'kltest')}-up"
OLD = {"mode": "kraft", "kafka_version": "3.9.2"}


@pytest.fixture(scope="module")
def old_cluster():
    with lab_cluster(NS, **OLD) as c:
        yield c


def test_lab_14_rolling_upgrade(old_cluster):
    c = old_cluster
    out = c.kafkalab("lab", "start", "14").stdout
    assert "lab 14 is ready" in out
    passed, out = check(c, "14")
    assert not passed
    assert re.search(r"kafka1 still runs Kafka 3\.9\.2", out), out
    assert "metadata.version is 3.9-IV0" in out, out

    solved = c.kafkalab("lab", "solve", "14", "--no-reset", check=False)
    text = solved.stdout
    assert solved.returncode == 0, text[-4000:] + solved.stderr
    assert text.rstrip().endswith("lab 14 passed"), text[-2000:]
    assert "$ kafkalab up --kafka-version 4.3.1" in text
    assert "cluster up (kraft, 3 brokers)" in text  # the host's own up ran, and rolled
    assert "metadata.version was upgraded to" in text
    summary = re.search(r"done: sent (\d+), acknowledged (\d+), failed (\d+), unknown (\d+)", text)
    assert summary, text[-3000:]
    sent, acked, failed, unknown = map(int, summary.groups())
    print(f"lab 14: producer sent {sent}, acknowledged {acked}, failed {failed} during the roll")
    assert acked == sent and failed == 0 and unknown == 0
    assert_none_lost(text, "14")
    saved = json.loads((c.state / "lab.json").read_text())["topology"]
    assert saved["kafka_version"] == "4.3.1"  # the next `up` keeps the new release

    # A cluster on 4.3 never goes back: reset and a downgrade are refused before anything runs
    reset = c.kafkalab("lab", "reset", "14", check=False)
    assert reset.returncode != 0 and "Traceback" not in reset.stderr
    assert "starts on Kafka 3.9; this cluster runs 4.3.1" in reset.stderr + reset.stdout
    assert "kafkalab up --kafka-version 3.9.2" in reset.stderr + reset.stdout
    back = c.kafkalab("up", "--kafka-version", "3.9.2", check=False)
    assert back.returncode != 0 and "down --purge" in back.stderr + back.stdout

    passed, out = check(c, "14")  # and the refused `up` changed nothing
    assert passed, out
