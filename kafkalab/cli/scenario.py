"""`kafkalab scenario ...`: failover scenarios played against the cluster, with their verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from kafkalab import render
from kafkalab.cli.cluster import InventoryFile
from kafkalab.failover import runner, verdict
from kafkalab.failover import scenario as scenarios
from kafkalab.targets import resolve
from kafkalab.targets.statedir import one_command

app = typer.Typer(help="Failover scenarios with a no-data-loss verdict.", no_args_is_help=True)


@app.command("list")
def list_() -> None:
    """The shipped scenarios: what each breaks and what it expects."""
    render.table(
        "failover scenarios",
        ["name", "modes", "expects", "what happens"],
        [
            (s.name, ", ".join(s.modes), s.expect.summary(), s.description)
            for s in scenarios.catalog()
        ],
    )


@app.command()
def show(name: Annotated[str, typer.Argument(help="scenario name or .yml file")]) -> None:
    """Print a scenario's definition (topic, producer, fault schedule, expectation)."""
    typer.echo(scenarios.source(name), nl=False)


@app.command()
@one_command
def run(
    name: Annotated[str, typer.Argument(help="scenario name (`scenario list`) or a .yml file")],
    records: Annotated[
        int | None, typer.Option(help="send at least this many records (default: the scenario's)")
    ] = None,
    rate: Annotated[int | None, typer.Option(help="records per second while faults run")] = None,
    mode: Annotated[
        str | None, typer.Option(help="the mode this run needs: kraft or zookeeper")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="write the full report as JSON here")] = None,
    keep_topic: Annotated[bool, typer.Option(help="keep the scenario's topic afterwards")] = False,
    inventory: InventoryFile = None,
) -> None:
    """Run a scenario against the cluster and give the verdict (exit 1 when it fails)."""
    scenario = scenarios.load(name)
    result = runner.run(
        resolve.cluster(inventory),
        scenario,
        records=records,
        rate=rate,
        mode=mode,
        keep_topic=keep_topic,
        progress=render.step,
    )
    data = verdict.to_dict(result)
    render_result(data)
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(data, indent=2) + "\n")
        render.step(f"report: {report}")
    if not result.passed:
        raise typer.Exit(1)


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _copies(copies: list[dict[str, Any]]) -> str:
    return ", ".join(
        f"{c['partition']}:{c['offset']}"
        + (f" ({c['producer_id']}/{c['epoch']}/{c['sequence']})" if "epoch" in c else "")
        for c in copies
    )


def render_result(data: dict[str, Any]) -> None:
    """A run's report (verdict.to_dict) as the figures table, the lost and duplicated
    records, and the verdict line."""
    d, sends, rec = data["delivery"], data["sends"], data["recovery"]
    each = rec["each"]
    rows = [
        ("acked", d["acked"]),
        ("consumed", d["consumed"]),
        ("lost (acked, not consumed)", d["lost"]),
        ("duplicates (ids at 2+ offsets)", d["duplicates"]),
        ("out of order", d["out_of_order"]),
        ("sent / failed sends", f"{sends['sent']} / {sends['failed']}"),
        ("longest time without an ack", _secs(sends["max_ack_gap_s"])),
        ("every partition led again after", _secs(rec["leader_s"])),
        ("ISR full again after", _secs(rec["isr_s"])),
    ]
    if d.get("reread"):
        rows.append(("same offset handed twice (not in the log twice)", d["reread"]))
    if rec["controller_s"] is not None:
        rows.append(("new active controller after", _secs(rec["controller_s"])))
    if rec["isr_shrink_s"] is not None:
        rows.append(("ISR shrank after", _secs(rec["isr_shrink_s"])))
    for label in ("leader_s", "isr_s"):
        if len(each.get(label, [])) > 1:
            name = "leader" if label == "leader_s" else "ISR"
            rows.append(
                (f"{name} recovery, each fault", ", ".join(f"{v:.1f}" for v in each[label]))
            )
    rows.append(("cluster healthy after the schedule", _secs(rec["healthy_after_s"])))
    title = f"{data['scenario']} on {data['lab']} ({data['mode']}), {data['seconds']:.0f}s"
    render.table(title, ["figure", "value"], rows)
    if d["lost"]:
        render.table(
            f"lost records (first {min(d['lost'], 20)} of {d['lost']})",
            ["id", "partition", "offset acked", "key"],
            [(r["id"], r["partition"], r["offset"], r["key"]) for r in d["lost_records"][:20]],
        )
    if data["duplicates"]:
        dups = data["duplicates"]
        render.table(
            f"records in the log more than once (first {min(len(dups), 20)} of {d['duplicates']})",
            ["id", "copies: partition:offset (producer id/epoch/seq)", "why"],
            [(x["id"], _copies(x["copies"]), x["cause"]) for x in dups[:20]],
        )
    expect = data["expect"]
    if data["passed"]:
        verdict = (
            "no acknowledged record lost"
            if not d["lost"]
            else (f"{d['lost']} acknowledged records lost, which this scenario allows")
        )
        if d["duplicates"]:
            verdict += (
                f"; {render.plural(d['duplicates'], 'record')} written twice, which this"
                " scenario allows"
                f" (duplicates: {expect['duplicates']})"
            )
        render.ok(f"PASS (expected: loss {expect['loss']}): {verdict}")
    else:
        for reason in data["reasons"]:
            render.fail(reason)
        render.fail(f"FAIL (expected loss {expect['loss']}, duplicates {expect['duplicates']})")
