"""`kafkalab spark ...`: fill the Spark cache, submit jobs, see the cluster, check the counts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from kafkalab import render
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.cli.cluster import InventoryFile
from kafkalab.errors import KafkalabError
from kafkalab.streaming import expected as streaming
from kafkalab.streaming import spark as spark_mod
from kafkalab.targets import resolve
from kafkalab.targets.statedir import one_command

app = typer.Typer(
    help="Spark on the cluster: fetch the artifact, submit PySpark jobs, status, checks.",
    no_args_is_help=True,
)


@app.command()
def fetch(
    version: Annotated[str, typer.Option(help="Spark version")] = spark_artifact.SPARK_VERSION,
) -> None:
    """Build the Spark tarball (with the Kafka connector) into the cache, once."""
    started = time.monotonic()
    tgz = spark_artifact.resolve_spark(version, progress=render.step)
    render.ok(
        f"Spark {version}: {tgz} ({tgz.stat().st_size / 1e6:.0f} MB, "
        f"{time.monotonic() - started:.0f}s)"
    )
    render.step(f"ksqlDB: {ksqldb_artifact.status()}")


@app.command(context_settings={"allow_extra_args": True})
def submit(
    job: Annotated[str, typer.Argument(help="spark/jobs/<job>.py or its name, e.g. ride_counts")],
    args: Annotated[
        list[str] | None, typer.Argument(help="the job's own options, after --")
    ] = None,
    stop_after: Annotated[
        float | None, typer.Option(help="stop the job like Ctrl-C after this many seconds")
    ] = None,
    conf: Annotated[
        list[str] | None, typer.Option("--conf", help="extra Spark setting key=value")
    ] = None,
    inventory: InventoryFile = None,
) -> None:
    """Run a PySpark job on the cluster's Spark hosts (driver here, executors on the workers)."""
    settings = {}
    for item in conf or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise KafkalabError(f"--conf takes key=value (got {item!r})")
        settings[key] = value
    sc = spark_mod.locate(resolve.cluster(inventory))
    path = spark_mod.resolve_job(job)
    render.step(
        f"submitting {path.name} to {sc.master_url} (driver here, {sc.driver_address}; checkpoint"
        f" {sc.checkpoint(spark_mod.job_name(path))}); Ctrl-C stops it"
    )
    code = spark_mod.submit(
        path, args or [], cluster=sc.cluster, conf=settings, stop_after=stop_after
    )
    if stop_after is not None and code != 0:
        render.ok(f"stopped {path.name} after {stop_after:g}s (its checkpoint is kept)")
        return
    if code != 0:
        raise typer.Exit(code)


@app.command()
def status(inventory: InventoryFile = None) -> None:
    """The master, its workers and the running applications (from the master's /json)."""
    sc = spark_mod.locate(resolve.cluster(inventory))
    state = spark_mod.master_state(sc)
    workers = state.get("workers") or []
    apps = state.get("activeapps") or []
    render.table(
        f"Spark master {sc.master_url} ({state.get('status')}), web UI {sc.webui}",
        ["worker", "state", "cores", "memory MB", "used MB"],
        [
            (w.get("host"), w.get("state"), w.get("cores"), w.get("memory"), w.get("memoryused"))
            for w in workers
            if isinstance(w, dict)
        ],
    )
    for a in apps:
        if isinstance(a, dict):
            render.step(f"running: {a.get('name')} ({a.get('id')}), {a.get('cores')} cores")


@app.command()
@one_command
def reset(
    job: Annotated[str, typer.Argument(help="the job whose checkpoint to delete")],
    inventory: InventoryFile = None,
) -> None:
    """Forget a job's progress (its checkpoint here and on the workers)."""
    for where in spark_mod.reset(job, resolve.cluster(inventory)):
        render.ok(f"deleted {where}")


@app.command("check-counts")
def check_counts(
    topic: Annotated[str, typer.Option(help="the job's sink")] = "rides-counts",
    csv: Annotated[
        Path, typer.Option(help="the rides the producer replayed")
    ] = streaming.RIDES_CSV,
    inventory: InventoryFile = None,
) -> None:
    """Compare the windowed counts in the sink with counts computed from the CSV."""
    sc = spark_mod.locate(resolve.cluster(inventory))
    rides = streaming.read_rides(csv)
    records = sc.cluster.run(lambda: streaming.read_topic(sc.bootstrap, topic))
    report = streaming.compare_counts(
        streaming.expected_counts(rides), streaming.parse_counts(records)
    )
    if report.ok:
        render.ok(f"{topic}: {report.summary()}")
        return
    render.fail(f"{topic}: {report.summary()}")
    raise typer.Exit(1)
