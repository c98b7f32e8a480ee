"""Lab 15 (a ZooKeeper cluster on Kafka 3.9.2 migrated to KRaft by hand) on a ZooKeeper lab
of its own: its solve leaves the cluster on KRaft with ZooKeeper stopped, which no other
ZooKeeper test could run on, and its reset is new storage (a finalized migration has no way
back). The walk: start -> check fails -> solve (a producer with acks=all throughout) ->
check passes -> reset and `up` refused in one line -> down --purge, up, start -> check fails."""

from __future__ import annotations

import os
import re

import pytest

from tests import host_side
from tests.conftest import lab_cluster
from tests.labs.helpers import check, saved_state, start_check_solve_reset

pytestmark = pytest.mark.cluster

NS = f"{os.environ.get('KAFKALAB_TEST_NS', 'kltest')}-mig"
ZOOKEEPER = {"mode": "zookeeper"}


@pytest.fixture(scope="module")
def zk_cluster():
    with lab_cluster(NS, **ZOOKEEPER) as c:
        yield c


def test_lab_15_zookeeper_to_kraft(zk_cluster):
    c = zk_cluster
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
    assert re.search(r"acknowledged \d+, lost 0, duplicates 0", text), text[-3000:]

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

    # The reset the README gives: new storage on ZooKeeper, the lab started again
    topo = host_side.topology_file(c.state.parent / f"{NS}-topology.yml", **ZOOKEEPER)
    c.kafkalab("down", "--purge")
    c.kafkalab("up", "--mode", "zookeeper", "-t", str(topo))
    c.kafkalab("lab", "start", "15")
    assert saved_state(c, "15") == "in progress"
    passed, out = check(c, "15")
    assert not passed and "the KRaft controllers do not answer" in out, out


def test_lab_16_migration_rollback(zk_cluster):
    """Lab 16 on the ZooKeeper cluster lab 15's test left new (after its down --purge and up):
    into dual-write, a topic created there, and back to ZooKeeper; its reset is a plain one,
    and lab 15 refuses to start while a migration's state is left in ZooKeeper."""
    solved = start_check_solve_reset(zk_cluster, "16")
    assert re.search(r'"brokerid":300\d,.*"kraftControllerEpoch":\d+', solved)  # dual-write
    assert re.search(r"acknowledged \d+, lost 0, duplicates 0", solved), solved[-3000:]
    assert "refunds" in solved.split("— checking")[-1]

    # the /migration guard: a stale migration state in ZooKeeper keeps lab 15 from starting
    create = "zookeeper-shell.sh kafka1:2181 create /migration '{}'"
    zk_cluster.kafkalab("exec", "kafka1", "--", "bash", "-lc", create)
    start = zk_cluster.kafkalab("lab", "start", "15", check=False)
    said = start.stdout + start.stderr
    assert start.returncode != 0 and "ZooKeeper still holds /migration" in said, said
