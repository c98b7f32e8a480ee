"""Replay rides into the `rides` topic: spark/producer.py, from the lab folder.

Run it from `kafkalab shell` (inside the lab network, where kafka1 resolves):

    .venv/bin/python labs/07-spark-streaming/produce.py --first 1500 --rate 200
    .venv/bin/python labs/07-spark-streaming/produce.py --skip 1500 --end-marker

Every option of spark/producer.py works here (--help).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark"))

from producer import main

if __name__ == "__main__":
    main()
