"""Run lab 10's Kafka Streams application (app/: rides -> groupByKey().count() ->
rides-pulocation-count) against the lab's cluster, from `kafkalab shell`:

    .venv/bin/python labs/10-kafka-streams/count_app.py                    # until Ctrl-C
    .venv/bin/python labs/10-kafka-streams/count_app.py --until-caught-up  # stops by itself

The first run builds the application with Maven (kafka-streams of the cluster's Kafka
version, from Maven Central, into kafkalab's cache); later runs start it at once.
--until-caught-up watches rides-pulocation-count and stops the application the way
Ctrl-C does once every pickup location's latest count is the number of its rides in
`rides`.
"""

import argparse
import sys
import time

from kafkalab.errors import KafkalabError
from kafkalab.streaming import expected as streaming
from kafkalab.streaming import kstreams


def run(until_caught_up: bool, timeout: float) -> int:
    target = kstreams.locate()
    want = kstreams.expected_counts(streaming.rides_in_topic(target.bootstrap, kstreams.INPUT))
    if until_caught_up and not want:
        print("no rides in topic rides yet: run produce.py first")
        return 1
    app = kstreams.start(target, progress=lambda msg: print(msg, flush=True))
    started, seen = time.monotonic(), -1
    try:
        while not until_caught_up or time.monotonic() - started < timeout:
            if app.process.poll() is not None:
                print(f"the application ended by itself (exit {app.process.returncode})")
                return 1
            if until_caught_up:
                got = kstreams.latest_counts(target.bootstrap)
                done = sum(1 for k, n in want.items() if got.get(k) == n)
                if done != seen:
                    seen = done
                    print(f"[watch] {done} of {len(want)} pickup locations counted", flush=True)
                if got == want:
                    print(f"[watch] caught up after {time.monotonic() - started:.0f}s")
                    return 0
            time.sleep(2)
        print(f"[watch] not caught up after {timeout:.0f}s")
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        code = kstreams.stop(app)
        print(f"[watch] application stopped (exit {code}); its counts stay in the changelog")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until-caught-up", action="store_true")
    parser.add_argument("--timeout", type=float, default=300, help="with --until-caught-up (s)")
    args = parser.parse_args()
    try:
        sys.exit(run(args.until_caught_up, args.timeout))
    except KafkalabError as exc:
        sys.exit(str(exc))


if __name__ == "__main__":
    main()
