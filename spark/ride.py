"""The Ride of the course (seed 003): one row of the yellow taxi CSV, as the producer sends it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass
class Ride:
    vendor_id: str
    tpep_pickup_datetime: datetime
    tpep_dropoff_datetime: datetime
    passenger_count: int
    trip_distance: float
    rate_code_id: int
    store_and_fwd_flag: str
    pu_location_id: int
    do_location_id: int
    payment_type: str
    fare_amount: float
    extra: float
    mta_tax: float
    tip_amount: float
    tolls_amount: float
    improvement_surcharge: float
    total_amount: float
    congestion_surcharge: float

    @classmethod
    def from_row(cls, arr: list[str]) -> Ride:
        """A CSV row in the TLC column order (VendorID, tpep_pickup_datetime, ...)."""
        return cls(
            vendor_id=arr[0],
            tpep_pickup_datetime=datetime.strptime(arr[1], TIME_FORMAT),
            tpep_dropoff_datetime=datetime.strptime(arr[2], TIME_FORMAT),
            passenger_count=int(arr[3]),
            trip_distance=float(arr[4]),
            rate_code_id=int(arr[5]),
            store_and_fwd_flag=arr[6],
            pu_location_id=int(arr[7]),
            do_location_id=int(arr[8]),
            payment_type=arr[9],
            fare_amount=float(arr[10]),
            extra=float(arr[11]),
            mta_tax=float(arr[12]),
            tip_amount=float(arr[13]),
            tolls_amount=float(arr[14]),
            improvement_surcharge=float(arr[15]),
            total_amount=float(arr[16]),
            congestion_surcharge=float(arr[17]),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON value on the `rides` topic (times as 'YYYY-MM-DD HH:MM:SS')."""
        data = asdict(self)
        for key in ("tpep_pickup_datetime", "tpep_dropoff_datetime"):
            data[key] = data[key].strftime(TIME_FORMAT)
        return data
