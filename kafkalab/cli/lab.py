"""`kafkalab lab ...`: list, start, check, solve, reset labs (see labs/)."""

from typing import Annotated

import typer

from kafkalab import render
from kafkalab.cli.cluster import InventoryFile
from kafkalab.labs import runner
from kafkalab.targets import resolve
from kafkalab.targets.statedir import one_command

app = typer.Typer(help="Labs for learners: list, start, check, solve, reset.", no_args_is_help=True)

LabRef = Annotated[str, typer.Argument(help="lab number or name, e.g. 03 or consumer-groups")]


@app.command("list")
def list_(inventory: InventoryFile = None) -> None:
    """Every lab, one line each, with your progress (not started / in progress / passed)."""
    render.table(
        "labs (kafkalab lab start NN)",
        ["lab", "title", "runs on", "brokers", "state"],
        runner.rows(resolve.cluster(inventory)),
    )


@app.command()
@one_command
def start(lab: LabRef, inventory: InventoryFile = None) -> None:
    """Bring the cluster to the lab's starting state and show where its README is."""
    runner.start(lab, resolve.cluster(inventory))


@app.command()
def check(lab: LabRef, inventory: InventoryFile = None) -> None:
    """Check on the cluster what the lab asks for; say what is still missing."""
    if not runner.check(lab, resolve.cluster(inventory)):
        raise typer.Exit(1)


@app.command()
@one_command
def solve(
    lab: LabRef,
    reset: Annotated[
        bool, typer.Option(help="start from the lab's starting state (--no-reset: from here)")
    ] = True,
    inventory: InventoryFile = None,
) -> None:
    """Run the reference solution step by step, printing each command and its output."""
    if not runner.solve(lab, resolve.cluster(inventory), from_start=reset):
        raise typer.Exit(1)


@app.command()
@one_command
def reset(lab: LabRef, inventory: InventoryFile = None) -> None:
    """Back to the lab's starting state (no re-provisioning): a fresh try."""
    runner.reset(lab, resolve.cluster(inventory))
