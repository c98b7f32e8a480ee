"""Print how often a broker's AlterPartition channel cannot be rebuilt after two of its
channels to the controller rebuilt theirs at once: the Kafka bug behind lab 16's stuck ISR
(labs/16-migration-rollback/README.md, step 4), shown with Kafka's own client library alone.

    .venv/bin/python -m bench.selector_race [--version 3.9.2] [--rounds 3000]

Compiles bench/selector_race/SelectorRace.java against the cached Kafka release's jars
(`javac` from a JDK on this host) and runs it; each round is a fresh metrics registry.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time

from kafkalab.artifacts import archive
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.paths import repo_root

SOURCE = repo_root() / "bench" / "selector_race" / "SelectorRace.java"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="3.9.2", help="Kafka release whose jars to use")
    parser.add_argument("--rounds", type=int, default=3000)
    args = parser.parse_args()
    if shutil.which("javac") is None:
        sys.exit("javac not found: this benchmark compiles Java (apt install default-jdk-headless)")
    libs = archive.unpacked(kafka_artifact.resolve_kafka(args.version)) / "libs"
    classpath = ":".join(str(p) for p in sorted(libs.glob("*.jar")))
    with tempfile.TemporaryDirectory(prefix="kafkalab-selector-race-") as work:
        subprocess.run(["javac", "-d", work, "-cp", classpath, SOURCE], check=True)
        started = time.monotonic()
        run = subprocess.run(
            ["java", "-cp", f"{classpath}:{work}", "SelectorRace", str(args.rounds)],
            check=True,
            capture_output=True,
            text=True,
        )
    failed, rounds, concurrent = map(int, run.stdout.splitlines()[0].split())
    print(
        f"Kafka {args.version}: the second rebuild of the alter-partition channel failed in "
        f"{failed} of {rounds} rounds, the concurrent rebuild itself in {concurrent} "
        f"({time.monotonic() - started:.0f} s)"
    )
    if failed:
        print("  " + run.stdout.splitlines()[1][:160])


if __name__ == "__main__":
    main()
