"""Print what one Kafka broker's start costs in CPU with each set of JVM options: seconds to
"Kafka Server started", CPU seconds by then, and CPU seconds 30 s later (JIT, GC, idle).

    .venv/bin/python -m bench.broker_jvm [--version 4.3.1] [--runs 2] [--after 30]

A single combined KRaft node (broker and controller) from the cached release, on loopback
ports 19092/19093, in a scratch folder; each run starts from new storage. The lab's brokers
run on 2 cores next to two more brokers, the tools and the tests: a broker start's CPU is the
larger part of a failover scenario's (`kafkalab scenario run`) and of every bring-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from kafkalab.artifacts import archive
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.paths import repo_root

HZ = os.sysconf("SC_CLK_TCK")
ROLE_DEFAULTS = repo_root() / "ansible" / "roles" / "kafka" / "defaults" / "main.yml"
# Kafka's default (None: KAFKA_JVM_PERFORMANCE_OPTS unset, so the release's kafka-run-class.sh
# chooses), the role's (kafka_jvm_performance_opts), and others tried.
VARIANTS: dict[str, str | None] = {
    "kafka default (G1, C2)": None,
    "role default (G1, C1)": yaml.safe_load(ROLE_DEFAULTS.read_text())[
        "kafka_jvm_performance_opts"
    ],
    "serial GC, C2": "-XX:+UseSerialGC -Djava.awt.headless=true",
    "serial GC, C1": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true",
}

PROPS = """process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:19093
listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093
advertised.listeners=PLAINTEXT://127.0.0.1:19092
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={data}
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def one_run(home: Path, opts: str | None, after: float) -> tuple[float, float, float]:
    work = Path(tempfile.mkdtemp(prefix="kafkalab-broker-jvm-"))
    try:
        props = work / "server.properties"
        props.write_text(PROPS.format(data=work / "data"))
        env = dict(os.environ, KAFKA_HEAP_OPTS="-Xmx512m -Xms512m", LOG_DIR=str(work / "logs"))
        env.pop("KAFKA_JVM_PERFORMANCE_OPTS", None)
        if opts is not None:
            env["KAFKA_JVM_PERFORMANCE_OPTS"] = opts
        subprocess.run(
            [home / "bin/kafka-storage.sh", "format", "-t", "MkU3OEVBNTcwNTJENDM2Qg", "-c", props],
            env=dict(env, KAFKA_JVM_PERFORMANCE_OPTS="-XX:TieredStopAtLevel=1"),
            check=True,
            capture_output=True,
        )
        out = work / "stdout.log"
        with out.open("w") as sink:
            start = time.monotonic()
            proc = subprocess.Popen(
                [home / "bin/kafka-server-start.sh", props],
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            while "Kafka Server started" not in out.read_text():
                if proc.poll() is not None:
                    raise SystemExit(f"broker exited:\n{out.read_text()[-2000:]}")
                time.sleep(0.05)
            started = time.monotonic() - start
            at_start = cpu_seconds(proc.pid)
            time.sleep(after)
            later = cpu_seconds(proc.pid)
        finally:
            proc.terminate()
            proc.wait(60)
        return started, at_start, later
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="4.3.1")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--after", type=float, default=30.0)
    args = ap.parse_args()
    # the release as kafkalab resolves it (official tarball or assembled), unpacked once in
    # the cache for controller-side tools; the bench writes only into its scratch folder
    home = archive.unpacked(kafka_artifact.resolve_kafka(args.version))
    scratch = Path(tempfile.mkdtemp(prefix="kafkalab-broker-jvm-home-"))
    try:
        print(
            f"Kafka {args.version}, one combined KRaft node, {os.cpu_count()} cores, "
            f"{args.runs} runs each (median)"
        )
        print(
            f"  {'JVM options':<28} {'started (s)':>11} {'CPU by then':>11} "
            f"{f'CPU +{args.after:.0f}s':>10}"
        )
        jsa = scratch / "broker.jsa"
        quick = VARIANTS["serial GC, C1"]
        one_run(home, f"{quick} -XX:ArchiveClassesAtExit={jsa} -Xlog:cds=off", 1.0)
        variants = dict(VARIANTS)
        if jsa.exists():  # a broker's classes, archived at the exit of one run
            variants["serial GC, C1, class archive"] = f"{quick} -XX:SharedArchiveFile={jsa}"
        for name, opts in variants.items():
            runs = sorted(one_run(home, opts, args.after) for _ in range(args.runs))
            mid = runs[len(runs) // 2]
            print(f"  {name:<28} {mid[0]:>11.1f} {mid[1]:>11.1f} {mid[2]:>10.1f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
