"""Job 1 (spark/jobs/ride_counts.py) on the lab: windowed counts equal the counts computed
from the CSV, and a killed job, started again, resumes from its checkpoint: nothing is
read twice, no window is written twice.

The producer replays the first half of rides.csv; the job runs (micro-batches every 3 s)
until every window the watermark has closed is in `rides-counts`; it is killed like
Ctrl-C; the producer replays the rest (and the end marker that closes the last windows);
the job runs again with --once (what is there, then stop).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kafkalab.streaming import expected as streaming
from kafkalab.streaming import spark
from tests.streaming import helpers

pytestmark = [pytest.mark.cluster, pytest.mark.streaming]

FIRST = 1500
QUICK = {"spark.ui.enabled": "false"}
SINK = "rides-counts"


def counts_report(
    bootstrap: str, expected: dict[streaming.WindowKey, int]
) -> streaming.CountsReport:
    records = streaming.read_topic(bootstrap, SINK)
    return streaming.compare_counts(expected, streaming.parse_counts(records))


def batches(checkpoint: str, query: str) -> list[int]:
    """Micro-batch ids the driver has committed in this query's checkpoint."""
    commits = Path(checkpoint) / query / "commits"
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())


def test_the_csv_fits_the_watermark():
    rides = streaming.read_rides()
    assert len(rides) >= 2000
    # Late rides exist, but less late than the job's 2-minute watermark: every one counts.
    assert 0 < helpers.max_lateness(rides).total_seconds() < 120


def test_counts_match_the_csv_and_a_restart_resumes(streaming_lab, tmp_path):
    sc = streaming_lab.spark
    timings = streaming_lab.timings
    rides = streaming.read_rides()
    first = rides[:FIRST]
    closed_first = streaming.expected_counts(first, closed_before=streaming.watermark_after(first))
    assert len(closed_first) > 50

    streaming_lab.python("spark/producer.py", "--bootstrap", sc.bootstrap, "--first", str(FIRST))
    log1 = tmp_path / "run1.log"
    started = time.monotonic()
    job = spark.start(
        "ride_counts",
        ["--no-console", "--every", "3 seconds"],
        cluster=sc.cluster,
        conf=QUICK,
        output=log1,
    )
    try:
        report = None
        while time.monotonic() - started < 420:
            assert job.poll() is None, f"the job ended early:\n{log1.read_text()[-3000:]}"
            report = counts_report(sc.bootstrap, closed_first)
            if report.ok:
                break
            time.sleep(3)
        assert report is not None and report.ok, report.summary() if report else "no report"
        timings["job 1 first run (to all closed windows)"] = time.monotonic() - started
    finally:
        spark.stop(job)  # SIGTERM to spark-submit and the Python driver, as Ctrl-C
    helpers.wait_idle(sc)
    checkpoint = sc.checkpoint("ride-counts")
    first_batches = batches(checkpoint, "rides_counts_kafka")
    assert first_batches, "the first run committed no batch to its checkpoint"

    streaming_lab.python(
        "spark/producer.py", "--bootstrap", sc.bootstrap, "--skip", str(FIRST), "--end-marker"
    )
    log2 = tmp_path / "run2.log"
    started = time.monotonic()
    code = spark.submit(
        "ride_counts", ["--no-console", "--once"], cluster=sc.cluster, conf=QUICK, output=log2
    )
    timings["job 1 restart (--once)"] = time.monotonic() - started
    assert code == 0, log2.read_text()[-3000:]

    report = counts_report(sc.bootstrap, streaming.expected_counts(rides))
    assert report.ok, report.summary()
    assert report.received == report.expected  # one record per window: nothing twice
    # The restart went on from the checkpoint: its batches follow the first run's.
    second = [b for b in batches(checkpoint, "rides_counts_kafka") if b > max(first_batches)]
    assert second, "the second run committed no new batch"
