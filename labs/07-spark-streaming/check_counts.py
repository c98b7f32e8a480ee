"""Compare the windowed counts in `rides-counts` with counts computed from rides.csv.

    .venv/bin/python labs/07-spark-streaming/check_counts.py

One record per (minute, pickup location) is expected, with the number of rides of the
CSV picked up there in that minute; a window written twice (the job read something
again) or missing fails the check.
"""

import sys

from kafkalab.streaming import expected as streaming
from kafkalab.streaming import spark


def main() -> None:
    sc = spark.locate()
    rides = streaming.read_rides()
    records = streaming.read_topic(sc.bootstrap, "rides-counts")
    report = streaming.compare_counts(
        streaming.expected_counts(rides), streaming.parse_counts(records)
    )
    print(f"rides-counts: {report.summary()}")
    busiest = sorted(streaming.parse_counts(records), key=lambda kv: -kv[1])[:3]
    for (start, location), count in busiest:
        print(f"  {start}  location {location}: {count} rides")
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
