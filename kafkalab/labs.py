"""Lab definitions: one folder per lab under labs/, loaded and validated from its lab.yml.

A lab folder `labs/NN-name/` holds README.md (for the learner), lab.yml (what the lab
needs, its starting state, the reference solution's steps, the checks) and any small
scripts the steps run. Adding a lab means adding a folder: the step and check kinds
below are the vocabulary a lab.yml may use. The learner's progress per lab lives in
the lab state dir (KAFKALAB_STATE), next to the cluster it belongs to.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kafkalab import labs_checks, labs_checks_failover  # noqa: F401 (registers its kinds)
from kafkalab.errors import KafkalabError, validation_line
from kafkalab.paths import repo_root, state_dir
from kafkalab.topology import EXTRA_HOSTS, read_mapping

Mode = Literal["kraft", "zookeeper"]
MODES: tuple[Mode, ...] = ("kraft", "zookeeper")
FOLDER = re.compile(r"^(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*$")
# `{{ name args }}` in a step's command or host is filled in when the step runs.
PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)((?:\s+[^\s}]+)*)\s*\}\}")
STATES = ("not started", "in progress", "passed")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Needs(_Strict):
    """The cluster a lab runs on; `lab start` refuses any other."""

    modes: list[Mode] = Field(default_factory=lambda: list(MODES), min_length=1)
    brokers: int = Field(1, ge=1, le=9, strict=True)  # as in lab.yml: `true` is not 1
    extra_hosts: list[Literal["spark", "ksqldb"]] = Field(default_factory=list)  # `up --with`


class TopicSpec(_Strict):
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
    def _assignment_fits(self) -> TopicSpec:
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


class RecordSpec(_Strict):
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
    topics: list[TopicSpec] = Field(default_factory=list)
    records: list[RecordSpec] = Field(default_factory=list)

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
    """One check: `kind` picks the code (labs_checks.KINDS), the other keys are its params."""

    model_config = ConfigDict(extra="allow")

    kind: str
    title: str | None = None
    hint: str | None = None
    modes: list[Mode] | None = None

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Step(_Strict):
    """One step of the reference solution. Exactly one of run/python/wait/sleep/until."""

    title: str
    run: str | None = None  # a shell command on a machine
    python: str | None = None  # a script of the lab folder + args, on the controller side
    wait: str | None = None  # join a background step by name, print its output
    sleep: float | None = Field(None, gt=0, le=120)
    until: CheckSpec | None = None  # poll a check until it passes
    machine: str | None = None  # where a run step runs (default: the lab's host)
    background: str | None = None  # run/python: start, go on, `wait` for it later
    remember: str | None = Field(None, pattern=r"^[a-z_]+$")  # name the machine it ran on
    timeout: float = Field(120, gt=0, le=900)
    expect: Literal["ok", "fail"] = "ok"
    show: int | None = Field(None, ge=1)  # print at most this many lines of output
    modes: list[Mode] | None = None

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        actions = [a for a in ("run", "python", "wait", "sleep", "until") if getattr(self, a)]
        if len(actions) != 1:
            raise ValueError(
                "a step does exactly one of run, python, wait, sleep, until "
                f"(got {', '.join(actions) or 'none'})"
            )
        if self.background and not (self.run or self.python):
            raise ValueError("only run and python steps can go to the background")
        if self.machine and not self.run:
            raise ValueError("`machine` is where a `run` step runs")
        if self.remember and not self.run:
            raise ValueError("`remember` keeps the machine of a `run` step")
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
    steps: list[Step] = Field(min_length=1)
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


# -- loading ------------------------------------------------------------------------------


def labs_root() -> Path:
    return repo_root() / "labs"


def load(path: Path) -> Lab:
    """Load and validate one lab folder; every mistake is one KafkalabError line naming it."""
    source = f"{path.name}/lab.yml"
    m = FOLDER.match(path.name)
    if m is None:
        raise KafkalabError(f"{path.name}: a lab folder is named NN-name, e.g. 03-consumer-groups")
    file = path / "lab.yml"
    if not file.exists():
        raise KafkalabError(f"{path.name}: no lab.yml (the lab's definition) in {path}")
    if not (path / "README.md").exists():
        raise KafkalabError(f"{path.name}: no README.md for the learner in {path}")
    raw = read_mapping(file, source, "lab definition", "(title:, goal:, steps:, checks: ...)")
    try:
        spec = Definition.model_validate(raw)
    except ValidationError as exc:
        line = validation_line(exc, whole="lab.yml", indexed=True)
        raise KafkalabError(f"{source}: {line}") from None
    lab = Lab(m.group(1), path.name, path, spec)
    _cross_check(lab, source)
    return lab


def _cross_check(lab: Lab, source: str) -> None:
    """What one field cannot see alone: check params, hosts, scripts, background names."""
    spec = lab.spec

    def bad(where: str, msg: str) -> KafkalabError:
        return KafkalabError(f"{source}: {where}: {msg}")

    for i, c in enumerate(spec.checks):
        labs_checks.validate(c.kind, c.params, f"{source}: checks[{i}]")
    for t in spec.setup.topics:
        if t.rf and t.rf > spec.needs.brokers:
            raise bad(
                f"setup.topics[{t.name}]",
                f"replication factor {t.rf} needs "
                f"needs.brokers: {t.rf} or more (it says {spec.needs.brokers})",
            )
        for ids in t.replicas or []:
            if max(ids) > spec.needs.brokers or min(ids) < 1:
                raise bad(
                    f"setup.topics[{t.name}]", f"replicas name broker ids 1..{spec.needs.brokers}"
                )
    if lab.max_replication_factor() > spec.needs.brokers:
        raise bad(
            "needs.brokers",
            f"a check expects replication factor "
            f"{lab.max_replication_factor()}, more than {spec.needs.brokers} brokers",
        )
    _check_host(spec.host, spec.needs, bad, "host")
    started: set[str] = set()
    remembered: set[str] = set()
    for i, s in enumerate(spec.steps):
        where = f"steps[{i}] ({s.title})"
        if s.machine:
            _check_host(s.machine, spec.needs, bad, where, remembered)
        for text in (s.run, s.python, s.machine):
            for name, _args in PLACEHOLDER.findall(text or ""):
                if name not in PLACEHOLDERS and name not in remembered:
                    raise bad(
                        where,
                        f"unknown placeholder {{{{ {name} }}}}; known: "
                        f"{', '.join(sorted(PLACEHOLDERS) + sorted(remembered))}",
                    )
        if s.python:
            try:
                words = shlex.split(s.python)
            except ValueError as exc:
                raise bad(where, f"python: {exc} in {s.python!r}") from None
            if not words:
                raise bad(where, "python: names no script")
            script = words[0]
            if not (lab.path / script).is_file():
                raise bad(where, f"python script {script} is not in {lab.path.name}/")
        if s.until:
            labs_checks.validate(s.until.kind, s.until.params, f"{source}: {where}: until")
        if s.background:
            if s.background in started:
                raise bad(where, f"background name {s.background!r} is used twice")
            started.add(s.background)
        if s.wait and s.wait not in started:
            raise bad(
                where, f"waits for {s.wait!r}, which no earlier step started in the background"
            )
        if s.remember:
            remembered.add(s.remember)


PLACEHOLDERS = {"quorum_leader", "quorum_follower", "leader", "live_broker"}


def _check_host(
    host: str, needs: Needs, bad: Any, where: str, known: set[str] | None = None
) -> None:
    m = PLACEHOLDER.fullmatch(host)
    if m:
        if m.group(1) not in PLACEHOLDERS and m.group(1) not in (known or set()):
            raise bad(where, f"unknown placeholder in host {host!r}")
        return
    hm = re.fullmatch(r"kafka(\d+)", host)
    if hm and int(hm.group(1)) > needs.brokers:
        raise bad(where, f"{host} is not there when the lab needs only {needs.brokers} broker(s)")
    if hm or re.fullmatch(r"controller\d+", host):
        return
    extra = {spec[0]: kind for kind, spec in EXTRA_HOSTS.items()}
    if host not in extra:
        raise bad(
            where, f"unknown machine {host!r} (kafka1..N, controller1..N, {', '.join(extra)})"
        )
    if extra[host] not in needs.extra_hosts:
        raise bad(where, f"{host} runs on a lab only with needs.extra_hosts: [{extra[host]}]")


def folders(root: Path | None = None) -> list[Path]:
    """Lab folders (NN-name) under labs/, in order."""
    root = root or labs_root()
    if not root.is_dir():
        return []
    return [p for p in sorted(root.iterdir()) if p.is_dir() and FOLDER.match(p.name)]


def discover(root: Path | None = None) -> list[Lab | KafkalabError]:
    """Every lab, or for a folder whose lab.yml is wrong, the error that says why: one
    broken lab never hides the others from `kafkalab lab list`."""
    out: list[Lab | KafkalabError] = []
    for path in folders(root):
        try:
            out.append(load(path))
        except KafkalabError as exc:
            out.append(exc)
        except Exception as exc:  # a mistake load() does not foresee: still one line
            out.append(KafkalabError(f"{path.name}/lab.yml: cannot be loaded: {exc!r}"))
    return out


def find(ref: str, root: Path | None = None) -> Lab:
    """A lab by number ("3", "03"), folder name or the name after the number."""
    ref = ref.strip().rstrip("/").split("/")[-1]
    paths = folders(root)
    for path in paths:
        num, name = path.name[:2], path.name[3:]
        if ref in (num, path.name, name) or (ref.isdigit() and int(ref) == int(num)):
            return load(path)
    known = ", ".join(f"{p.name[:2]} ({p.name[3:]})" for p in paths) or "none"
    raise KafkalabError(f"no lab {ref!r}; labs: {known} (see `kafkalab lab list`)")


# -- the learner's progress -------------------------------------------------------------


class Progress:
    """Per-lab state in <state>/labs/state.json: not started, in progress, passed."""

    def __init__(self, state: Path | None = None) -> None:
        self.root = (state or state_dir()) / "labs"
        self.file = self.root / "state.json"

    def _all(self) -> dict[str, dict[str, Any]]:
        if not self.file.exists():
            return {}
        data: dict[str, dict[str, Any]] = json.loads(self.file.read_text())
        return data

    def get(self, lab: Lab) -> dict[str, Any]:
        return self._all().get(lab.slug, {"state": "not started"})

    def state(self, lab: Lab) -> str:
        return str(self.get(lab)["state"])

    def workdir(self, lab: Lab) -> Path:
        return self.root / lab.slug

    def set(self, lab: Lab, state: str, **extra: Any) -> None:
        assert state in STATES
        data = self._all()
        entry = {**data.get(lab.slug, {}), **extra, "state": state}
        entry["since" if state == "in progress" else "passed_at"] = datetime.now(UTC).isoformat(
            timespec="seconds"
        )
        data[lab.slug] = entry
        self.root.mkdir(parents=True, exist_ok=True)
        self.file.write_text(json.dumps(data, indent=2) + "\n")
