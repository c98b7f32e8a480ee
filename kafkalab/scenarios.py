"""Failover scenarios: topic + producer settings + a fault schedule + an expectation.

Scenarios are data (kafkalab/data/scenarios/<name>.yml; any other .yml file works too);
kafkalab.scenario_run plays one against a lab and gives the verdict. Models:
Apache Kafka's system tests (replication_test, replication_replica_failure_test,
end_to_end validate_delivery).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kafkalab import faults
from kafkalab.errors import KafkalabError

Mode = Literal["kraft", "zookeeper"]
FAULTS = ("kill", "stop", "start", "pause", "resume", "isolate", "heal")
TAKES_DOWN = ("kill", "stop", "pause", "isolate")
BRINGS_BACK = ("start", "resume", "heal")
KINDS = (*FAULTS, "sleep", "wait", "repeat", "for_each")
WaitFor = Literal["leader-elected", "controller-elected", "isr-shrunk", "isr-full", "traffic"]
# What `all` means per action: every host that action applies to.
ALL_OF = {"heal": None, "start": ("kill", "stop"), "resume": ("pause",)}
PAST = {"kill": "killed", "stop": "stopped", "pause": "paused", "isolate": "isolated"}


class TopicSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    partitions: int = Field(default=3, ge=1, le=100)
    replication_factor: int = Field(default=3, ge=1, le=9)
    config: dict[str, str] = Field(default_factory=lambda: {"min.insync.replicas": "2"})


class ProducerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    records: int = Field(default=3000, ge=1)  # at least this many; it keeps going until healed
    rate: int = Field(default=300, ge=1, le=100000)  # records per second
    config: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _defaults(self) -> ProducerSpec:
        self.config = {"acks": "all", **self.config}
        self.config["acks"] = str(self.config["acks"])
        if self.config["acks"] == "0":
            raise ValueError("acks 0 gives no offsets to verify; use acks 1 or all")
        # Idempotence is on for acks=all, as in Kafka's tests (it needs acks=all).
        self.config.setdefault("enable.idempotence", self.config["acks"] in ("all", "-1"))
        return self


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    loss: Literal["none", "allowed"] = "none"
    # after-epoch-bump: a duplicate passes only when the log shows its copies written
    # under different epochs of one producer (a client re-send, see kafkalab.logdump).
    duplicates: Literal["none", "after-epoch-bump", "allowed"] = "none"

    def summary(self) -> str:
        return f"loss {self.loss}, duplicates {self.duplicates}"


class Step(BaseModel):
    """One entry of a schedule: exactly one action, e.g. `kill: leader`, `wait: isr-full`."""

    model_config = ConfigDict(extra="forbid")
    kill: str | None = None
    stop: str | None = None
    start: str | None = None
    pause: str | None = None
    resume: str | None = None
    isolate: str | None = None
    heal: str | None = None
    sleep: float | str | None = None
    wait: WaitFor | None = None
    timeout: float = Field(default=180, gt=0)  # seconds, for `wait`
    repeat: int | None = Field(default=None, ge=1, le=100)
    for_each: Literal["broker"] | None = None
    steps: list[Step] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        kinds = [k for k in KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"a step has exactly one of {', '.join(KINDS)} (got {kinds or 'none'})"
            )
        block = kinds[0] in ("repeat", "for_each")
        if block != bool(self.steps):
            raise ValueError("repeat and for_each take `steps:`, and only they do")
        if self.sleep is not None:
            faults.parse_duration(self.sleep)
        target = self.arg if kinds[0] in FAULTS else None
        if target == "all" and kinds[0] not in ALL_OF:
            raise ValueError(f"target `all` is for {', '.join(ALL_OF)} only")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if getattr(self, k) is not None)

    @property
    def arg(self) -> Any:
        return getattr(self, self.kind)


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    model: str = ""  # the Kafka system test it follows
    modes: list[Mode] = ["kraft", "zookeeper"]  # pydantic copies mutable defaults
    topic: TopicSpec = TopicSpec()
    producer: ProducerSpec = ProducerSpec()
    schedule: list[Step]
    expect: Expect = Expect()


# -- catalog ------------------------------------------------------------------------------


def _shipped() -> dict[str, Path]:
    folder = Path(str(resources.files("kafkalab") / "data" / "scenarios"))
    return {p.stem: p for p in sorted(folder.glob("*.yml"))}


def _parse(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise KafkalabError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise KafkalabError(f"{path}: expected a mapping (description, schedule, ...)")
    data.setdefault("name", path.stem)
    try:
        return Scenario(**data)
    except ValidationError as exc:
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or 'scenario'}: "
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        ]
        raise KafkalabError(f"{path.name}: " + "; ".join(parts)) from None


def catalog() -> list[Scenario]:
    return [_parse(p) for p in _shipped().values()]


def _path(name: str) -> Path:
    if name.endswith((".yml", ".yaml")):
        path = Path(name)
        if not path.exists():
            raise KafkalabError(f"scenario file {name} not found")
        return path
    shipped = _shipped()
    if name not in shipped:
        raise KafkalabError(
            f"no scenario named {name!r}; `kafkalab scenario list` shows: {', '.join(shipped)}"
        )
    return shipped[name]


def load(name: str) -> Scenario:
    """A shipped scenario by name, or a scenario file (`*.yml`)."""
    return _parse(_path(name))


def source(name: str) -> str:
    return _path(name).read_text()
