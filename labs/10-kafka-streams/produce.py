"""Replay the rides of rides.csv into the `rides` topic: spark/producer.py, from the lab folder.

Run it from `kafkalab shell` (inside the lab network, where kafka1 resolves):

    .venv/bin/python labs/10-kafka-streams/produce.py

Every option of spark/producer.py works here (--help). Lab 07 and lab 09 write `rides` the
same way: key = PULocationID, value = the ride as JSON.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark"))

from producer import main

if __name__ == "__main__":
    main()
