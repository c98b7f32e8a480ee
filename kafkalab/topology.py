"""The lab topology (lab.yml): validated before any host is touched."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root

# 3.9 is the last Kafka line with both KRaft and ZooKeeper; the launchers and roles
# are written and tested against it.
SUPPORTED_KAFKA_VERSIONS = ("3.9.0", "3.9.1", "3.9.2")
# extra host -> (machine, inventory groups), cp-ansible style group names
EXTRA_HOSTS = {
    "spark": ("spark1", ["spark_master", "spark_worker"]),
    "ksqldb": ("ksql1", ["ksqldb"]),
}


class Topology(BaseModel):
    """What a lab is made of. Field docs double as the error hints."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["kraft", "zookeeper"] = "kraft"
    brokers: int = Field(3, ge=1, le=9)
    controllers: int = Field(0, ge=0, le=5)
    kafka_version: str = "3.9.2"
    memory_mb: int = Field(2048, ge=512)
    kafka_heap_mb: int = Field(512, ge=128)
    extra_hosts: list[Literal["spark", "ksqldb"]] = Field(default_factory=list)
    network: str = "10.77.0.0/24"

    @field_validator("kafka_version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if value not in SUPPORTED_KAFKA_VERSIONS:
            raise ValueError(
                f"unknown Kafka version {value!r}; supported: {', '.join(SUPPORTED_KAFKA_VERSIONS)}"
            )
        return value

    @field_validator("network")
    @classmethod
    def _network(cls, value: str) -> str:
        net = ipaddress.ip_network(value, strict=True)
        if net.version != 4 or net.prefixlen > 26 or not net.is_private:
            raise ValueError("must be a private IPv4 network of /26 or larger, e.g. 10.77.0.0/24")
        return value

    @field_validator("extra_hosts")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        # Canonical order, so an extra host keeps its address however the list is written.
        return [extra for extra in EXTRA_HOSTS if extra in value]

    @model_validator(mode="after")
    def _mode_fits(self) -> Topology:
        if self.mode == "zookeeper" and self.controllers:
            raise ValueError("controllers is a KRaft setting; use controllers: 0 with zookeeper")
        return self

    # -- derived layout ---------------------------------------------------------------

    def machines(self) -> list[Machine]:
        """Every machine of the lab with its address and inventory groups."""
        net = ipaddress.ip_network(self.network)
        base = net.network_address
        out: list[Machine] = []
        zk_hosts = min(self.brokers, 3)
        for i in range(1, self.brokers + 1):
            groups = ["kafka_broker"]
            if self.mode == "zookeeper" and i <= zk_hosts:
                groups.append("zookeeper")
            out.append(Machine(f"kafka{i}", str(base + 10 + i), groups, node_id=i))
        for i in range(1, self.controllers + 1):
            out.append(
                Machine(f"controller{i}", str(base + 30 + i), ["kafka_controller"], node_id=100 + i)
            )
        for n, extra in enumerate(self.extra_hosts, start=1):
            name, groups = EXTRA_HOSTS[extra]
            out.append(Machine(name, str(base + 20 + n), list(groups)))
        return out

    def gateway(self) -> str:
        """The controller side's own address on the lab network."""
        net = ipaddress.ip_network(self.network)
        return f"{net.network_address + 1}/{net.prefixlen}"

    def check_replication_factor(self, rf: int) -> None:
        """A lab or scenario asks for a replication factor: fail early if it cannot fit."""
        if rf > self.brokers:
            raise KafkalabError(
                f"replication factor {rf} is larger than the number of brokers ({self.brokers}); "
                f"use brokers: {rf} or more in lab.yml (or --brokers {rf})"
            )


@dataclass
class Machine:
    name: str
    address: str
    groups: list[str] = field(default_factory=list)
    node_id: int | None = None


def _one_line(err: ValidationError, source: str) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "topology"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "literal_error":
            msg = f"{msg} (got {e['input']!r})"
        if e["type"] == "extra_forbidden":
            msg = "unknown setting (see lab.yml for the settings there are)"
        parts.append(f"{loc}: {msg}")
    return f"{source}: " + "; ".join(parts)


def load(
    path: Path | None = None,
    overrides: dict[str, Any] | None = None,
    base: Topology | None = None,
) -> Topology:
    """Read lab.yml (or `path`; or start from an existing lab's `base`), apply non-None
    overrides, validate. Raises KafkalabError with one line naming each bad setting."""
    path = path or repo_root() / "lab.yml"
    data: dict[str, Any] = {}
    if base is not None:
        data.update(base.model_dump())
    elif path.exists():
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise KafkalabError(f"{path}: not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise KafkalabError(f"{path}: expected a mapping of settings, e.g. 'mode: kraft'")
        data.update(loaded)
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return Topology(**data)
    except ValidationError as exc:
        raise KafkalabError(_one_line(exc, path.name)) from None
