"""`kafkalab fault ...`: faults injected into the cluster's machines, and healing them."""

from __future__ import annotations

from typing import Annotated

import typer

from kafkalab import render
from kafkalab.cli.cluster import InventoryFile
from kafkalab.failover import faults
from kafkalab.targets import resolve
from kafkalab.targets.statedir import one_command

app = typer.Typer(help="Inject faults: kill, pause, isolate, heal.", no_args_is_help=True)

Host = Annotated[str, typer.Argument(help="a Kafka machine, e.g. kafka2")]
Machine = Annotated[str, typer.Argument(help="any machine of the lab, e.g. kafka3 or spark1")]


@app.command()
@one_command
def kill(host: Host, inventory: InventoryFile = None) -> None:
    """SIGKILL the broker; systemd restarts nothing until `fault start` or `fault heal`."""
    faults.kill(resolve.cluster(inventory), host)
    render.ok(f"{host}: broker killed (SIGKILL); it stays down until `kafkalab fault heal`")


@app.command()
@one_command
def stop(host: Host, inventory: InventoryFile = None) -> None:
    """Clean shutdown of the broker (SIGTERM: leadership moves first)."""
    faults.stop(resolve.cluster(inventory), host)
    render.ok(f"{host}: broker stopped cleanly; `kafkalab fault start {host}` brings it back")


@app.command()
@one_command
def start(host: Host, inventory: InventoryFile = None) -> None:
    """Start a killed or stopped broker again."""
    faults.start(resolve.cluster(inventory), host)
    render.ok(f"{host}: broker starting (it rejoins the ISR once it has caught up)")


@app.command()
@one_command
def pause(
    host: Host,
    for_: Annotated[
        str | None, typer.Option("--for", help="resume after this long, e.g. 20s; default: heal")
    ] = None,
    inventory: InventoryFile = None,
) -> None:
    """SIGSTOP the broker (SIGCONT after --for, or at `fault resume`/`fault heal`)."""
    cluster = resolve.cluster(inventory)
    seconds = faults.parse_duration(for_) if for_ is not None else None
    if seconds is None:
        faults.pause(cluster, host)
        render.ok(f"{host}: broker paused (SIGSTOP); `kafkalab fault heal` resumes it")
        return
    render.step(f"{host}: pausing the broker (SIGSTOP) for {seconds:g}s")
    stopped = faults.pause_for(cluster, host, seconds)
    render.ok(f"{host}: broker resumed (SIGCONT) after {stopped:.2f}s paused")


@app.command()
@one_command
def resume(host: Host, inventory: InventoryFile = None) -> None:
    """SIGCONT a paused broker."""
    faults.resume(resolve.cluster(inventory), host)
    render.ok(f"{host}: broker resumed (SIGCONT)")


@app.command()
@one_command
def isolate(host: Machine, inventory: InventoryFile = None) -> None:
    """Cut the machine off the lab network both ways (nftables rules on it; ssh stays open).

    Every packet in and out of the interface with the host's kafkalab_address is dropped,
    but ssh (tcp 22); `fault heal` deletes the rules, and so does a reboot of the machine."""
    faults.isolate(resolve.cluster(inventory), host)
    render.ok(
        f"{host}: isolated from the lab network (ssh still reaches it); "
        "`kafkalab fault heal` reconnects it"
    )


@app.command()
@one_command
def heal(
    hosts: Annotated[list[str] | None, typer.Argument(help="machines; default: all")] = None,
    inventory: InventoryFile = None,
) -> None:
    """Undo every fault: delete isolate's rules, resume, start what was killed or stopped."""
    for h in faults.heal(resolve.cluster(inventory), hosts or None):
        render.ok(f"{h.host}: {', '.join(h.actions)}" if h.actions else f"{h.host}: no fault")
