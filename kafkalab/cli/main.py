"""The kafkalab command line: one module per verb group (`cluster`, `host`, `lab`, `fault`,
`scenario`, `spark`, `box`), each parsing, calling one function and rendering; here the app
that holds them and `main`, which shows a user's error as one line and Ctrl-C as a message.
"""

from __future__ import annotations

import signal
import sys

import typer

from kafkalab import render
from kafkalab.cli import box, cluster, fault, host, lab, scenario, spark
from kafkalab.errors import INTERRUPTS, Interrupted, KafkalabError

app = typer.Typer(
    help="A real Apache Kafka cluster to learn, teach and test on.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

app.add_typer(lab.app, name="lab")
app.add_typer(fault.app, name="fault")
app.add_typer(scenario.app, name="scenario")
app.add_typer(spark.app, name="spark")
app.add_typer(box.app, name="box")

app.command()(cluster.up)
app.command()(cluster.down)
app.command()(cluster.status)
app.command(name="exec", context_settings={"allow_extra_args": True})(cluster.exec_)
app.command()(cluster.shell)
app.command()(host.fetch)
app.command()(host.doctor)


def _interrupt(_signum: int, _frame: object) -> None:
    raise Interrupted


def _interrupt_hint(verb: list[str]) -> str:
    """What is left to do after Ctrl-C, for the commands that leave something."""
    if verb[:1] == ["up"] and any(
        w in ("-i", "--inventory") or w.startswith("--inventory=") for w in verb
    ):
        return "; your hosts keep what was done so far: `kafkalab up -i` again finishes it"
    if verb[:1] == ["up"] or verb[:2] in (["lab", "start"], ["lab", "reset"], ["lab", "solve"]):
        return "; machines that were started keep running: `kafkalab down` stops them"
    if verb[:1] == ["scenario"] or verb[:2] in (["fault", "isolate"], ["fault", "pause"]):
        return "; a fault may still be in force: `kafkalab fault heal` repairs the cluster"
    return ""


def main() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    try:
        app()
    except KafkalabError as exc:
        render.error(str(exc))
        sys.exit(2)
    except INTERRUPTS:
        # Machines run in sessions of their own: Ctrl-C stops kafkalab, not them, and the
        # cluster was saved before they booted, so `down` knows every one.
        render.error(f"interrupted{_interrupt_hint(sys.argv[1:])}")
        sys.exit(130)
