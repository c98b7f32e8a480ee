"""Labs 16 and 15 on the session's ZooKeeper lab (Kafka 3.9.2), after every other test that
uses it (tests/conftest.py orders them so): lab 15's solve leaves the cluster on KRaft with
ZooKeeper stopped, which no other ZooKeeper test could run on, and its reset is new storage (a
finalized migration has no way back).

Lab 16 first, as a learner may take them: into dual-write and rolled back, its walk (start ->
check fails -> solve -> check passes -> reset -> check fails) and the /migration guard. Then
lab 15 on the same cluster: start -> check fails -> solve (a producer with acks=all
throughout) -> check passes -> reset and `up` refused in one line, naming the way back
(down --purge, up), which changed nothing. That way back is the session lab's own teardown
and bring-up (tests/conftest.py); lab 15 itself starts on a ZooKeeper lab above."""

from __future__ import annotations

import re

import pytest

from tests.labs.helpers import assert_none_lost, check, start_check_solve_reset

pytestmark = [pytest.mark.cluster, pytest.mark.parametrize("cluster", ["zookeeper"], indirect=True)]


def test_lab_16_migration_rollback(cluster):
    """Lab 16: into dual-write, a topic created there, and back to ZooKeeper; its reset is a
    plain one, and lab 15 refuses to start while a migration's state is left in ZooKeeper."""
    solved = start_check_solve_reset(cluster, "16")
    assert re.search(r'"brokerid":300\d,.*"kraftControllerEpoch":\d+', solved)  # dual-write
    assert_none_lost(solved, "16")
    restarts = solved.count("(not waiting for it to pass by itself:")  # the README's remedy
    print(f"lab 16: {restarts} broker(s) restarted for a dead AlterPartition thread")
    assert "refunds" in solved.split("— checking")[-1]

    # the /migration guard: a stale migration state in ZooKeeper keeps lab 15 from starting
    create = "zookeeper-shell.sh kafka1:2181 create /migration '{}'"
    cluster.kafkalab("exec", "kafka1", "--", "bash", "-lc", create)
    start = cluster.kafkalab("lab", "start", "15", check=False)
    said = start.stdout + start.stderr
    assert start.returncode != 0 and "ZooKeeper still holds /migration" in said, said
    cleared = "zookeeper-shell.sh kafka1:2181 delete /migration"
    cluster.kafkalab("exec", "kafka1", "--", "bash", "-lc", cleared)


def test_lab_15_zookeeper_to_kraft(cluster):
    c = cluster
    assert "lab 15 is ready" in c.kafkalab("lab", "start", "15").stdout
    passed, out = check(c, "15")
    assert not passed
    assert "the KRaft controllers do not answer on port 9093" in out, out

    solved = c.kafkalab("lab", "solve", "15", "--no-reset", check=False)
    text = solved.stdout
    assert solved.returncode == 0, text[-4000:] + solved.stderr
    assert text.rstrip().endswith("lab 15 passed"), text[-3000:]
    # in dual-write ZooKeeper's /controller names a KRaft controller, with its epoch
    assert re.search(r'"brokerid":300\d,.*"kraftControllerEpoch":\d+', text), text[-3000:]
    summary = re.search(r"done: sent (\d+), acknowledged (\d+), failed (\d+), unknown (\d+)", text)
    assert summary, text[-3000:]
    sent, acked, failed, unknown = map(int, summary.groups())
    print(f"lab 15: producer sent {sent}, acknowledged {acked}, failed {failed} in the migration")
    assert acked == sent and failed == 0 and unknown == 0
    assert_none_lost(text, "15")

    # Migrated: a lab reset and a ZooKeeper provisioning are refused before anything changes
    reset = c.kafkalab("lab", "reset", "15", check=False)
    said = reset.stdout + reset.stderr
    assert reset.returncode != 0 and "Traceback" not in said
    assert "is being migrated to KRaft" in said and "kafkalab down --purge" in said, said
    up = c.kafkalab("up", check=False)
    said = up.stdout + up.stderr
    assert up.returncode != 0 and "is being migrated from ZooKeeper to KRaft by hand" in said, said
    passed, out = check(c, "15")  # and the refused `up` changed nothing
    assert passed, out
