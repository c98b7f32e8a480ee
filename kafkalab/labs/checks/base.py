"""What a check kind is, and the registry of kinds: a kind is a function
`(ctx, params) -> Verdict`, its params model (validated when the lab is loaded), a title
(what it checks, in one line) and, for checks that compare with how things were when the
lab started, a baseline function whose result `lab start` keeps. A kind module registers
its kinds with the `kind` decorator; kafkalab.labs.checks imports every kind module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kafkalab.errors import KafkalabError, validation_line
from kafkalab.labs.context import LabContext


@dataclass(frozen=True)
class Remedy:
    """What a learner would type to clear a problem a check found (`lab solve` runs it in
    an `until` step marked `remedy: true`)."""

    host: str
    command: str
    why: str


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)  # empty: passed
    facts: list[str] = field(default_factory=list)  # what was seen, shown either way
    remedies: list[Remedy] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class Unmet(Exception):
    """Raised by a check that cannot even look (its topic is missing): the check fails
    with this message as its one problem."""


def existing_topic(ctx: LabContext, name: str) -> Any:
    """The topic's metadata; a check on a topic that does not exist fails with that."""
    t = ctx.topic(name)
    if t is None:
        raise Unmet(f"there is no topic {name} yet")
    return t


@dataclass
class Kind:
    params: type[BaseModel]
    title: Callable[[Any, str], str]  # (params, mode) -> one line
    run: Callable[[LabContext, Any], Verdict]
    baseline: Callable[[LabContext, Any], dict[str, Any]] | None = None


KINDS: dict[str, Kind] = {}


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


def validate(kind: str, params: dict[str, Any], where: str) -> BaseModel:
    if kind not in KINDS:
        raise KafkalabError(
            f"{where}: unknown check kind {kind!r}; kinds: {', '.join(sorted(KINDS))}"
        )
    try:
        return KINDS[kind].params(**params)
    except ValidationError as exc:
        raise KafkalabError(f"{where} ({kind}): {validation_line(exc, whole=kind)}") from None


def kind(
    name: str,
    params: type[BaseModel],
    title: Callable[[Any, str], str],
    baseline: Callable[[LabContext, Any], dict[str, Any]] | None = None,
) -> Callable[[Callable[[LabContext, Any], Verdict]], Callable[[LabContext, Any], Verdict]]:
    def register(fn: Callable[[LabContext, Any], Verdict]) -> Callable[[LabContext, Any], Verdict]:
        KINDS[name] = Kind(params, title, fn, baseline)
        return fn

    return register
