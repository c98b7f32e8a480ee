"""Lab 10's Kafka Streams application (rides per pickup location), run from the controller
side as the course page runs it from the learner's own computer (its IDE): the JVM runs
here, where the cluster is reached (inside the lab's network namespace, as `kafkalab
shell`), like the Spark driver of lab 07. The brokers only serve it.

The jar is kafkalab.artifacts.streams_app's, built once against the cluster's Kafka
version. Each run gets a fresh state directory, removed when it stops: the count's state
lives in its changelog topic, from which a restarted application restores it; resetting
the application (its topics and its group) makes it count from zero again.
"""

from __future__ import annotations

import shutil
import signal
import struct
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kafkalab.artifacts import streams_app
from kafkalab.artifacts.archive import unpacked
from kafkalab.artifacts.cache import Progress
from kafkalab.errors import KafkalabError
from kafkalab.kafka.topics import messages_to_end
from kafkalab.streaming.expected import RideRow
from kafkalab.targets import netns, resolve
from kafkalab.targets.cluster import InventoryCluster

APPLICATION_ID = "kafka_tutorial.kstream.count.plocation.v1"
INPUT = "rides"
OUTPUT = "rides-pulocation-count"
# groupByKey().count(): the store of the aggregation, node 1 of the topology (0 is the source)
CHANGELOG = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
JVM_OPTIONS = ["-Djava.net.preferIPv4Stack=true", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


@dataclass(frozen=True)
class StreamsTarget:
    bootstrap: str
    kafka_version: str


def locate(cluster: InventoryCluster | None = None) -> StreamsTarget:
    """The cluster's brokers and Kafka version (kafkalab.targets.resolve picks the cluster)."""
    cluster = cluster or resolve.cluster()
    topo = cluster.layout()
    if topo is None:
        raise KafkalabError(f"no lab here yet: {cluster.how_to_add('', 'a cluster')}")
    brokers = [m for m in topo.machines() if "kafka_broker" in m.groups]
    return StreamsTarget(",".join(f"{m.address}:9092" for m in brokers), topo.kafka_version)


@dataclass
class RunningApp:
    process: subprocess.Popen[bytes]
    state_dir: Path


def built(kafka_version: str, progress: Progress | None = None) -> Path:
    """The application's tarball from the cache, built there first when it is not. Inside a
    lab's network (`kafkalab shell`, a lab step) a build can only use what Maven already has
    cached: when that is not enough, the way out is one build from the host."""
    try:
        return streams_app.resolve_streams_app(kafka_version, progress=progress)
    except KafkalabError as exc:
        ns = netns.current()
        if ns is None:
            raise
        first = str(exc).splitlines()[0]
        raise KafkalabError(
            f"{first}; this runs inside the lab network {ns}, which has no way out to Maven"
            " Central: build the application once on the host with `sudo .venv/bin/kafkalab"
            " fetch --streams` (offline afterwards)"
        ) from None


def start(target: StreamsTarget, progress: Progress | None = None) -> RunningApp:
    """Build (once) and start the application against the cluster; its output goes to this
    terminal."""
    if shutil.which("java") is None:
        raise KafkalabError(
            "the Kafka Streams application needs java: sudo apt-get install"
            " openjdk-17-jdk-headless (scripts/setup.sh does)"
        )
    home = unpacked(built(target.kafka_version, progress))
    state_dir = Path(tempfile.mkdtemp(prefix="kafka-streams-"))
    cmd = [
        "java",
        *JVM_OPTIONS,
        "-cp",
        streams_app.classpath(home),
        streams_app.MAIN_CLASS,
        target.bootstrap,
        str(state_dir),
    ]
    return RunningApp(subprocess.Popen(cmd), state_dir)


def stop(app: RunningApp, timeout: float = 60) -> int:
    """Stop it as Ctrl-C does (KafkaStreams.close() in its shutdown hook); remove its state
    directory. Returns its exit code."""
    try:
        if app.process.poll() is None:
            app.process.send_signal(signal.SIGTERM)
            try:
                app.process.wait(timeout)
            except subprocess.TimeoutExpired:
                app.process.kill()
                app.process.wait()
    finally:
        shutil.rmtree(app.state_dir, ignore_errors=True)
    return app.process.returncode


def expected_counts(rides: Iterable[RideRow]) -> dict[str, int]:
    """Rides per pickup location (the `rides` key), as the application should count them."""
    return dict(Counter(str(r.pu_location_id) for r in rides))


def latest_counts(bootstrap: str, topic: str = OUTPUT, timeout: float = 30) -> dict[str, int]:
    """The last count written for each key of `topic` (Long values, 8 bytes big-endian)."""
    messages = messages_to_end(bootstrap, topic, "kafkalab-streams-check", timeout)
    return decode_counts((m.key(), m.value()) for m in messages)


def decode_counts(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, int]:
    """Latest Long value per key, in topic order; a value that is not 8 bytes is an error."""
    out: dict[str, int] = {}
    for key, value in records:
        if key is None or value is None:
            continue
        if len(value) != 8:
            raise KafkalabError(
                f"a value of {len(value)} bytes in {OUTPUT} (key {key!r}): not a Long count"
            )
        out[key.decode(errors="replace")] = struct.unpack(">q", value)[0]
    return out
