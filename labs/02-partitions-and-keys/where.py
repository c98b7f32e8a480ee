"""Which partition a key lands in, and why: the Java producer's default partitioner.

kafka-console-producer.sh (and every Java producer) hashes the key bytes with murmur2
and takes the result modulo the number of partitions. Same key, same partition: that is
why the records of one key stay in order. Add partitions and the modulo changes, so new
records of a key may land somewhere else.

    .venv/bin/python labs/02-partitions-and-keys/where.py --partitions 3 alice bob carol

(librdkafka, hence confluent-kafka, defaults to another hash, crc32: set
"partitioner": "murmur2_random" to agree with the Java clients.)
"""

import argparse


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as unsigned 32 bits."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    whole = len(data) // 4 * 4
    for i in range(0, whole, 4):  # four bytes at a time, little-endian
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = data[whole:]  # the last 1-3 bytes
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def partition(key: str, partitions: int) -> int:
    # Java's Utils.toPositive drops the sign bit before the modulo.
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the topic")
    parser.add_argument("keys", nargs="+", help="message keys")
    args = parser.parse_args()
    for key in args.keys:
        h = murmur2(key.encode())
        print(
            f"{key:>10}: murmur2 = {h:#010x}, positive = {h & 0x7FFFFFFF:>10}, "
            f"mod {args.partitions} = partition {partition(key, args.partitions)}"
        )


if __name__ == "__main__":
    main()
