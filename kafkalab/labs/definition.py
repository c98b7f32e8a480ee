"""A lab's definition: the models of its lab.yml, validated field by field.

A lab folder `labs/NN-name/` holds README.md (for the learner), lab.yml (what the lab
needs, its starting state, the reference solution's steps, the checks) and any small
scripts the steps run. The step and check kinds are the vocabulary a lab.yml may use
(the check kinds: kafkalab.labs.checks). Loading a folder, and what one field cannot see
alone, is kafkalab.labs.catalog's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kafkalab.topology import MODES, Mode

FOLDER = re.compile(r"^(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*$")
# `{{ name args }}` in a step's command or host is filled in when the step runs.
PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)((?:\s+[^\s}]+)*)\s*\}\}")
PLACEHOLDERS = {"quorum_leader", "quorum_follower", "leader", "live_broker"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Needs(_Strict):
    """The cluster a lab runs on; `lab start` refuses any other."""

    modes: list[Mode] = Field(default_factory=lambda: list(MODES), min_length=1)
    brokers: int = Field(1, ge=1, le=9, strict=True)  # as in lab.yml: `true` is not 1
    extra_hosts: list[Literal["spark", "ksqldb"]] = Field(default_factory=list)  # `up --with`
    # the oldest Kafka release the lab runs on, e.g. "4.0" for a feature 4.0 brought
    kafka_min: str | None = Field(None, pattern=r"^[0-9]+(\.[0-9]+){0,2}$")
    # the newest line the lab starts on, e.g. "3.9" for an upgrade from 3.9: `lab start`,
    # `reset` and `solve` refuse a newer cluster (`lab check` looks at it after the upgrade)
    kafka_max: str | None = Field(None, pattern=r"^[0-9]+(\.[0-9]+){0,2}$")


class SetupTopic(_Strict):
    """A topic the lab's starting state has."""

    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    partitions: int = Field(1, ge=1)
    replication_factor: int | None = Field(None, ge=1)  # None: the brokers' default
    replicas: list[list[int]] | None = None  # explicit assignment; first = preferred leader
    config: dict[str, str] = Field(default_factory=dict)

    @field_validator("config", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _assignment_fits(self) -> SetupTopic:
        if self.replicas is None:
            return self
        if len(self.replicas) != self.partitions:
            raise ValueError(
                f"replicas lists {len(self.replicas)} partitions, partitions is {self.partitions}"
            )
        for i, ids in enumerate(self.replicas):
            if len(set(ids)) != len(ids) or not ids:
                raise ValueError(f"replicas[{i}] must name distinct broker ids")
            if self.replication_factor is not None and len(ids) != self.replication_factor:
                raise ValueError(
                    f"replicas[{i}] has {len(ids)} ids, replication_factor is "
                    f"{self.replication_factor}"
                )
        return self

    @property
    def rf(self) -> int | None:
        return len(self.replicas[0]) if self.replicas else self.replication_factor


class SetupRecords(_Strict):
    """`count` records, key and value formatted with i = 0..count-1 (Java's partitioner)."""

    topic: str
    count: int = Field(ge=1, le=100_000)
    key: str | None = None
    value: str = "{i}"

    @field_validator("key", "value")
    @classmethod
    def _format(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                value.format(i=0)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(f"only {{i}} may be used in {value!r} ({exc})") from None
        return value


class Setup(_Strict):
    topics: list[SetupTopic] = Field(default_factory=list)
    records: list[SetupRecords] = Field(default_factory=list)
    # "all": every KRaft controller a voter again (a lab that removes one from a dynamic
    # quorum; `lab reset` adds it back with kafka-metadata-quorum.sh add-controller)
    voters: Literal["all"] | None = None

    @model_validator(mode="after")
    def _records_go_to_setup_topics(self) -> Setup:
        names = {t.name for t in self.topics}
        for r in self.records:
            if r.topic not in names:
                raise ValueError(f"records go to topic {r.topic!r}, which setup does not create")
        return self


class Owns(_Strict):
    """What reset deletes besides the setup topics: what the learner creates. (The lab's
    work dir in the state dir, where its scripts note things, is emptied too.)"""

    topics: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)


class CheckSpec(BaseModel):
    """One check: `kind` picks the code (kafkalab.labs.checks), the other keys are its params."""

    model_config = ConfigDict(extra="allow")

    kind: str
    title: str | None = None
    hint: str | None = None
    modes: list[Mode] | None = None

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


ACTIONS = ("run", "python", "kafkalab", "wait", "stop", "sleep", "until")


class LabStep(_Strict):
    """One step of the reference solution. Exactly one of run/python/kafkalab/wait/stop/
    sleep/until."""

    title: str
    run: str | None = None  # a shell command on a machine
    python: str | None = None  # a script of the lab folder + args, on the controller side
    # a kafkalab command, as the learner types it on the host (e.g. `up --kafka-version X`)
    kafkalab: str | None = None
    wait: str | None = None  # join a background step by name, print its output
    stop: str | None = None  # Ctrl-C a background step by name, then join it as `wait` does
    sleep: float | None = Field(None, gt=0, le=120)
    until: CheckSpec | None = None  # poll a check until it passes
    remedy: bool = False  # until: run what the check says clears a problem (each once)
    machine: str | None = None  # where a run step runs (default: the lab's host)
    background: str | None = None  # run/python: start, go on, `wait` for it later
    remember: str | None = Field(None, pattern=r"^[a-z_]+$")  # name the machine it ran on
    timeout: float = Field(120, gt=0, le=900)
    expect: Literal["ok", "fail"] = "ok"
    show: int | None = Field(None, ge=1)  # print at most this many lines of output
    modes: list[Mode] | None = None

    @model_validator(mode="after")
    def _one_action(self) -> LabStep:
        actions = [a for a in ACTIONS if getattr(self, a)]
        if len(actions) != 1:
            raise ValueError(
                f"a step does exactly one of {', '.join(ACTIONS)} "
                f"(got {', '.join(actions) or 'none'})"
            )
        if self.background and not (self.run or self.python):
            raise ValueError("only run and python steps can go to the background")
        if self.machine and not self.run:
            raise ValueError("`machine` is where a `run` step runs")
        if self.remember and not self.run:
            raise ValueError("`remember` keeps the machine of a `run` step")
        if self.remedy and not self.until:
            raise ValueError("`remedy` runs the remedies an `until` step's check names")
        return self


class Definition(_Strict):
    title: str
    goal: str
    seeds: list[str] = Field(default_factory=list)
    needs: Needs = Field(default_factory=lambda: Needs.model_validate({}))
    host: str = Field("kafka1", pattern=r"^[a-z]+[0-9]+$")  # where `run` steps run
    env: dict[str, str] = Field(default_factory=dict)  # exported for every run step
    setup: Setup = Field(default_factory=lambda: Setup.model_validate({}))
    owns: Owns = Field(default_factory=lambda: Owns.model_validate({}))
    steps: list[LabStep] = Field(min_length=1)
    checks: list[CheckSpec] = Field(min_length=1)

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
                raise ValueError(f"{name!r} is not a shell variable name (A-Z, 0-9, _)")
        return value


@dataclass
class Lab:
    id: str  # "03"
    slug: str  # "03-consumer-groups"
    path: Path
    spec: Definition

    @property
    def title(self) -> str:
        return self.spec.title

    @property
    def readme(self) -> Path:
        return self.path / "README.md"

    def topics(self) -> list[str]:
        """Every topic reset deletes: the setup ones and those the learner creates."""
        return list(dict.fromkeys([t.name for t in self.spec.setup.topics] + self.spec.owns.topics))

    def max_replication_factor(self) -> int:
        rfs = [t.rf for t in self.spec.setup.topics if t.rf]
        rfs += [
            int(c.params["replication_factor"])
            for c in self.spec.checks
            if c.params.get("replication_factor")
        ]
        return max(rfs, default=1)
