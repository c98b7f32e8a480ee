"""Lab 08 (seed 002 in ksqlDB) against the lab's ksqlDB server: stream, tables, a push
query while the seed's riders are inserted, a pull query. Skips, naming the archive and
where to put it, when Confluent's community archive is not in the artifact cache."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.paths import repo_root
from kafkalab.streaming.ksqldb_client import KsqlClient

pytestmark = [pytest.mark.cluster, pytest.mark.streaming]


def riders_script() -> ModuleType:
    path = repo_root() / "labs" / "08-ksqldb-riders" / "riders.py"
    spec = importlib.util.spec_from_file_location("riders", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ksql(streaming_lab):
    if ksqldb_artifact.cached() is None:
        pytest.skip(ksqldb_artifact.missing_message())
    topo = streaming_lab.cluster.topology()
    if topo is None or not any("ksqldb" in m.groups for m in topo.machines()):
        pytest.skip("the streaming lab has no ksqlDB host (the archive came after it was up)")
    riders = riders_script()
    with KsqlClient(riders.server_url(streaming_lab.cluster)) as client:
        client.wait_running()
        yield riders, client


def test_streams_tables_push_and_pull(ksql):
    riders, client = ksql
    riders.drop(client)
    riders.stream(client)
    riders.tables(client)
    pushed = riders.push(client, rows=4, insert_after=3)
    assert {r["PROFILEID"] for r in pushed} == {"18f4ea86", "4ab5cbad", "8b6eae59", "4a7c7b41"}
    rows = riders.pull(client)
    near = [r for r in rows if r["DISTANCEINMILES"] == 0.0]
    assert near and sorted(near[0]["RIDERS"]) == ["18f4ea86", "4a7c7b41", "4ab5cbad", "8b6eae59"]
    assert near[0]["COUNT"] == 4
