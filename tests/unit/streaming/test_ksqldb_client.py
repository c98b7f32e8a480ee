"""The ksqlDB REST client (kafkalab.streaming.ksqldb_client) against a fake server (httpx's
MockTransport): what it sends, how it reads push/pull answers, how errors surface."""

from __future__ import annotations

import json

import httpx
import pytest

from kafkalab.streaming.ksqldb_client import KsqlClient, KsqlError


def client_for(handler) -> KsqlClient:
    return KsqlClient("http://ksql1:8088", transport=httpx.MockTransport(handler))


def test_statements_go_to_ksql_terminated_with_properties():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["path"] = request.url.path
        seen["body"] = json.loads(request.content)
        seen["accept"] = request.headers["accept"]
        return httpx.Response(
            200, json=[{"@type": "currentStatus", "commandStatus": {"status": "SUCCESS"}}]
        )

    with client_for(handler) as c:
        out = c.ksql(
            "CREATE STREAM s (a INT) WITH (kafka_topic='t', value_format='json')", {"x": 1}
        )
    assert seen["path"] == "/ksql"
    assert seen["body"]["ksql"].endswith(";")
    assert seen["body"]["streamsProperties"] == {"x": 1}
    assert seen["accept"] == "application/vnd.ksql.v1+json"
    assert out[0]["commandStatus"]["status"] == "SUCCESS"


def test_statement_errors_raise_with_ksqldbs_message():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            400,
            json={
                "@type": "statement_error",
                "error_code": 40001,
                "message": "Cannot add stream 'RIDER_LOCATIONS': A stream with the same name"
                " already exists",
            },
        )

    with client_for(handler) as c, pytest.raises(KsqlError, match="already exists"):
        c.ksql("CREATE STREAM rider_locations (a INT) WITH (kafka_topic='t')")


def test_old_style_errors_with_status_200_raise_too():
    # ksql-python's workaround in seed 002: some errors come back as 200 with ERROR status.
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json=[
                {
                    "@type": "currentStatus",
                    "commandStatus": {"status": "ERROR", "message": "query failed to start"},
                }
            ],
        )

    with client_for(handler) as c, pytest.raises(KsqlError, match="failed to start"):
        c.ksql("CREATE TABLE t AS SELECT 1 FROM s")


def _delimited(header: dict, rows: list[list]) -> bytes:
    lines = [json.dumps(header), *(json.dumps(r) for r in rows)]
    return ("\n".join(lines) + "\n").encode()


def test_pull_query_rows_become_dicts():
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/query-stream"
        body = json.loads(request.content)
        assert body["sql"].startswith("SELECT * FROM riders_near_mountain_view")
        assert request.headers["accept"] == "application/vnd.ksqlapi.delimited.v1"
        header = {"queryId": "q1", "columnNames": ["DISTANCEINMILES", "RIDERS", "COUNT"]}
        return httpx.Response(200, content=_delimited(header, [[0.0, ["a", "b"], 2]]))

    with client_for(handler) as c:
        rows = c.pull("SELECT * FROM riders_near_mountain_view WHERE distanceInMiles <= 10")
    assert rows == [{"DISTANCEINMILES": 0.0, "RIDERS": ["a", "b"], "COUNT": 2}]


def test_push_query_stops_listening_after_the_rows_asked_for():
    header = {"queryId": "q2", "columnNames": ["PROFILEID", "LATITUDE", "LONGITUDE"]}
    rows = [["18f4ea86", 37.3903, -122.0643], ["4ab5cbad", 37.3952, -122.0813], ["x", 1, 2]]

    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["properties"] == {"auto": "earliest"}
        return httpx.Response(200, content=_delimited(header, rows))

    with client_for(handler) as c:
        got = c.push("SELECT * FROM rider_locations EMIT CHANGES", 2, {"auto": "earliest"})
    assert [r["PROFILEID"] for r in got] == ["18f4ea86", "4ab5cbad"]


def test_query_errors_raise():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"@type": "generic_error", "message": "no such table"})

    with client_for(handler) as c, pytest.raises(KsqlError, match="no such table"):
        c.pull("SELECT * FROM nope")


def test_info_and_wait_running():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={"KsqlServerInfo": {"version": "7.9.0", "serverStatus": "RUNNING"}},
        )

    with client_for(handler) as c:
        assert c.wait_running(timeout=5)["version"] == "7.9.0"
