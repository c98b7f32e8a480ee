"""Java's default partitioner (kafkalab.kafka.partitioner), as Kafka's own tests and the lab
02 script have it."""

from __future__ import annotations

import subprocess
import sys

from kafkalab.kafka import partitioner
from kafkalab.labs import catalog


def test_murmur2_matches_kafka_and_the_lab_script():
    # seed 004: keys 1..5 over two partitions -> 2 and 5 in partition 0, 1, 3, 4 in partition 1
    assert [partitioner.java_partition(k, 2) for k in "12345"] == [1, 0, 1, 1, 0]
    # org.apache.kafka.common.utils.UtilsTest#testMurmur2
    cases = {
        "21": -973932308,
        "foobar": -790332482,
        "a-little-bit-long-string": -985981536,
        "a-little-bit-longer-string": -1486304829,
        "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    }
    for text, signed in cases.items():
        assert partitioner.murmur2(text.encode()) == signed & 0xFFFFFFFF
    script = catalog.find("02").path / "where.py"
    out = subprocess.run(
        [sys.executable, str(script), "--partitions", "3", "alice", "carol"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "alice: murmur2 = 0x74504595" in out and "mod 3 = partition 0" in out
    assert "carol" in out and "partition 2" in out.splitlines()[1]
