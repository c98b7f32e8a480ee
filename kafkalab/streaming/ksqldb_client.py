"""A small client of ksqlDB's REST API (httpx), for the ksqlDB lab (08) and its tests.

Seed 002 used ksql-python, which needs patching on current Pythons; the REST API it wraps
is simple enough to call directly:

- `POST /ksql`: statements (CREATE STREAM/TABLE, INSERT INTO, DROP, SHOW ...);
- `POST /query-stream`: push queries (`EMIT CHANGES`, rows as they come) and pull
  queries (the table's current state), one JSON document per line;
- `GET /info`: version and status.

Run it inside the cluster's network (ksql1:8088 resolves there).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from kafkalab.errors import KafkalabError

KSQL_JSON = "application/vnd.ksql.v1+json"
DELIMITED = "application/vnd.ksqlapi.delimited.v1"


class KsqlError(KafkalabError):
    """ksqlDB refused a statement or query; the message is ksqlDB's own."""


class KsqlClient:
    def __init__(self, url: str, timeout: float = 30, transport: httpx.BaseTransport | None = None):
        self.url = url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.url, timeout=httpx.Timeout(timeout), transport=transport
        )

    def __enter__(self) -> KsqlClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def info(self) -> dict[str, Any]:
        resp = self.http.get("/info")
        resp.raise_for_status()
        data: dict[str, Any] = resp.json()["KsqlServerInfo"]
        return data

    def wait_running(self, timeout: float = 120) -> dict[str, Any]:
        """Wait until /info says RUNNING (a fresh server replays its command topic first)."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                info = self.info()
                if info.get("serverStatus", "RUNNING") == "RUNNING":
                    return info
                last = str(info.get("serverStatus"))
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(2)
        raise KafkalabError(f"ksqlDB at {self.url} is not RUNNING after {timeout:.0f}s ({last})")

    def ksql(
        self, statements: str, properties: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Run statements; one result per statement. Errors raise KsqlError."""
        body = {"ksql": _terminated(statements), "streamsProperties": properties or {}}
        resp = self.http.post("/ksql", json=body, headers={"Accept": KSQL_JSON})
        data = _json(resp)
        if resp.status_code != 200 or isinstance(data, dict):
            raise KsqlError(_error_text(data, resp))
        for item in data:
            status = (item.get("commandStatus") or {}).get("status")
            if status == "ERROR":
                raise KsqlError(item["commandStatus"].get("message", "statement failed"))
        result: list[dict[str, Any]] = data
        return result

    def stream(
        self, sql: str, properties: dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Rows of a push or pull query as dicts (column -> value), as they arrive."""
        body = {"sql": _terminated(sql), "properties": properties or {}}
        headers = {"Accept": DELIMITED, "Content-Type": "application/json"}
        with self.http.stream(
            "POST", "/query-stream", json=body, headers=headers, timeout=None
        ) as resp:
            if resp.status_code != 200:
                resp.read()
                raise KsqlError(_error_text(_json(resp), resp))
            columns: list[str] = []
            for line in resp.iter_lines():
                if not line.strip():
                    continue
                item = json.loads(line)
                if isinstance(item, dict) and "columnNames" in item:
                    columns = item["columnNames"]
                elif isinstance(item, dict) and item.get("@type", "").endswith("error"):
                    raise KsqlError(item.get("message", "query failed"))
                elif isinstance(item, list):
                    yield dict(zip(columns, item, strict=False))

    def pull(self, sql: str) -> list[dict[str, Any]]:
        """A pull query: the current rows of a table, then the answer ends."""
        return list(self.stream(sql))

    def push(
        self, sql: str, rows: int, properties: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The first `rows` rows of a push query (`EMIT CHANGES`), then stop listening.
        A push query never ends by itself: add `LIMIT n` to the SQL, or pass `rows`."""
        out: list[dict[str, Any]] = []
        for row in self.stream(sql, properties):
            out.append(row)
            if len(out) >= rows:
                break
        return out


def _terminated(sql: str) -> str:
    sql = sql.strip()
    return sql if sql.endswith(";") else sql + ";"


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return {"message": resp.text.strip() or f"HTTP {resp.status_code}"}


def _error_text(data: Any, resp: httpx.Response) -> str:
    if isinstance(data, dict):
        return str(data.get("message") or f"HTTP {resp.status_code}")
    return f"HTTP {resp.status_code}: {str(data)[:300]}"
