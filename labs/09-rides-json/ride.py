"""The course page's ride.py (seed 003): one row of the yellow taxi CSV.

`Ride(arr=row)` builds it from a CSV row (the producer), `Ride.from_dict(d)` from the
JSON the producer sent (the consumer). The JSON is `json.dumps(ride.__dict__, default=str)`:
these attribute names, numbers as numbers, times as 'YYYY-MM-DD HH:MM:SS'. They are the
fields lab 07's Spark job reads (RIDE_SCHEMA in spark/jobs/ride_counts.py), so the topic
this lab writes is the topic lab 07 reads.
"""

from datetime import datetime
from typing import Any

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


class Ride:
    def __init__(self, arr: list[Any]):
        self.vendor_id = arr[0]
        self.tpep_pickup_datetime = datetime.strptime(arr[1], TIME_FORMAT)
        self.tpep_dropoff_datetime = datetime.strptime(arr[2], TIME_FORMAT)
        self.passenger_count = int(arr[3])
        self.trip_distance = float(arr[4])
        self.rate_code_id = int(arr[5])
        self.store_and_fwd_flag = arr[6]
        self.pu_location_id = int(arr[7])
        self.do_location_id = int(arr[8])
        self.payment_type = arr[9]
        self.fare_amount = float(arr[10])
        self.extra = float(arr[11])
        self.mta_tax = float(arr[12])
        self.tip_amount = float(arr[13])
        self.tolls_amount = float(arr[14])
        self.improvement_surcharge = float(arr[15])
        self.total_amount = float(arr[16])
        self.congestion_surcharge = float(arr[17])

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Ride":
        """The Ride again, from its JSON."""
        return cls(
            arr=[
                d["vendor_id"],
                d["tpep_pickup_datetime"],
                d["tpep_dropoff_datetime"],
                d["passenger_count"],
                d["trip_distance"],
                d["rate_code_id"],
                d["store_and_fwd_flag"],
                d["pu_location_id"],
                d["do_location_id"],
                d["payment_type"],
                d["fare_amount"],
                d["extra"],
                d["mta_tax"],
                d["tip_amount"],
                d["tolls_amount"],
                d["improvement_surcharge"],
                d["total_amount"],
                d["congestion_surcharge"],
            ]
        )

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}: {self.__dict__}"
