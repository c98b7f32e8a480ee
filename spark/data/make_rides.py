"""Write rides.csv: a small, deterministic sample in the NYC TLC yellow taxi layout.

    python spark/data/make_rides.py            # rewrites spark/data/rides.csv

3000 rides picked up over 30 minutes in a dozen Manhattan/Brooklyn zones, in the
columns of the course's Ride class (seed 003). The file is in arrival order, not
strictly in pickup order: one ride in twenty arrives up to 40 s late, as real feeds
do, which the streaming job's 2-minute watermark absorbs.
"""

from __future__ import annotations

import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

HEADER = [
    "VendorID",
    "tpep_pickup_datetime",
    "tpep_dropoff_datetime",
    "passenger_count",
    "trip_distance",
    "RatecodeID",
    "store_and_fwd_flag",
    "PULocationID",
    "DOLocationID",
    "payment_type",
    "fare_amount",
    "extra",
    "mta_tax",
    "tip_amount",
    "tolls_amount",
    "improvement_surcharge",
    "total_amount",
    "congestion_surcharge",
]
ZONES = [236, 237, 161, 162, 186, 230, 48, 142, 170, 234, 79, 68]
WEIGHTS = [14, 13, 12, 10, 9, 9, 8, 7, 6, 5, 4, 3]
START = datetime(2020, 7, 1, 8, 0, 0)
RIDES = 3000
MINUTES = 30
FMT = "%Y-%m-%d %H:%M:%S"


def rides(seed: int = 6) -> list[list[str]]:
    rng = random.Random(seed)
    rows: list[tuple[float, list[str]]] = []
    for _ in range(RIDES):
        pickup = START + timedelta(seconds=rng.randrange(MINUTES * 60))
        minutes = rng.randint(4, 35)
        distance = round(rng.uniform(0.4, 9.5), 2)
        fare = round(2.5 + distance * 2.5 + minutes * 0.5, 2)
        tip = round(fare * rng.choice([0, 0, 0.1, 0.15, 0.2]), 2)
        payment = "1" if tip else rng.choice(["1", "2"])
        total = round(fare + 0.5 + 0.5 + tip + 0.3 + 2.5, 2)
        row = [
            str(rng.choice([1, 2])),
            pickup.strftime(FMT),
            (pickup + timedelta(minutes=minutes)).strftime(FMT),
            str(rng.choice([1, 1, 1, 2, 3])),
            f"{distance}",
            "1",
            "N",
            str(rng.choices(ZONES, WEIGHTS)[0]),
            str(rng.choice([*ZONES, 1, 132, 138])),
            payment,
            f"{fare}",
            "0.5",
            "0.5",
            f"{tip}",
            "0.0",
            "0.3",
            f"{total}",
            "2.5",
        ]
        late = rng.uniform(0, 40) if rng.random() < 0.05 else 0.0
        rows.append(((pickup - START).total_seconds() + late, row))
    rows.sort(key=lambda r: r[0])
    return [row for _, row in rows]


def main() -> None:
    out = Path(__file__).with_name("rides.csv")
    with out.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(rides())
    print(f"wrote {out} ({RIDES} rides)")


if __name__ == "__main__":
    main()
