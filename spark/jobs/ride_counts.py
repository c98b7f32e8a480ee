"""Rides per pickup location in 1-minute tumbling windows (seed 003, Spark Structured Streaming).

    kafkalab spark submit spark/jobs/ride_counts.py            # runs until Ctrl-C
    kafkalab spark submit spark/jobs/ride_counts.py -- --once  # what is there, then stop

Reads `rides` (key: PULocationID, value: a Ride as JSON), counts rides per pickup location
and minute of pickup time, and writes each window once it is final to the console
(sink_console) and to the topic `rides-counts` (sink_kafka): key = PULocationID, value =
{"window_start", "window_end", "pu_location_id", "count"} as JSON.

Event time is the ride's pickup time. The watermark trails the latest pickup seen by
2 minutes: rides up to 2 minutes late still count, and a window is written (append
mode) once the watermark has passed its end, so each window appears exactly once.

Both queries keep a checkpoint (offsets read, windows still open) under
spark.sql.streaming.checkpointLocation (`kafkalab spark submit` sets it per job): stop the
job, start it again, and it goes on from where it was without reading anything twice.
"""

from __future__ import annotations

import argparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

RIDE_SCHEMA = T.StructType(
    [
        T.StructField("vendor_id", T.StringType()),
        T.StructField("tpep_pickup_datetime", T.StringType()),
        T.StructField("tpep_dropoff_datetime", T.StringType()),
        T.StructField("passenger_count", T.IntegerType()),
        T.StructField("trip_distance", T.DoubleType()),
        T.StructField("rate_code_id", T.IntegerType()),
        T.StructField("store_and_fwd_flag", T.StringType()),
        T.StructField("pu_location_id", T.IntegerType()),
        T.StructField("do_location_id", T.IntegerType()),
        T.StructField("payment_type", T.StringType()),
        T.StructField("fare_amount", T.DoubleType()),
        T.StructField("extra", T.DoubleType()),
        T.StructField("mta_tax", T.DoubleType()),
        T.StructField("tip_amount", T.DoubleType()),
        T.StructField("tolls_amount", T.DoubleType()),
        T.StructField("improvement_surcharge", T.DoubleType()),
        T.StructField("total_amount", T.DoubleType()),
        T.StructField("congestion_surcharge", T.DoubleType()),
    ]
)
TIME_FORMAT = "yyyy-MM-dd HH:mm:ss"


def read_rides(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The seed's df_kafka_raw, parsed: one row per ride with its pickup time."""
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
        .load()
    )
    rides = raw.select(F.from_json(F.col("value").cast("string"), RIDE_SCHEMA).alias("ride"))
    return rides.select(
        F.to_timestamp("ride.tpep_pickup_datetime", TIME_FORMAT).alias("pickup_time"),
        F.col("ride.pu_location_id").alias("pu_location_id"),
    ).where(F.col("pickup_time").isNotNull())


def windowed_counts(rides: DataFrame, window: str, watermark: str) -> DataFrame:
    counts = (
        rides.withWatermark("pickup_time", watermark)
        .groupBy(F.window("pickup_time", window), "pu_location_id")
        .count()
    )
    return counts.select(
        F.date_format("window.start", TIME_FORMAT).alias("window_start"),
        F.date_format("window.end", TIME_FORMAT).alias("window_end"),
        "pu_location_id",
        "count",
    )


def prepare_dataframe_to_kafka_sink(df: DataFrame, key_column: str) -> DataFrame:
    """The seed's helper, with a JSON value instead of comma-joined columns."""
    return df.select(
        F.col(key_column).cast("string").alias("key"),
        F.to_json(F.struct(*df.columns)).alias("value"),
    )


def triggered(writer: DataStreamWriter, every: str | None) -> DataStreamWriter:
    """A micro-batch every `every` (e.g. "5 seconds"), or None: what is there, then stop."""
    if every is None:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=every)


def sink_console(df: DataFrame, name: str, every: str | None) -> StreamingQuery:
    return (
        triggered(df.writeStream.queryName(name).outputMode("append"), every)
        .format("console")
        .option("truncate", False)
        .option("numRows", 50)
        .start()
    )


def sink_kafka(
    df: DataFrame, bootstrap: str, topic: str, name: str, every: str | None
) -> StreamingQuery:
    return (
        triggered(df.writeStream.queryName(name).outputMode("append"), every)
        .format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .start()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="rides per pickup location per minute")
    parser.add_argument("--bootstrap", help="default: spark.kafkalab.bootstrap.servers")
    parser.add_argument("--source", default="rides")
    parser.add_argument("--sink", default="rides-counts")
    parser.add_argument("--window", default="1 minute")
    parser.add_argument("--watermark", default="2 minutes")
    parser.add_argument("--every", default="5 seconds", help="micro-batch trigger interval")
    parser.add_argument("--once", action="store_true", help="process what is there, then stop")
    parser.add_argument("--no-console", action="store_true", help="only the Kafka sink")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("ride-counts").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    bootstrap = args.bootstrap or str(spark.conf.get("spark.kafkalab.bootstrap.servers"))
    every = None if args.once else args.every

    counts = windowed_counts(read_rides(spark, bootstrap, args.source), args.window, args.watermark)
    queries = [
        sink_kafka(
            prepare_dataframe_to_kafka_sink(counts, "pu_location_id"),
            bootstrap,
            args.sink,
            "rides_counts_kafka",
            every,
        )
    ]
    if not args.no_console:
        queries.append(sink_console(counts, "rides_counts_console", every))
    print(
        f"ride-counts: {args.source} -> {args.sink} and the console, {args.window} windows,"
        f" watermark {args.watermark}, {'once' if args.once else 'every ' + args.every}",
        flush=True,
    )
    for query in queries:
        query.awaitTermination()
    for query in queries:
        progress: dict[str, object] = query.lastProgress or {}
        print(
            f"{query.name}: stopped after batch {progress.get('batchId', '-')}",
            flush=True,
        )


if __name__ == "__main__":
    main()
