"""What this host needs: `kafkalab fetch` fills the cache, `kafkalab doctor` says what the
host has and lacks."""

from __future__ import annotations

from typing import Annotated

import typer

from kafkalab import doctor as doctor_mod
from kafkalab import render, topology
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.artifacts import kafka_python as kafka_python_artifact
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.artifacts import streams_app
from kafkalab.cli.cluster import InventoryFile, TopologyFile
from kafkalab.targets import image


def fetch(
    topology_file: TopologyFile = None,
    with_: Annotated[
        str | None, typer.Option("--with", help="also the extra hosts' artifacts: spark,ksqldb")
    ] = None,
    streams: Annotated[
        bool, typer.Option("--streams", help="also build lab 10's Kafka Streams application")
    ] = False,
    mode: Annotated[
        str | None,
        typer.Option(help="the Kafka release of this mode's labs (kraft: 4.x, zookeeper: 3.9)"),
    ] = None,
) -> None:
    """Fill the cache (Kafka artifact, kafka-python wheel, base image, Spark) so `up` needs
    no network."""
    extra_hosts = with_.split(",") if with_ else None
    topo = topology.load(
        topology_file, {"extra_hosts": extra_hosts, "mode": mode}, required=bool(topology_file)
    )
    archive = kafka_artifact.resolve_kafka(topo.kafka_version, progress=render.step)
    render.ok(f"Kafka {topo.kafka_version}: {archive}")
    render.ok(f"kafka-python: {kafka_python_artifact.resolve_kafka_python(progress=render.step)}")
    render.ok(f"base image: {image.ensure_image(render.step)}")
    if "spark" in topo.extra_hosts:
        render.ok(f"Spark: {spark_artifact.resolve_spark(progress=render.step)}")
    if "ksqldb" in topo.extra_hosts:
        render.ok(f"ksqlDB: {ksqldb_artifact.resolve_ksqldb()}")
    if streams:
        app = streams_app.resolve_streams_app(topo.kafka_version, progress=render.step)
        render.ok(f"lab 10's Kafka Streams application: {app}")


def doctor(inventory: InventoryFile = None) -> None:
    """What this machine has and lacks, with the fix for each, and how the cluster's
    machines are."""
    checks = doctor_mod.run(inventory)
    render.table(
        "kafkalab doctor",
        ["check", "", "found", "fix"],
        [(c.name, "ok" if c.ok else "MISSING", c.detail, c.fix) for c in checks],
    )
    if not all(c.ok for c in checks):
        raise typer.Exit(1)
