"""The testinfra tier (tests/infra, test_spark.py included) against the streaming lab."""

import pytest

from tests.testinfra_tier import assert_testinfra_passes

pytestmark = [pytest.mark.cluster, pytest.mark.streaming]


def test_testinfra_tier_passes_on_every_host(streaming_lab):
    assert_testinfra_passes(streaming_lab.inventory_path, env=streaming_lab.env)


def test_spark_master_lists_the_worker(streaming_lab):
    from kafkalab.streaming import spark

    sc = streaming_lab.spark
    state = spark.master_state(sc)
    alive = [w["host"] for w in state["workers"] if w["state"] == "ALIVE"]
    assert state["status"] == "ALIVE"
    assert alive == [sc.master_address]  # spark1 runs the master and the one worker


def test_status_shows_the_spark_services(streaming_lab):
    import json

    data = json.loads(streaming_lab.kafkalab("status", "--json").stdout)
    spark1 = next(m for m in data["machines"] if m["host"] == "spark1")
    assert spark1["address"] == "10.77.0.21"
    assert spark1["services"] == {"spark-master": "active", "spark-worker": "active"}
    assert set(spark1["roles"]) == {"spark_master", "spark_worker"}


def test_the_spark_master_ui_answers_on_the_host_through_its_forwarded_port(streaming_lab):
    """A browser on the learner's desk: an HTTP GET from the host's namespace (not the
    lab's) of the URL `kafkalab status` gives."""
    import json
    import urllib.request

    from tests.host_side import on_host

    forwarded = json.loads(streaming_lab.kafkalab("status", "--json").stdout)["lab"]["forwarded"]
    url = forwarded["spark master UI"]
    assert url.startswith("http://127.0.0.1:") and not url.endswith(":8080")  # the lab's own

    def get() -> tuple[int, str]:
        with urllib.request.urlopen(url + "/json/", timeout=30) as answer:
            return answer.status, answer.read().decode()

    status, body = on_host(get)
    assert status == 200
    assert json.loads(body)["status"] == "ALIVE"  # the master's own page, through the port
