"""The producer of the labs that change a running cluster under it (14, and 15 and 16 by a
link to this file): lab 05's (numbered records, acks=all, every acknowledged one noted in
acked.txt of the work dir of the lab whose folder you run it from), to the topic payments,
until you press Ctrl-C.

Run it from `kafkalab shell` (inside the lab network) while the cluster changes:

    .venv/bin/python labs/14-rolling-upgrade/producer.py
"""

import runpy
import sys
from pathlib import Path

sys.argv[1:1] = ["--topic", "payments", "--seconds", "0"]  # your own options come after
runpy.run_path(
    str(Path(__file__).resolve().parent.parent / "05-broker-failover" / "producer.py"),
    run_name="__main__",
)
