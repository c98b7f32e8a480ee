"""The cluster topology (cluster.yml): validated before any host is touched."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kafkalab.errors import KafkalabError, validation_line
from kafkalab.paths import repo_root

Mode = Literal["kraft", "zookeeper"]
MODES: tuple[Mode, ...] = ("kraft", "zookeeper")
# 3.9 is the last Kafka line with both KRaft and ZooKeeper; 4.0 removed ZooKeeper. The 4.x
# releases here are those whose every jar the assembly needs resolves on Maven Central
# (kafkalab.artifacts.kafka). The default follows the mode: the newest 4.x for KRaft, the
# last release with ZooKeeper for ZooKeeper.
SUPPORTED_KAFKA_VERSIONS = ("3.9.0", "3.9.1", "3.9.2", "4.3.1")
ZOOKEEPER_KAFKA_VERSION = "3.9.2"
KRAFT_KAFKA_VERSION = "4.3.1"


def default_kafka_version(mode: str) -> str:
    """The release a lab of this mode gets when nothing names one."""
    return ZOOKEEPER_KAFKA_VERSION if mode == "zookeeper" else KRAFT_KAFKA_VERSION


def release(kafka_version: str) -> tuple[int, ...]:
    """A release number to compare: "3.9.2" -> (3, 9, 2); "4.0" < "4.0.1"."""
    return tuple(int(part) for part in kafka_version.split("."))


def has_zookeeper(kafka_version: str) -> bool:
    """Whether this Kafka release can run on ZooKeeper (every release before 4.0)."""
    return int(kafka_version.split(".", 1)[0]) < 4


def downgrade_refusal(old: str, new: str) -> str | None:
    """Why a lab that runs Kafka `old` cannot move to `new` (None: it can, with a rolling
    restart). A 4.x release formats and upgrades the metadata to a 4.x metadata.version,
    which no 3.x broker reads: going back below 4.0 needs new storage."""
    if has_zookeeper(new) and not has_zookeeper(old):
        return (
            f"this lab runs Kafka {old}, whose metadata version no Kafka {new} broker reads;"
            f" run `kafkalab down --purge` first (it deletes the lab's data), or keep"
            f" kafka_version: {old}"
        )
    return None


def zookeeper_refusal(kafka_version: str) -> str:
    """The one line that refuses ZooKeeper mode on a release without it."""
    return (
        f"Kafka {kafka_version} has no ZooKeeper mode (Kafka 4.0 removed ZooKeeper): use KRaft"
        f" mode, or kafka_version {ZOOKEEPER_KAFKA_VERSION} to keep ZooKeeper"
    )


# extra host -> (machine, inventory groups), cp-ansible style group names. Each has its
# own address whatever else the lab has: .21 + its place here (spark1 .21, ksql1 .22), so
# adding one to a running lab never gives it another machine's address.
EXTRA_HOSTS = {
    "spark": ("spark1", ["spark_master", "spark_worker"]),
    "ksqldb": ("ksql1", ["ksqldb"]),
}
EXTRA_HOST_OFFSET = 21
# RFC 1918: a lab network never shadows loopback, link-local or anyone's public addresses.
PRIVATE_NETWORKS = tuple(
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
)
# Ports on the host's 127.0.0.1 that kafkalab forwards into the lab (kafkalab.targets.forward):
# kafka<N> on host_kafka_port + N - 1 (advertised to clients as localhost:<that port>).
PORT_RANGE = (1024, 65535)
# The brokers' PLAINTEXT_HOST listener inside each machine, which the forwarded ports reach.
HOST_LISTENER_PORT = 29092
NETWORK_RULE = (
    "must be a private IPv4 network of /26 or larger (RFC 1918: inside 10.0.0.0/8, "
    "172.16.0.0/12 or 192.168.0.0/16), e.g. 10.77.0.0/24"
)


class Topology(BaseModel):
    """What a lab is made of. Field docs double as the error hints."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode = "kraft"
    # Counts and sizes are whole numbers as written: strict, so `true` is not 1, nor "3" 3.
    brokers: int = Field(3, ge=1, le=9, strict=True)
    controllers: int = Field(0, ge=0, le=5, strict=True)
    kafka_version: str = KRAFT_KAFKA_VERSION  # ZooKeeper mode: ZOOKEEPER_KAFKA_VERSION
    memory_mb: int = Field(2048, ge=512, strict=True)
    kafka_heap_mb: int = Field(512, ge=128, strict=True)
    extra_hosts: list[Literal["spark", "ksqldb"]] = Field(default_factory=list)
    network: str = "10.77.0.0/24"
    # Host ports (127.0.0.1) forwarded into the lab; the seeds' notebooks use these.
    host_kafka_port: int = Field(9092, ge=PORT_RANGE[0], le=PORT_RANGE[1], strict=True)
    host_spark_ui_port: int = Field(8080, ge=PORT_RANGE[0], le=PORT_RANGE[1], strict=True)
    host_spark_job_ui_port: int = Field(4040, ge=PORT_RANGE[0], le=PORT_RANGE[1], strict=True)
    host_ksqldb_port: int = Field(8788, ge=PORT_RANGE[0], le=PORT_RANGE[1], strict=True)

    @model_validator(mode="before")
    @classmethod
    def _version_of_the_mode(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("kafka_version") is None:
            data = {**data, "kafka_version": default_kafka_version(str(data.get("mode")))}
        return data

    @field_validator("kafka_version")
    @classmethod
    def _known_version(cls, value: str, info: ValidationInfo) -> str:
        if value not in SUPPORTED_KAFKA_VERSIONS:
            raise ValueError(
                f"unknown Kafka version {value!r}; supported: {', '.join(SUPPORTED_KAFKA_VERSIONS)}"
            )
        # mode is declared first, so it is validated by now (absent when it was invalid)
        if info.data.get("mode") == "zookeeper" and not has_zookeeper(value):
            raise ValueError(zookeeper_refusal(value))
        return value

    @field_validator("kafka_heap_mb")
    @classmethod
    def _heap_fits(cls, value: int, info: ValidationInfo) -> int:
        # Half: the rest of the machine is the OS's, the JVM's own (metaspace, threads,
        # buffers), ZooKeeper's on its hosts, and the page cache Kafka reads through.
        memory = info.data.get("memory_mb")
        if memory is not None and value > memory // 2:
            raise ValueError(
                f"{value} is more than half of memory_mb ({memory}): the broker heap may take "
                f"at most half of a machine's memory; use kafka_heap_mb: {memory // 2} or less, "
                f"or memory_mb: {2 * value} or more"
            )
        return value

    @field_validator("network")
    @classmethod
    def _network(cls, value: str) -> str:
        try:
            net = ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"{exc}: {NETWORK_RULE}") from None
        if not (
            isinstance(net, ipaddress.IPv4Network)
            and net.prefixlen <= 26
            and any(net.subnet_of(private) for private in PRIVATE_NETWORKS)
        ):
            raise ValueError(NETWORK_RULE)
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

    @model_validator(mode="after")
    def _host_ports_apart(self) -> Topology:
        seen: dict[int, str] = {}
        for port, setting in self.host_ports():
            if port > PORT_RANGE[1]:
                raise ValueError(
                    f"host_kafka_port {self.host_kafka_port} + {self.brokers - 1} (one port "
                    f"per broker) passes {PORT_RANGE[1]}; use a lower host_kafka_port"
                )
            if port in seen:
                raise ValueError(
                    f"{setting} and {seen[port]} both use host port {port}; give each its own "
                    f"(host_kafka_port takes one port per broker: {self.host_kafka_port}.."
                    f"{self.host_kafka_port + self.brokers - 1})"
                )
            seen[port] = setting
        return self

    def host_ports(self) -> list[tuple[int, str]]:
        """Every host port this lab forwards, with the setting that gives it."""
        out = [(self.host_kafka_port + i, "host_kafka_port") for i in range(self.brokers)]
        if "spark" in self.extra_hosts:
            out += [(self.host_spark_ui_port, "host_spark_ui_port")]
            out += [(self.host_spark_job_ui_port, "host_spark_job_ui_port")]
        if "ksqldb" in self.extra_hosts:
            out += [(self.host_ksqldb_port, "host_ksqldb_port")]
        return out

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
        for extra in self.extra_hosts:
            name, groups = EXTRA_HOSTS[extra]
            offset = EXTRA_HOST_OFFSET + list(EXTRA_HOSTS).index(extra)
            out.append(Machine(name, str(base + offset), list(groups)))
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
                f"use brokers: {rf} or more in cluster.yml (or --brokers {rf})"
            )


