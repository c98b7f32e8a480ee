"""All terminal output goes through here: progress lines, tables, errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


def step(message: str) -> None:
    """One progress line for a long step."""
    console.print(f"[bold cyan]•[/] {message}")


def ok(message: str) -> None:
    console.print(f"[bold green]✓[/] {message}")


def fail(message: str) -> None:
    console.print(f"[bold red]✗[/] {message}")


def error(message: str) -> None:
    """One error, never wrapped (a pipe or a log keeps its one line) and never read as
    markup (a message may quote `[a-z0-9_-]`)."""
    errors.print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    console.print(t)


def as_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def plural(n: int, word: str) -> str:
    """`1 record`, `2 records`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def detail(text: str, style: str = "") -> None:
    """A line under a step or a check, indented."""
    console.print(Text("    " + text, style=style))


def command(where: str, line: str) -> None:
    """A command as a learner would type it, and where (`kafka1$ kafka-topics.sh ...`)."""
    console.print(Text(f"{where}$ ", style="bold") + Text(line, style="bold"))


def output(text: str, limit: int | None = None) -> None:
    """A command's output, indented; with a limit, its first and last lines."""
    lines = text.rstrip("\n").splitlines()
    if limit and len(lines) > limit:
        head, tail = (limit + 1) // 2, limit // 2
        hidden = len(lines) - head - tail
        lines = [*lines[:head], f"… ({hidden} more lines) …", *lines[len(lines) - tail :]]
    for line in lines:
        console.print(Text("  " + line, style="dim"))
