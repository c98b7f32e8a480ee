"""What the streaming jobs should produce (kafkalab.streaming.expected), computed from the
rides CSV, and the comparison with what a job wrote; the rider-locations arithmetic the
streaming tier checks ksqlDB and Spark against (tests/streaming/helpers.py)."""

from __future__ import annotations

from datetime import datetime

from kafkalab.paths import repo_root
from kafkalab.streaming import expected as streaming
from tests.streaming import helpers


def test_expected_counts_per_minute_and_location():
    rows = [
        streaming.RideRow(datetime(2020, 7, 1, 8, 0, 5), 236),
        streaming.RideRow(datetime(2020, 7, 1, 8, 0, 59), 236),
        streaming.RideRow(datetime(2020, 7, 1, 8, 1, 0), 236),
        streaming.RideRow(datetime(2020, 7, 1, 8, 4, 0), 48),
    ]
    assert streaming.expected_counts(rows) == {
        ("2020-07-01 08:00:00", 236): 2,
        ("2020-07-01 08:01:00", 236): 1,
        ("2020-07-01 08:04:00", 48): 1,
    }
    # watermark 08:02:00: only the windows ending by then are final
    closed = streaming.expected_counts(rows, closed_before=streaming.watermark_after(rows))
    assert closed == {("2020-07-01 08:00:00", 236): 2, ("2020-07-01 08:01:00", 236): 1}


def test_compare_counts_reports_missing_wrong_and_duplicates():
    expected = {("t0", 1): 2, ("t0", 2): 1, ("t1", 1): 4}
    got = [(("t0", 1), 2), (("t0", 1), 2), (("t0", 2), 3), (("t9", 9), 1)]
    report = streaming.compare_counts(expected, got)
    assert not report.ok
    assert report.duplicates == [("t0", 1)]
    assert report.missing == [("t1", 1)]
    assert report.wrong == [(("t0", 2), 3, 1)]
    assert report.unexpected == [("t9", 9)]
    assert streaming.compare_counts(expected, [(k, v) for k, v in expected.items()]).ok


def test_the_shipped_csv():
    rides = streaming.read_rides()
    assert len(rides) == 3000
    header = (repo_root() / "spark" / "data" / "rides.csv").read_text().splitlines()[0]
    assert header.split(",")[:3] == ["VendorID", "tpep_pickup_datetime", "tpep_dropoff_datetime"]
    assert len(streaming.expected_counts(rides)) == 357
    assert 0 < helpers.max_lateness(rides).total_seconds() < 120


def test_riders_within_5_miles_take_the_latest_location():
    seed = [
        ("c2309eec", 37.7877, -122.4205),
        ("18f4ea86", 37.3903, -122.0643),
        ("4ab5cbad", 37.3952, -122.0813),
    ]
    assert helpers.riders_within(seed) == {"18f4ea86", "4ab5cbad"}
    moved = [*seed, ("4ab5cbad", 37.7749, -122.4194)]
    assert helpers.riders_within(moved) == {"18f4ea86"}
    assert helpers.latest_by_key([("a", '{"x": 1}'), ("b", '{"x": 2}'), ("a", None)]) == {
        "b": {"x": 2}
    }
