"""What only the streaming tests compute or wait for: the rider-locations table (seed 002),
how late a ride arrives, a Spark master with nothing running."""

from __future__ import annotations

import json
import math
import time
from datetime import timedelta

from kafkalab.errors import KafkalabError
from kafkalab.streaming import spark
from kafkalab.streaming.expected import RideRow

MOUNTAIN_VIEW = (37.4133, -122.1162)
EARTH_RADIUS_MILES = 3961.0


def max_lateness(rides: list[RideRow]) -> timedelta:
    """How far behind the latest pickup seen so far a ride arrives, at worst."""
    latest, worst = None, timedelta(0)
    for r in rides:
        if latest is not None and latest - r.pickup > worst:
            worst = latest - r.pickup
        latest = r.pickup if latest is None else max(latest, r.pickup)
    return worst


def geo_distance(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in miles, as the job's GEO_DISTANCE and ksqlDB's."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(math.sqrt(a))


def riders_within(
    locations: list[tuple[str, float, float]],
    miles: float = 5,
    center: tuple[float, float] = MOUNTAIN_VIEW,
) -> set[str]:
    """Riders whose latest location (last in the list) is within `miles` of `center`."""
    latest = {p: (lat, lon) for p, lat, lon in locations}
    return {p for p, (lat, lon) in latest.items() if geo_distance(lat, lon, *center) <= miles}


def latest_by_key(records: list[tuple[str, str | None]]) -> dict[str, dict[str, object]]:
    """A topic read as a table: the last value of each key; a tombstone (null) deletes it."""
    out: dict[str, dict[str, object]] = {}
    for key, value in records:
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json.loads(value)
    return out


def wait_idle(sc: spark.SparkCluster, timeout: float = 60) -> None:
    """Wait until the master runs no application (a stopped job's executors are gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        apps = spark.master_state(sc).get("activeapps") or []
        if not apps:
            return
        time.sleep(1)
    raise KafkalabError(f"an application still runs on {sc.master_url} after {timeout:.0f}s")
