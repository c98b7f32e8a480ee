"""The cluster's verbs: `kafkalab up`, `down`, `status`, `exec`, `shell`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kafkalab import render, topology
from kafkalab import status as status_mod
from kafkalab.artifacts import archive
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.errors import KafkalabError
from kafkalab.streaming import spark as spark_mod
from kafkalab.targets import hosts, netns, resolve
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.targets.statedir import one_command

TopologyFile = Annotated[
    Path | None, typer.Option("--topology", "-t", help="topology file (default: cluster.yml)")
]
HostsInventory = Annotated[
    Path | None,
    typer.Option(
        "--inventory",
        "-i",
        help="your own hosts (a copy of inventory/example.yml): provision them, boot nothing",
    ),
]
# Every command that talks to a cluster takes it as Ansible users expect; without it the
# Vagrant lab that is up in this folder, else the embedded cluster (targets.resolve).
InventoryFile = Annotated[
    Path | None,
    typer.Option(
        "--inventory",
        "-i",
        help="the cluster's Ansible inventory (default: the Vagrant lab up in this folder, "
        "else the embedded cluster)",
    ),
]


def up(
    mode: Annotated[str | None, typer.Option(help="kraft or zookeeper")] = None,
    brokers: Annotated[int | None, typer.Option(help="number of brokers")] = None,
    controllers: Annotated[int | None, typer.Option(help="dedicated KRaft controllers")] = None,
    with_: Annotated[
        str | None, typer.Option("--with", help="extra hosts, comma separated: spark,ksqldb")
    ] = None,
    kafka_version: Annotated[
        str | None,
        typer.Option(
            "--kafka-version",
            help="Kafka release, e.g. 3.9.2; a running KRaft lab rolls to a newer one node by node",
        ),
    ] = None,
    topology_file: TopologyFile = None,
    provision: Annotated[
        bool, typer.Option(help="run ansible/site.yml (--no-provision: boot machines only)")
    ] = True,
    inventory_file: HostsInventory = None,
) -> None:
    """Boot the cluster's machines and provision them (again: changes nothing); with -i,
    provision your own hosts."""
    if inventory_file is not None:
        given = {
            "--mode": mode,
            "--brokers": brokers,
            "--controllers": controllers,
            "--with": with_,
            "--kafka-version": kafka_version,
            "--topology": topology_file,
            "--no-provision": None if provision else True,
        }
        for flag, value in given.items():
            if value is not None:
                raise KafkalabError(
                    f"{flag} does not go with -i: the inventory says what your hosts run "
                    "(its groups and kafka_mode)"
                )
        _up_hosts(inventory_file)
        return
    if provision and (inside := netns.current()) is not None:
        # From a lab's network, the forwarder (started after provisioning) would listen on
        # that network's 127.0.0.1: up is the host's to run. Booting machines only
        # (--no-provision, as a molecule scenario does from its own namespace) starts none.
        raise KafkalabError(
            f"kafkalab up runs on the host: this shell is inside lab network {inside} "
            "(kafkalab shell): leave it with `exit` and run kafkalab up again"
        )
    _up_embedded(mode, brokers, controllers, with_, kafka_version, topology_file, provision)


def _up_hosts(path: Path) -> None:
    done = hosts.up(path, render.step)
    listing = done.listing
    brokers = listing.hosts_of("kafka_broker")
    mode = listing.hostvars[brokers[0]]["kafka_mode"]
    render.ok(
        f"cluster up on your hosts ({mode}, {len(brokers)} brokers) in {done.seconds:.0f}s, "
        f"changed={done.changed}"
    )
    rows = [
        (
            host,
            hv.get("kafkalab_address"),
            "+".join(r.removeprefix("kafka_") for r in listing.groups_of(host)),
            hv.get("kafka_node_id", ""),
        )
        for host, hv in listing.hostvars.items()
    ]
    render.table(f"hosts of {path}", ["host", "address", "roles", "node id"], rows)


@one_command
def _up_embedded(
    mode: str | None,
    brokers: int | None,
    controllers: int | None,
    with_: str | None,
    kafka_version: str | None,
    topology_file: Path | None,
    provision: bool,
) -> None:
    cluster = EmbeddedCluster()
    saved = cluster.topology()
    overrides = {
        "mode": mode,
        "brokers": brokers,
        "controllers": controllers,
        "extra_hosts": with_.split(",") if with_ else None,
        "kafka_version": kafka_version,
    }
    # An existing cluster keeps its settings unless a flag (or an explicit file) changes one,
    # and always its extra hosts (`up` adds machines, only `down --purge` removes them).
    required = topology_file is not None
    topo = topology.load(topology_file, overrides, existing=saved, required=required)
    result = cluster.up(topo, render.step, provision_hosts=provision)
    if not provision:
        render.ok(f"machines up, inventory: {cluster.inventory_path}")
        return
    render.ok(
        f"cluster up ({topo.mode}, {topo.brokers} brokers) in {result.seconds:.0f}s, "
        f"changed={result.changed}"
    )
    status()


def down(
    purge: Annotated[bool, typer.Option(help="also delete machines, data and the network")] = False,
    inventory_file: Annotated[
        Path | None,
        typer.Option("--inventory", "-i", help="refused: kafkalab stops only what it made"),
    ] = None,
) -> None:
    """Stop the machines (data kept), or remove everything with --purge."""
    if inventory_file is not None:
        raise hosts.refuse_down(inventory_file, EmbeddedCluster().inventory_path)
    _down_embedded(purge)


@one_command
def _down_embedded(purge: bool) -> None:
    cluster = EmbeddedCluster()
    cluster.down(purge, render.step)
    if purge:
        # A new cluster's topics start at offset 0: old Spark checkpoints would skip records.
        spark_mod.forget_checkpoints(cluster.ns)
    render.ok("lab removed" if purge else "machines stopped (data kept; `kafkalab up` resumes)")


def status(
    json_: Annotated[bool, typer.Option("--json", help="machine-readable")] = False,
    inventory: InventoryFile = None,
) -> None:
    """Which target, machines, services, node ids and who leads."""
    data = status_mod.collect(resolve.cluster(inventory))
    if json_:
        render.as_json(data)
        return
    if data["lab"] is None:
        render.step(f"no lab here yet ({_target(data['target'])}): run `kafkalab up`")
        return
    saved = data["lab"]
    rows = [
        (
            m["host"],
            m["address"],
            "+".join(r.removeprefix("kafka_") for r in m["roles"]),
            _machine_cell(m),
            ", ".join(f"{k}: {v}" for k, v in m["services"].items()),
            m["node_id"],
            m["leader"],
        )
        for m in data["machines"]
    ]
    render.table(
        f"{_target(data['target'])} ({saved['mode']})",
        ["host", "address", "roles", "machine", "services", "node id", "leads"],
        rows,
    )
    for line in forwarded_lines(saved.get("forwarded", {})):
        render.step(line)


def forwarded_lines(forwarded: dict[str, str]) -> list[str]:
    """What a client on this host reaches (the embedded lab's forwarded 127.0.0.1 ports)."""
    brokers = [url for name, url in forwarded.items() if name.startswith("kafka")]
    others = [f"{name} {url}" for name, url in forwarded.items() if not name.startswith("kafka")]
    lines = [f"bootstrap {brokers[0]} (brokers: {','.join(brokers)})"] if brokers else []
    return [f"from this host: {line}" for line in lines + others]


def _target(t: dict[str, Any]) -> str:
    """Which target is in use, in words: `embedded cluster kafkalab` (its namespace),
    `Vagrant lab in <folder>`, `hosts of <inventory>`."""
    if t["target"] == "embedded":
        return f"embedded cluster {t['where']} (network namespace {t['netns']})"
    inside = f", from network namespace {t['netns']}" if t["netns"] else ""
    if t["target"] == "vagrant":
        return f"Vagrant lab in {t['where']}{inside}"
    return f"hosts of {t['where']}{inside}"


def _machine_cell(m: dict[str, Any]) -> str:
    """`running`, or what a bad boot left: `running, boot degraded (failed: x.service)`.
    A cluster service that failed (a fault, a crash) shows under services, not here."""
    booted = m["boot"]
    if booted.get("ok", True) or booted.get("state") == "stopped":
        return str(m["machine"])
    failed = f" (failed: {', '.join(booted['failed_units'])})" if booted["failed_units"] else ""
    return f"{m['machine']}, boot {booted['state']}{failed}"


def exec_(
    host: Annotated[str, typer.Argument(help="machine name, e.g. kafka1")],
    command: Annotated[list[str], typer.Argument(help="command after --")],
    inventory: InventoryFile = None,
) -> None:
    """Run a command on a machine (Kafka tools are on its PATH)."""
    proc = subprocess.run(resolve.cluster(inventory).login_command(host, command))
    raise typer.Exit(proc.returncode)


def shell(
    host: Annotated[
        str | None, typer.Argument(help="a machine; default: the controller side")
    ] = None,
    inventory: InventoryFile = None,
) -> None:
    """A shell on the controller side where the cluster is reached (in an embedded cluster's
    network kafka1:9092 resolves; $KAFKALAB_BOOTSTRAP everywhere) or on a host."""
    cluster = resolve.cluster(inventory)
    if host:
        argv = cluster.ssh_command(host, ["bash", "-l"], tty=True)
        os.execvp(argv[0], argv)
    topo = cluster.layout()
    if topo is None:
        raise KafkalabError("no lab here yet: run `kafkalab up`")
    # The same Kafka tools as on the machines, and the venv's Python (confluent-kafka).
    kafka_bin = archive.unpacked(kafka_artifact.resolve_kafka(topo.kafka_version)) / "bin"
    path = f"{Path(sys.executable).parent}:{kafka_bin}:{os.environ.get('PATH', '')}"
    env = dict(os.environ, **cluster.env(), PATH=path, PS1=f"(kafkalab {cluster.name}) \\w \\$ ")
    brokers = [m.address for m in topo.machines() if "kafka_broker" in m.groups]
    env["KAFKALAB_BOOTSTRAP"] = ",".join(f"{a}:9092" for a in brokers)
    env["LOG_DIR"] = str(cluster.state / "logs" / "tools")
    try_this = "kafka-topics.sh --bootstrap-server $KAFKALAB_BOOTSTRAP --list"
    render.step(f"{cluster.kind} cluster {cluster.where}: try {try_this}")
    argv = cluster.wrap(["bash", "--norc", "-i"])
    os.execvpe(argv[0], argv, env)
