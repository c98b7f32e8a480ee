"""The kafkalab command line: parse, call one function, render."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kafkalab import doctor as doctor_mod
from kafkalab import render, topology
from kafkalab import status as status_mod
from kafkalab.artifacts import archive
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.commands import box as box_cmd
from kafkalab.commands import fault as fault_cmd
from kafkalab.commands import lab as lab_cmd
from kafkalab.commands import spark as spark_cmd
from kafkalab.errors import KafkalabError
from kafkalab.streaming import spark as spark_mod
from kafkalab.targets import image
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.targets.statedir import one_command

app = typer.Typer(
    help="A real Apache Kafka cluster to learn, teach and test on.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

app.add_typer(lab_cmd.app, name="lab")
app.add_typer(fault_cmd.fault_app, name="fault")
app.add_typer(fault_cmd.scenario_app, name="scenario")
app.add_typer(spark_cmd.app, name="spark")
app.add_typer(box_cmd.app, name="box")

TopologyFile = Annotated[
    Path | None, typer.Option("--topology", "-t", help="topology file (default: cluster.yml)")
]


@app.command()
@one_command
def up(
    mode: Annotated[str | None, typer.Option(help="kraft or zookeeper")] = None,
    brokers: Annotated[int | None, typer.Option(help="number of brokers")] = None,
    controllers: Annotated[int | None, typer.Option(help="dedicated KRaft controllers")] = None,
    with_: Annotated[
        str | None, typer.Option("--with", help="extra hosts, comma separated: spark,ksqldb")
    ] = None,
    topology_file: TopologyFile = None,
    provision: Annotated[
        bool, typer.Option(help="run ansible/site.yml (--no-provision: boot machines only)")
    ] = True,
) -> None:
    """Boot the lab machines and provision the cluster (again: changes nothing)."""
    lab = EmbeddedCluster()
    saved = lab.topology()
    overrides = {
        "mode": mode,
        "brokers": brokers,
        "controllers": controllers,
        "extra_hosts": with_.split(",") if with_ else None,
    }
    # An existing lab keeps its settings unless a flag (or an explicit file) changes one,
    # and always its extra hosts (`up` adds machines, only `down --purge` removes them).
    required = topology_file is not None
    topo = topology.load(topology_file, overrides, existing=saved, required=required)
    result = lab.up(topo, render.step, provision_hosts=provision)
    if not provision:
        render.ok(f"machines up, inventory: {lab.inventory_path}")
        return
    render.ok(
        f"cluster up ({topo.mode}, {topo.brokers} brokers) in {result.seconds:.0f}s, "
        f"changed={result.changed}"
    )
    status()


@app.command()
@one_command
def down(
    purge: Annotated[bool, typer.Option(help="also delete machines, data and the network")] = False,
) -> None:
    """Stop the machines (data kept), or remove everything with --purge."""
    lab = EmbeddedCluster()
    lab.down(purge, render.step)
    if purge:
        # A new lab's topics start at offset 0: old Spark checkpoints would skip records.
        spark_mod.forget_checkpoints(lab.ns)
    render.ok("lab removed" if purge else "machines stopped (data kept; `kafkalab up` resumes)")


@app.command()
def status(json_: Annotated[bool, typer.Option("--json", help="machine-readable")] = False) -> None:
    """Machines, services, node ids and who leads."""
    data = status_mod.collect(EmbeddedCluster())
    if json_:
        render.as_json(data)
        return
    if data["lab"] is None:
        render.step("no lab here yet: run `kafkalab up`")
        return
    lab = data["lab"]
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
        f"lab {lab['netns']} ({lab['mode']})",
        ["host", "address", "roles", "machine", "services", "node id", "leads"],
        rows,
    )


def _machine_cell(m: dict[str, Any]) -> str:
    """`running`, or what its boot left: `running, boot degraded (failed: x.service)`."""
    booted = m["boot"]
    if booted["state"] in ("running", "stopped") and not booted["failed_units"]:
        return str(m["machine"])
    failed = f" (failed: {', '.join(booted['failed_units'])})" if booted["failed_units"] else ""
    return f"{m['machine']}, boot {booted['state']}{failed}"


@app.command(name="exec", context_settings={"allow_extra_args": True})
def exec_(
    host: Annotated[str, typer.Argument(help="machine name, e.g. kafka1")],
    command: Annotated[list[str], typer.Argument(help="command after --")],
) -> None:
    """Run a command on a machine (Kafka tools are on its PATH)."""
    proc = subprocess.run(EmbeddedCluster().login_command(host, command))
    raise typer.Exit(proc.returncode)


@app.command()
def shell(
    host: Annotated[
        str | None, typer.Argument(help="a machine; default: the controller side")
    ] = None,
) -> None:
    """A shell on the controller side of the lab network (kafka1:9092 resolves), or on a host."""
    lab = EmbeddedCluster()
    if host:
        os.execvp("ip", lab.ssh_command(host, ["bash", "-l"], tty=True))
    topo = lab.topology()
    if topo is None:
        raise KafkalabError("no lab here yet: run `kafkalab up`")
    # The same Kafka tools as on the machines, and the venv's Python (confluent-kafka).
    kafka_bin = archive.unpacked(kafka_artifact.resolve_kafka(topo.kafka_version)) / "bin"
    path = f"{Path(sys.executable).parent}:{kafka_bin}:{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path, PS1=f"(kafkalab {lab.ns}) \\w \\$ ")
    env["LOG_DIR"] = str(lab.state / "logs" / "tools")
    render.step(f"lab network {lab.ns}: try kafka-topics.sh --bootstrap-server kafka1:9092 --list")
    os.execvpe("ip", ["ip", "netns", "exec", lab.ns, "bash", "--norc", "-i"], env)


@app.command()
def fetch(
    topology_file: TopologyFile = None,
    with_: Annotated[
        str | None, typer.Option("--with", help="also the extra hosts' artifacts: spark,ksqldb")
    ] = None,
) -> None:
    """Fill the cache (Kafka artifact, base image, Spark) so `up` needs no network."""
    extra_hosts = with_.split(",") if with_ else None
    topo = topology.load(topology_file, {"extra_hosts": extra_hosts}, required=bool(topology_file))
    archive = kafka_artifact.resolve_kafka(topo.kafka_version, progress=render.step)
    render.ok(f"Kafka {topo.kafka_version}: {archive}")
    render.ok(f"base image: {image.ensure_image(render.step)}")
    if "spark" in topo.extra_hosts:
        render.ok(f"Spark: {spark_artifact.resolve_spark(progress=render.step)}")
    if "ksqldb" in topo.extra_hosts:
        render.ok(f"ksqlDB: {ksqldb_artifact.resolve_ksqldb()}")


@app.command()
def doctor() -> None:
    """What this machine has and lacks, with the fix for each."""
    checks = doctor_mod.run()
    render.table(
        "kafkalab doctor",
        ["check", "", "found", "fix"],
        [(c.name, "ok" if c.ok else "MISSING", c.detail, c.fix) for c in checks],
    )
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


class Interrupted(Exception):
    """Ctrl-C, raised as our own exception: typer turns KeyboardInterrupt into a silent exit."""


def _interrupt(_signum: int, _frame: object) -> None:
    raise Interrupted


def main() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    try:
        app()
    except KafkalabError as exc:
        render.error(str(exc))
        sys.exit(2)
    except (Interrupted, KeyboardInterrupt):
        # Machines run in sessions of their own: Ctrl-C stops kafkalab, not them, and the
        # lab was saved before they booted, so `down` knows every one.
        render.error("interrupted; machines that were started keep running: `kafkalab down`")
        sys.exit(130)
