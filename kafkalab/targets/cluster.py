"""A cluster is an inventory: the hosts, groups and variables of an Ansible inventory of the
contract's shape (docs/DESIGN.md, "Inventory contract"), plus, optionally, the network
namespace where whatever talks to its hosts must run.

`InventoryCluster` is what labs, faults, scenarios, Spark, status and exec use: the layout
(`layout()`, rebuilt from the inventory), how to reach a host (`ssh_command`,
`login_command`, `sh`, built from the inventory's own ansible_host, ansible_port,
ansible_user, ansible_ssh_private_key_file, ansible_ssh_common_args and
ansible_ssh_extra_args, over ssh connections shared by this cluster only) and where
clients run (`run`, `join`, `wrap`: in the namespace, or here on the controller). A
target that controls its machines (the embedded one, kafkalab.targets.embedded) adds that
control; the hosts of any other inventory are assumed running (an ssh that fails says more).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kafkalab import inventory
from kafkalab.errors import KafkalabError
from kafkalab.targets import boot, hosts, netns, ssh, vagrant
from kafkalab.topology import read_mapping

T = TypeVar("T")
# Vagrant writes its inventory here, below the .vagrant folder next to the Vagrantfile.
VAGRANT_INVENTORY = vagrant.GENERATED_INVENTORY
# ssh options Ansible's connection variables set, read from the inventory.
CONNECTION = (
    "ansible_host",
    "ansible_port",
    "ansible_user",
    "kafkalab_login_user",
    "ansible_ssh_private_key_file",
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
)


class Machine(Protocol):
    """A host of a cluster as faults, labs and status see it."""

    @property
    def name(self) -> str: ...

    @property
    def address(self) -> str: ...

    def running(self) -> bool: ...


@dataclass
class Host:
    """A host of an inventory: its lab address and merged variables."""

    name: str
    address: str
    vars: dict[str, Any] = field(default_factory=dict)

    def running(self) -> bool:
        """kafkalab does not control these machines: assumed running (ssh says otherwise)."""
        return True


def state_home() -> Path:
    """Where the clusters of inventories keep their labs' progress (not the embedded one's)."""
    if env := os.environ.get("KAFKALAB_STATE_HOME"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state") / "kafkalab"


def embedded_hint(up_args: str, what: str = "") -> str:
    """How the embedded lab gets what it lacks: `kafkalab up` with these arguments."""
    return f"run `kafkalab up {up_args}`"


class InventoryCluster:
    """A running cluster known by its inventory; see the module's docstring."""

    kind = "hosts"

    def __init__(self, inventory_path: Path, ns: str | None = None, state: Path | None = None):
        self._inventory = inventory_path.expanduser().absolute()
        self.ns = ns
        self._hosts: dict[str, dict[str, Any]] | None = None
        # This cluster's labs' progress and its Spark driver's settings.
        self.state = state or state_home() / self.name

    # -- what it is ------------------------------------------------------------------------

    @property
    def inventory_path(self) -> Path:
        return self._inventory

    @property
    def where(self) -> str:
        """What the target is, for status: the inventory file (the folder for Vagrant)."""
        if self.kind == "vagrant":
            return str(vagrant_folder(self.inventory_path))
        return str(self.inventory_path)

    @property
    def name(self) -> str:
        """A short name for paths (checkpoints, progress): unique per inventory file."""
        digest = hashlib.sha1(f"{self.inventory_path}|{self.ns}".encode()).hexdigest()[:8]
        stem = self.inventory_path.stem if self.kind == "hosts" else self.where
        stem = re.sub(r"[^a-z0-9-]+", "-", Path(stem).name.lower()).strip("-")[:20] or "hosts"
        return f"{self.kind}-{stem}-{digest}"

    @property
    def control_dir(self) -> Path:
        """This cluster's ssh connection-sharing sockets (kafkalab.targets.ssh)."""
        return ssh.control_dir(f"{self.inventory_path}|{self.ns}")

    def env(self) -> dict[str, str]:
        """The environment that names this cluster to a kafkalab run as a child process (a
        lab's scripts, `kafkalab shell`): kafkalab.targets.resolve picks it again."""
        return {"KAFKALAB_INVENTORY": str(self.inventory_path)}

    def describe(self) -> dict[str, Any]:
        """Which target is in use, for status (the table's title and --json)."""
        where = {"where": self.where, "netns": self.ns, "state": str(self.state)}
        return {"target": self.kind, **where}

    def how_to_add(self, up_args: str, what: str) -> str:
        """How to give this cluster `what` it lacks (e.g. "the spark host"): on your own
        hosts, in the inventory, then `up -i`; on the embedded lab, `kafkalab up <up_args>`."""
        if self.kind == "embedded":
            return embedded_hint(up_args, what)
        return (
            f"add {what} to {self.inventory_path} (inventory/README.md), then "
            f"`kafkalab up -i {self.inventory_path}`"
        )

    # -- its hosts ---------------------------------------------------------------------------

    def hosts(self) -> dict[str, dict[str, Any]]:
        """Every host of the contract's groups, in their order, with its merged variables
        and `groups` (read once)."""
        if self._hosts is None:
            listing = read(self.inventory_path)
            self._hosts = {
                h: {**listing.hostvars[h], "groups": listing.groups_of(h)}
                for h in listing.hosts_of(*inventory.GROUPS)
            }
        return self._hosts

    def layout(self) -> inventory.Layout | None:
        """The cluster's shape from its inventory (None: there is no inventory yet)."""
        if not self.inventory_path.exists():
            return None
        return inventory.Layout.of(self.hosts(), f"inventory {self.inventory_path}")

    def machines(self) -> Sequence[Machine]:
        layout = self.layout()
        hosts = self.hosts() if layout else {}
        return [Host(m.name, m.address, hosts[m.name]) for m in (layout.hosts if layout else [])]

    def machine(self, name: str) -> Machine:
        for m in self.machines():
            if m.name == name:
                return m
        known = ", ".join(m.name for m in self.machines()) or "none (run `kafkalab up`)"
        raise KafkalabError(f"no machine named {name!r} in this lab; machines: {known}")

    def controller_address(self, toward: str) -> str:
        """The controller's own address toward a host of the cluster (where a Spark driver
        here listens for its executors): the source of the route to it."""
        proc = subprocess.run(
            self.wrap(["ip", "-o", "route", "get", toward]), capture_output=True, text=True
        )
        found = re.search(r"\bsrc (\S+)", proc.stdout)
        if proc.returncode != 0 or found is None:
            why = proc.stderr.strip() or proc.stdout.strip()
            raise KafkalabError(f"no route from here to {toward}: {why}")
        return found.group(1)

    def boot_state(self, name: str) -> boot.BootState | None:
        """How the machine booted, when the target knows (None: kafkalab does not control it)."""
        return None

    def start_machines(self, names: list[str] | None = None) -> None:
        raise KafkalabError(
            f"kafkalab does not start the machines of {self.where}: start "
            f"{', '.join(names or ['them'])} yourself"
        )

    # -- where clients run -------------------------------------------------------------------

    def wrap(self, cmd: list[str]) -> list[str]:
        """A command line that runs where the cluster's addresses are reachable."""
        return netns.wrap(self.ns, cmd) if self.ns else list(cmd)

    def run(self, fn: Callable[[], T]) -> T:
        """Run `fn` where the cluster's addresses are reachable (a thread in its namespace,
        or here); Kafka clients made in it pass the guard (kafkalab.kafka.clients)."""
        if self.ns:
            return netns.run_in(self.ns, fn)
        netns.reach_from_controller()
        return fn()

    def join(self) -> None:
        """From now on, this process talks to the cluster (the CLI's labs do)."""
        if self.ns:
            if not netns.exists(self.ns):
                raise KafkalabError(f"the lab network {self.ns} is gone: run `kafkalab up`")
            netns.enter(self.ns)
        else:
            netns.reach_from_controller()

    def check_here(self) -> None:
        """Refuse to go on from a thread that does not reach the cluster's addresses."""
        if self.ns:
            netns.require_inside(self.ns)

    # -- reaching hosts ----------------------------------------------------------------------

    def login_command(self, name: str, command: list[str]) -> list[str]:
        """Run `command` on a machine in a login shell (Kafka tools on PATH, LOG_DIR set)."""
        return self.ssh_command(name, ["bash", "-lc", shlex.join(command)])

    def sh(self, name: str, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A shell script on a machine, in a login shell, its output captured (raises
        subprocess.TimeoutExpired after `timeout` seconds)."""
        return subprocess.run(
            self.login_command(name, ["bash", "-c", script]),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def ssh_command(self, name: str, command: list[str], tty: bool = False) -> list[str]:
        """An ssh call to a host, as the inventory says Ansible reaches it, where the
        cluster's addresses are reachable."""
        self.machine(name)  # raises with the known names
        hv = self.hosts()[name]
        return self.wrap(ssh.from_vars(name, connection(hv), self.control_dir, command, tty))


def read(path: Path) -> inventory.Listing:
    """An inventory as Ansible reads it. A YAML file of the contract's flat shape (all: vars,
    children: groups of hosts and vars; what kafkalab generates, example.yml's copies) is
    read here, at once; anything else (INI such as Vagrant's, a folder, group_vars/ or
    host_vars/ beside it) through ansible-inventory (kafkalab.targets.hosts.read). A
    missing or unreadable inventory is one line."""
    beside = any((path.parent / d).is_dir() for d in ("group_vars", "host_vars"))
    if path.is_file() and path.suffix in (".yml", ".yaml") and not beside:
        data = read_mapping(path, str(path), "inventory", "with `all:` at the top")
        if _flat(data):
            return inventory.Listing.from_data(data)
    return hosts.read(path)


def _flat(data: dict[str, Any]) -> bool:
    top = data.get("all")
    if not isinstance(top, dict) or set(top) - {"vars", "children", "hosts"}:
        return False
    children = top.get("children") or {}
    return isinstance(children, dict) and all(
        isinstance(c or {}, dict) and not set(c or {}) - {"hosts", "vars"}
        for c in children.values()
    )


def connection(hv: dict[str, Any]) -> dict[str, str]:
    """A host's connection variables as plain strings (a template is refused: kafkalab
    reads values, it does not render them)."""
    out = {}
    for key in CONNECTION:
        if key in hv and hv[key] is not None:
            value = str(hv[key])
            if "{{" in value or "{%" in value:
                raise KafkalabError(f"{key}={value!r} is a template; kafkalab reads plain values")
            out[key] = value
    return out


def vagrant_folder(inventory_path: Path) -> Path:
    """The folder of the Vagrantfile whose inventory this is (.vagrant's parent)."""
    dotdir = inventory_path
    for _ in VAGRANT_INVENTORY.parts:
        dotdir = dotdir.parent
    return dotdir.parent


def is_vagrant_inventory(path: Path) -> bool:
    return path.parts[-len(VAGRANT_INVENTORY.parts) :] == VAGRANT_INVENTORY.parts


class VagrantCluster(InventoryCluster):
    """The VMs of a Vagrantfile (its generated inventory); Vagrant controls the machines."""

    kind = "vagrant"

    def how_to_add(self, up_args: str, what: str) -> str:
        return (
            f"these VMs come from the lab.yml of {self.where}: `vagrant up` in a lab folder "
            f"(labs/NN-name/) whose lab needs {what} (docs/VMS.md)"
        )

    def start_machines(self, names: list[str] | None = None) -> None:
        raise KafkalabError(
            f"kafkalab does not start Vagrant's machines: `cd {self.where} && vagrant up`"
        )
