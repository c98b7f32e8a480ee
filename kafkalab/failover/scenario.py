"""Failover scenarios: topic + producer settings + a fault schedule + an expectation.

Scenarios are data (kafkalab/data/scenarios/<name>.yml; any other .yml file works too);
kafkalab.failover.runner plays one against a cluster, kafkalab.failover.verdict judges it.
Models:
Apache Kafka's system tests (replication_test, replication_replica_failure_test,
end_to_end validate_delivery).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from confluent_kafka import KafkaException, Producer
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from kafkalab.errors import KafkalabError, validation_line
from kafkalab.failover import faults
from kafkalab.paths import package_data
from kafkalab.topology import Mode

FAULTS = ("kill", "stop", "start", "pause", "resume", "isolate", "heal")
TAKES_DOWN = ("kill", "stop", "pause", "isolate")
BRINGS_BACK = ("start", "resume", "heal")
KINDS = (*FAULTS, "sleep", "wait", "repeat", "for_each")
WaitFor = Literal["leader-elected", "controller-elected", "isr-shrunk", "isr-full", "traffic"]
# What `all` means per action: every host that action applies to.
ALL_OF = {"heal": None, "start": ("kill", "stop"), "resume": ("pause",)}
PAST = {"kill": "killed", "stop": "stopped", "pause": "paused", "isolate": "isolated"}
# Faults on the machine's `kafka` unit: only for a host that runs a broker or controller.
ON_KAFKA = ("kill", "stop", "start", "pause", "resume")
# Targets resolved while the schedule plays (kafkalab.failover.schedule); any
# other target is a machine's name.
TARGETS = ("all", "last", "current", "leader", "follower", "controller")
MACHINE_NAME = re.compile(r"[a-z][a-z0-9-]{0,30}")
MAX_RECORDS = 1_000_000  # the producer keeps every acknowledged record in memory
MAX_RATE = 100_000  # records per second
# The librdkafka producer settings a scenario may change: how records are batched,
# acknowledged, retried and timed out. Anything else (bootstrap.servers, ssl.*, sasl.*,
# plugin.library.paths, which dlopens what it names, ...) is refused: a scenario is data.
PRODUCER_SETTINGS = (
    "acks",
    "enable.idempotence",
    "enable.gapless.guarantee",
    "max.in.flight.requests.per.connection",
    "max.in.flight",
    "linger.ms",
    "queue.buffering.max.ms",
    "queue.buffering.max.messages",
    "queue.buffering.max.kbytes",
    "queue.buffering.backpressure.threshold",
    "batch.size",
    "batch.num.messages",
    "message.max.bytes",
    "compression.type",
    "compression.codec",
    "compression.level",
    "retries",
    "message.send.max.retries",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "delivery.timeout.ms",
    "message.timeout.ms",
    "request.timeout.ms",
    "socket.timeout.ms",
    "socket.connection.setup.timeout.ms",
    "socket.keepalive.enable",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "metadata.max.age.ms",
    "topic.metadata.refresh.interval.ms",
    "partitioner",
    "sticky.partitioning.linger.ms",
)


class ScenarioTopic(BaseModel):
    model_config = ConfigDict(extra="forbid")
    partitions: int = Field(default=3, ge=1, le=100)
    replication_factor: int = Field(default=3, ge=1, le=9)
    config: dict[str, str] = Field(default_factory=lambda: {"min.insync.replicas": "2"})


class ProducerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # at least this many; it keeps going until healed
    records: int = Field(default=3000, ge=1, le=MAX_RECORDS)
    rate: int = Field(default=300, ge=1, le=MAX_RATE)  # records per second
    config: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _defaults(self) -> ProducerSpec:
        refused = [k for k in self.config if k not in PRODUCER_SETTINGS]
        if refused:
            raise ValueError(
                f"{', '.join(refused)}: not a producer setting a scenario may change; it may"
                f" change {', '.join(PRODUCER_SETTINGS)}"
            )
        self.config = {"acks": "all", **self.config}
        self.config["acks"] = str(self.config["acks"])
        if self.config["acks"] == "0":
            raise ValueError("acks 0 gives no offsets to verify; use acks 1 or all")
        if self.config["acks"] not in ("all", "-1", "1"):
            raise ValueError(f"acks {self.config['acks']}: use acks 1 or all")
        # Idempotence is on for acks=all, as in Kafka's tests (it needs acks=all).
        self.config.setdefault("enable.idempotence", self.config["acks"] in ("all", "-1"))
        _librdkafka_takes(self.config)
        return self


def _librdkafka_takes(config: dict[str, str | int | float | bool]) -> None:
    """Let librdkafka check the values now (a client without brokers connects nowhere),
    not when the run's producer starts."""
    try:
        Producer({"log_level": 0, **config})
    except KafkaException as exc:
        message = " ".join(exc.args[0].str().split())
        raise ValueError(f"librdkafka refuses these settings: {message}") from None


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    loss: Literal["none", "allowed"] = "none"
    # after-epoch-bump: a duplicate passes only when the log shows its copies written
    # under different epochs of one producer (a client re-send, see kafkalab.failover.forensics).
    duplicates: Literal["none", "after-epoch-bump", "allowed"] = "none"

    def summary(self) -> str:
        return f"loss {self.loss}, duplicates {self.duplicates}"