@dataclass
class Machine:
    name: str
    address: str
    groups: list[str] = field(default_factory=list)
    node_id: int | None = None


UNKNOWN_SETTING = "unknown setting (see cluster.yml for the settings there are)"


def read_mapping(path: Path, source: str, what: str, shape: str) -> dict[str, Any]:
    """A YAML file of settings as a mapping (empty: {}). A missing file, a directory,
    bytes that are not UTF-8, bad YAML or another shape: one KafkalabError line that
    starts with `source`. Lab definitions (labs/*/lab.yml) are read the same way."""
    if path.is_dir():
        raise KafkalabError(f"{source}: is a directory, not a {what}")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise KafkalabError(f"{source}: no such {what}") from None
    except UnicodeDecodeError as exc:
        raise KafkalabError(
            f"{source}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise KafkalabError(f"{source}: cannot be read: {exc.strerror}") from None
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what_went_wrong = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise KafkalabError(f"{source}: not valid YAML: {where}{what_went_wrong}") from None
    except RecursionError:
        raise KafkalabError(f"{source}: not valid YAML: nested too deeply") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise KafkalabError(f"{source}: expected a mapping {shape}")
    return loaded


def load(
    path: Path | None = None,
    overrides: dict[str, Any] | None = None,
    existing: Topology | None = None,
    *,
    required: bool = False,
) -> Topology:
    """Read cluster.yml (or `path`), apply non-None overrides, validate. Raises KafkalabError
    with one line naming each bad setting.

    `existing` is the lab already there: without a `path` its settings are the start, not
    cluster.yml's. Either way it keeps its extra hosts (a union with those asked for): `up`
    adds machines and never drops a running one (`kafkalab down --purge` does).
    `required`: `path` was asked for (`-t`), so a missing file is an error, not the
    defaults."""
    given = path
    path = path or repo_root() / "cluster.yml"
    data: dict[str, Any] = {}
    if existing is not None and given is None:
        data.update(existing.model_dump())
    elif required or path.exists() or path.is_symlink():
        data.update(
            read_mapping(path, str(path), "topology file", "of settings, e.g. 'mode: kraft'")
        )
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    asked = data.get("extra_hosts", [])
    if existing is not None and isinstance(asked, list):
        data["extra_hosts"] = [*asked, *existing.extra_hosts]
    try:
        return Topology.model_validate(data)
    except ValidationError as exc:
        line = validation_line(exc, whole="topology", unknown=UNKNOWN_SETTING)
        raise KafkalabError(f"{path.name}: {line}") from None
