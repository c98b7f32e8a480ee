"""The labs there are: every folder `labs/NN-name/`, loaded and checked whole.

Every mistake in a lab.yml is one KafkalabError line naming the file and the place; one
broken lab never hides the others from `kafkalab lab list`.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kafkalab.errors import KafkalabError, validation_line
from kafkalab.labs import checks
from kafkalab.labs.definition import FOLDER, PLACEHOLDER, PLACEHOLDERS, Definition, Lab, Needs
from kafkalab.paths import repo_root
from kafkalab.topology import EXTRA_HOSTS, has_zookeeper, read_mapping, release

# What a lab's `kafkalab:` step may run: the host's own commands a learner types in a lab
HOST_COMMANDS = ("up", "status")


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
        checks.validate(c.kind, c.params, f"{source}: checks[{i}]")
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
    kafka_min = spec.needs.kafka_min
    if kafka_min and "zookeeper" in spec.needs.modes and not has_zookeeper(kafka_min):
        raise bad(
            "needs.kafka_min",
            f"Kafka {kafka_min} has no ZooKeeper mode: the lab needs modes: [kraft]",
        )
    kafka_max = spec.needs.kafka_max
    if kafka_min and kafka_max and release(kafka_min) > release(kafka_max):
        raise bad("needs.kafka_max", f"{kafka_max} is older than needs.kafka_min {kafka_min}")
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
            checks.validate(s.until.kind, s.until.params, f"{source}: {where}: until")
        if s.background:
            if s.background in started:
                raise bad(where, f"background name {s.background!r} is used twice")
            started.add(s.background)
        for name in (s.wait, s.stop):
            if name and name not in started:
                raise bad(
                    where, f"waits for {name!r}, which no earlier step started in the background"
                )
        if s.kafkalab is not None:
            words = s.kafkalab.split()
            if not words or words[0] not in HOST_COMMANDS:
                raise bad(
                    where,
                    f"kafkalab: runs one of {', '.join(HOST_COMMANDS)} (got {s.kafkalab!r})",
                )
        if s.remember:
            remembered.add(s.remember)


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
