"""The testinfra tier (tests/infra, test_spark.py included) against the streaming lab."""

import pytest

from tests.testinfra_tier import assert_testinfra_passes

pytestmark = [pytest.mark.cluster, pytest.mark.streaming]


def test_testinfra_tier_passes_on_every_host(streaming_lab):
    assert_testinfra_passes(streaming_lab.inventory_path, env=streaming_lab.env)


def test_spark_master_lists_the_worker(streaming_lab):
    from kafkalab import spark

    sc = streaming_lab.spark
    state = spark.master_state(sc)
    alive = [w["host"] for w in state["workers"] if w["state"] == "ALIVE"]
    assert state["status"] == "ALIVE"
    assert alive == [sc.master_address]  # spark1 runs the master and the one worker