class ScheduleStep(BaseModel):
    """One entry of a schedule: exactly one action, e.g. `kill: leader`, `wait: isr-full`."""

    model_config = ConfigDict(extra="forbid")
    kill: str | None = None
    stop: str | None = None
    start: str | None = None
    pause: str | None = None
    resume: str | None = None
    isolate: str | None = None
    heal: str | None = None
    sleep: float | None = None  # seconds; the file says e.g. 3s, 500ms, 2m
    wait: WaitFor | None = None
    timeout: float = 180  # seconds, for `wait`
    repeat: int | None = Field(default=None, ge=1, le=100)
    for_each: Literal["broker"] | None = None
    steps: list[ScheduleStep] = Field(default_factory=list)

    @field_validator("sleep", "timeout", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        if value is None:
            return None
        if not isinstance(value, str | int | float):
            raise ValueError(f"not a duration: {value!r} (use e.g. 20s, 500ms, 2m)")
        try:
            return faults.parse_duration(value)
        except KafkalabError as exc:
            raise ValueError(str(exc)) from None

    @field_validator(*FAULTS)
    @classmethod
    def _target(cls, value: str | None) -> str | None:
        if value is not None and value not in TARGETS and not MACHINE_NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} is neither a machine (e.g. kafka2) nor one of {', '.join(TARGETS)}"
            )
        return value

    @model_validator(mode="after")
    def _one_action(self) -> ScheduleStep:
        kinds = [k for k in KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"a step has exactly one of {', '.join(KINDS)} (got {kinds or 'none'})"
            )
        block = kinds[0] in ("repeat", "for_each")
        if block != bool(self.steps):
            raise ValueError("repeat and for_each take `steps:`, and only they do")
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
    topic: ScenarioTopic = ScenarioTopic()
    producer: ProducerSpec = ProducerSpec()
    schedule: list[ScheduleStep]
    expect: Expect = Expect()

    @model_validator(mode="after")
    def _targets_make_sense(self) -> Scenario:
        """Targets that depend on what came before, checked in the order the steps play."""
        taken_down = False
        for where, step, in_for_each in walk(self.schedule):
            if step.kind not in FAULTS:
                continue
            target = step.arg
            if target == "last" and not taken_down:
                raise ValueError(
                    f"{where}.{step.kind}: target `last` is the host of an earlier"
                    f" {', '.join(TAKES_DOWN[:-1])} or {TAKES_DOWN[-1]}, and there is none"
                    " before it"
                )
            if target == "current" and not in_for_each:
                raise ValueError(f"{where}.{step.kind}: target `current` is for for_each steps")
            if target == "follower" and self.topic.replication_factor < 2:
                raise ValueError(
                    f"{where}.{step.kind}: target `follower` needs topic.replication_factor 2"
                    " or more"
                )
            taken_down = taken_down or step.kind in TAKES_DOWN
        return self


def walk(
    steps: list[ScheduleStep], where: str = "schedule", in_for_each: bool = False
) -> Iterator[tuple[str, ScheduleStep, bool]]:
    """Every step in the order it first plays (a block's steps once), with its place in
    the file (`schedule.0.steps.1`) and whether it runs inside a for_each block."""
    for i, step in enumerate(steps):
        yield f"{where}.{i}", step, in_for_each
        if step.steps:
            yield from walk(step.steps, f"{where}.{i}.steps", in_for_each or bool(step.for_each))


def check_against(scenario: Scenario, machines: Sequence[str], kafka_hosts: Sequence[str]) -> None:
    """Refuse, before anything runs, a schedule that names a machine this cluster does not
    have, or a broker fault on a machine without Kafka (the targets resolved while the
    schedule plays, such as `leader`, were checked for form when the file was read)."""
    problems = []
    for where, step, _ in walk(scenario.schedule):
        target = step.arg
        if step.kind not in FAULTS or target in TARGETS:
            continue
        if target not in machines:
            problems.append(
                f"{where}.{step.kind}: no machine {target} in this lab"
                f" (machines: {', '.join(machines) or 'none'})"
            )
        elif step.kind in ON_KAFKA and target not in kafka_hosts:
            problems.append(
                f"{where}.{step.kind}: {target} runs no Kafka broker or controller"
                f" (Kafka hosts: {', '.join(kafka_hosts)})"
            )
    if problems:
        raise KafkalabError(f"scenario {scenario.name}: {'; '.join(problems)}; nothing was run")


def check_count(option: str, value: int | None, most: int) -> None:
    """`--records` and `--rate`: a whole number above 0 and at most `most` (or not given)."""
    if value is not None and not 1 <= value <= most:
        raise KafkalabError(f"{option}: give a number from 1 to {most} (got {value})")


# -- catalog ------------------------------------------------------------------------------


def _shipped() -> dict[str, Path]:
    folder = package_data() / "scenarios"
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
        # A whole-scenario check names the place itself (schedule.2.start: ...).
        raise KafkalabError(f"{path.name}: {validation_line(exc)}") from None


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
