"""Job 2 (spark/jobs/rider_locations.py): seed 002's riders near Mountain View, in Spark SQL
with a Python GEO_DISTANCE UDF that runs on the executors."""

from __future__ import annotations

import importlib.util
import time

import pytest

from kafkalab.paths import repo_root
from kafkalab.streaming import expected as streaming
from kafkalab.streaming import spark
from tests.streaming import helpers

pytestmark = [pytest.mark.cluster, pytest.mark.streaming]


def seed_locations() -> list[tuple[str, float, float]]:
    path = repo_root() / "spark" / "locations.py"
    spec = importlib.util.spec_from_file_location("locations", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.SEED) + list(module.MOVES)


def test_riders_within_5_miles_of_mountain_view(streaming_lab, tmp_path):
    sc = streaming_lab.spark
    streaming_lab.python("spark/locations.py", "--bootstrap", sc.bootstrap, "--moves")
    log = tmp_path / "rider_locations.log"
    started = time.monotonic()
    code = spark.submit(
        "rider_locations",
        ["--once"],
        cluster=sc.cluster,
        conf={"spark.ui.enabled": "false"},
        output=log,
    )
    streaming_lab.timings["job 2 (--once)"] = time.monotonic() - started
    assert code == 0, log.read_text()[-3000:]

    table = helpers.latest_by_key(streaming.read_topic(sc.bootstrap, "riders-near-mountain-view"))
    locations = seed_locations()
    # 4ab5cbad drove to San Francisco, c2309eec came to Mountain View: their latest counts.
    assert (
        set(table)
        == helpers.riders_within(locations)
        == {"18f4ea86", "8b6eae59", "4a7c7b41", "c2309eec"}
    )
    latest = {p: (lat, lon) for p, lat, lon in locations}
    for profile, row in table.items():
        assert (row["latitude"], row["longitude"]) == latest[profile]
        want = helpers.geo_distance(*latest[profile], *helpers.MOUNTAIN_VIEW)
        assert abs(float(str(row["distanceInMiles"])) - want) < 1e-6
    text = log.read_text()
    assert "riders_near_mountain_view" in text  # the distance buckets table was printed
