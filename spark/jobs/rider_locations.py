"""Seed 002's ksqlDB exercise in Spark SQL: where riders are, and who is near Mountain View.

    kafkalab spark submit spark/jobs/rider_locations.py -- --once

The ksqlDB statements of the seed, and what this job runs for each:

    CREATE STREAM rider_locations (profileId, latitude, longitude)    the view rider_locations
        WITH (kafka_topic='locations', value_format='json')           over the topic locations
    CREATE TABLE current_location AS SELECT profileId,                max_by(..., offset) per
        LATEST_BY_OFFSET(latitude) ... GROUP BY profileId             rider (complete mode)
    CREATE TABLE riders_near_mountain_view AS SELECT                  the same GROUP BY on each
        ROUND(GEO_DISTANCE(la, lo, 37.4133, -122.1162), -1) ...       new current_location
    SELECT * FROM rider_locations WHERE GEO_DISTANCE(...) <= 5        a push query to the
        EMIT CHANGES                                                  console

GEO_DISTANCE is a Python UDF here (great-circle distance in miles, as ksqlDB's), registered
for SQL. Each micro-batch writes the riders whose latest location is within 5 miles of
Mountain View to the topic `riders-near-mountain-view` (key: profileId, value: JSON with
the location and the distance; a rider farther away gets a tombstone, a null value, so
the topic reads as a table), and prints the distance buckets table.
"""

from __future__ import annotations

import argparse
import math

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import DataStreamWriter

MOUNTAIN_VIEW = (37.4133, -122.1162)
EARTH_RADIUS_MILES = 3961.0  # the radius ksqlDB's GEO_DISTANCE uses for miles
LOCATION_SCHEMA = T.StructType(
    [
        T.StructField("profileId", T.StringType()),
        T.StructField("latitude", T.DoubleType()),
        T.StructField("longitude", T.DoubleType()),
    ]
)


def geo_distance(lat1: float, lon1: float, lat2: float, lon2: float) -> float | None:
    """Great-circle distance in miles (haversine), like ksqlDB's GEO_DISTANCE(..., 'MI')."""
    if None in (lat1, lon1, lat2, lon2):
        return None
    # SQL literals such as 37.4133 arrive as Decimal: compute in floats.
    lat1, lon1, lat2, lon2 = (float(x) for x in (lat1, lon1, lat2, lon2))
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(math.sqrt(a))


def register(spark: SparkSession, bootstrap: str, topic: str) -> None:
    """CREATE STREAM rider_locations ... WITH (kafka_topic='locations'), and GEO_DISTANCE."""
    spark.udf.register("GEO_DISTANCE", geo_distance, T.DoubleType())
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
        .load()
    )
    located = raw.select(
        F.from_json(F.col("value").cast("string"), LOCATION_SCHEMA).alias("l"),
        "partition",
        "offset",
    ).select("l.*", "partition", "offset")
    located.createOrReplaceTempView("rider_locations")


def triggered(writer: DataStreamWriter, args: argparse.Namespace) -> DataStreamWriter:
    """--once: what is there, then stop; else a micro-batch every --every."""
    if args.once:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=args.every)


CURRENT_LOCATION = """
    SELECT profileId,
           max_by(latitude, struct(partition, offset))  AS la,
           max_by(longitude, struct(partition, offset)) AS lo
    FROM rider_locations
    WHERE profileId IS NOT NULL
    GROUP BY profileId
"""

RIDERS_NEAR_MOUNTAIN_VIEW = """
    SELECT ROUND(GEO_DISTANCE(la, lo, 37.4133, -122.1162), -1) AS distanceInMiles,
           collect_list(profileId) AS riders,
           count(*) AS count
    FROM current_location
    GROUP BY ROUND(GEO_DISTANCE(la, lo, 37.4133, -122.1162), -1)
    ORDER BY distanceInMiles
"""

# Every rider, so the sink reads as a table: riders farther than 5 miles get a tombstone
# (null value), which deletes them from it (as on a compacted topic).
WITHIN_5_MILES = """
    SELECT profileId AS key,
           CASE WHEN GEO_DISTANCE(la, lo, 37.4133, -122.1162) <= 5
                THEN to_json(named_struct('profileId', profileId, 'latitude', la,
                                          'longitude', lo, 'distanceInMiles',
                                          GEO_DISTANCE(la, lo, 37.4133, -122.1162)))
           END AS value
    FROM current_location
"""

PUSH_QUERY = """
    SELECT profileId, latitude, longitude FROM rider_locations
    WHERE GEO_DISTANCE(latitude, longitude, 37.4133, -122.1162) <= 5
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="latest rider locations near Mountain View")
    parser.add_argument("--bootstrap", help="default: spark.kafkalab.bootstrap.servers")
    parser.add_argument("--source", default="locations")
    parser.add_argument("--sink", default="riders-near-mountain-view")
    parser.add_argument("--every", default="5 seconds", help="micro-batch trigger interval")
    parser.add_argument("--once", action="store_true", help="process what is there, then stop")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("rider-locations").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    bootstrap = args.bootstrap or str(spark.conf.get("spark.kafkalab.bootstrap.servers"))
    register(spark, bootstrap, args.source)

    def publish(current: DataFrame, batch_id: int) -> None:
        """The tables of the seed, recomputed from the whole current_location each batch."""
        current.createOrReplaceTempView("current_location")
        session = current.sparkSession
        print(f"--- batch {batch_id}: riders_near_mountain_view", flush=True)
        session.sql(RIDERS_NEAR_MOUNTAIN_VIEW).show(truncate=False)
        (
            session.sql(WITHIN_5_MILES)
            .write.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", args.sink)
            .save()
        )

    current = spark.sql(CURRENT_LOCATION)
    tables = (
        triggered(current.writeStream.queryName("current_location").outputMode("complete"), args)
        .foreachBatch(publish)
        .start()
    )
    push = (
        triggered(spark.sql(PUSH_QUERY).writeStream.queryName("rider_locations_push"), args)
        .outputMode("append")
        .format("console")
        .option("truncate", False)
        .start()
    )
    print(
        f"rider-locations: {args.source} -> {args.sink} and the console,"
        f" {'once' if args.once else 'every ' + args.every}",
        flush=True,
    )
    tables.awaitTermination()
    push.awaitTermination()


if __name__ == "__main__":
    main()
