"""Errors a user can cause: shown as one line, without a traceback."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError


class KafkalabError(Exception):
    """A problem the user can fix; the message says how."""


class Interrupted(BaseException):
    """Ctrl-C in the kafkalab command (its SIGINT handler raises it): typer would turn a
    KeyboardInterrupt into a silent exit, and as a BaseException no `except Exception`
    mistakes it for a failure. Code that cleans up on Ctrl-C catches INTERRUPTS."""


INTERRUPTS = (KeyboardInterrupt, Interrupted)


def validation_line(
    exc: ValidationError,
    whole: str = "",
    unknown: str = "unknown setting",
    indexed: bool = False,
) -> str:
    """A pydantic validation's errors as one line: `where: what; where: what`.

    `whole` names what an error without a place is about (none: the message alone);
    `unknown` is said of a setting the model does not have; with `indexed`, list
    positions read `steps[0].run` as in a lab.yml, else `schedule.0.kill`. A wrong type or
    choice says what it got."""
    parts = []
    for e in exc.errors():
        where = _where(e["loc"], indexed) or whole
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = unknown
        elif e["type"] == "literal_error" or e["type"].endswith("_type"):
            got = repr(e["input"])
            msg = f"{msg} (got {got if len(got) <= 40 else got[:37] + '...'})"
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts)


def _where(loc: Sequence[int | str], indexed: bool) -> str:
    if not indexed:
        return ".".join(str(p) for p in loc)
    parts: list[str] = []
    for p in loc:
        if isinstance(p, int):
            parts[-1:] = [f"{parts[-1]}[{p}]"] if parts else [f"[{p}]"]
        else:
            parts.append(str(p))
    return ".".join(parts)
