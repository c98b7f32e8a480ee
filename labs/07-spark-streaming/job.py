"""Run the ride-counts job (spark/jobs/ride_counts.py) on the lab's Spark cluster.

Run it from `kafkalab shell` (inside the lab network):

    .venv/bin/python labs/07-spark-streaming/job.py --reset            # forget its progress
    .venv/bin/python labs/07-spark-streaming/job.py --until-caught-up  # run, then Ctrl-C it
    .venv/bin/python labs/07-spark-streaming/job.py --once             # resume, catch up, stop

--until-caught-up runs the job as `kafkalab spark submit` does and watches `rides-counts`:
once every window that the rides written so far have closed is there, it stops the job
the way Ctrl-C does (as if you had killed it). Its checkpoint stays behind.
"""

import argparse
import sys
import time

from kafkalab.errors import KafkalabError
from kafkalab.streaming import expected as streaming
from kafkalab.streaming import spark

JOB = "ride_counts"


def until_caught_up(timeout: float) -> int:
    sc = spark.locate()
    rides = streaming.rides_in_topic(sc.bootstrap, "rides")
    if not rides:
        print("no rides in topic rides yet: run produce.py first")
        return 1
    closed = streaming.expected_counts(rides, closed_before=streaming.watermark_after(rides))
    print(
        f"{len(rides)} rides in topic rides; the watermark will close {len(closed)} windows",
        flush=True,
    )
    job = spark.start(JOB, ["--every", "5 seconds"], cluster=sc.cluster)
    started, seen = time.monotonic(), -1
    try:
        while time.monotonic() - started < timeout:
            if job.poll() is not None:
                print(f"the job ended by itself (exit {job.returncode})")
                return 1
            report = streaming.compare_counts(
                closed, streaming.parse_counts(streaming.read_topic(sc.bootstrap, "rides-counts"))
            )
            if report.received != seen:
                seen = report.received
                print(f"[watch] {seen} of {len(closed)} windows in rides-counts", flush=True)
            if report.ok:
                print(f"[watch] caught up after {time.monotonic() - started:.0f}s: Ctrl-C the job")
                return 0
            time.sleep(3)
        print(f"[watch] not caught up after {timeout:.0f}s")
        return 1
    finally:
        spark.stop(job)
        print("[watch] job stopped; its checkpoint is kept", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--reset", action="store_true", help="delete the job's checkpoint")
    what.add_argument("--until-caught-up", action="store_true", help="run, watch, stop")
    what.add_argument("--once", action="store_true", help="process what is there, then stop")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    try:
        if args.reset:
            for where in spark.reset(JOB):
                print(f"deleted {where}")
            return
        if args.until_caught_up:
            sys.exit(until_caught_up(args.timeout))
        sys.exit(spark.submit(JOB, ["--once"], stop_after=args.timeout))
    except KafkalabError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
