"""The VM tier: a real Vagrant VM from the kafkalab box, provisioned by the Vagrantfile.

One session fixture (`vm_lab`) builds or reuses the cached box, adds it to Vagrant,
starts libvirtd/virtlogd inside network namespace `klvm` (no uplink, no NAT, no default
route) unless they already run there, brings up one KRaft broker with `vagrant up` driven
by python-vagrant, and reads back the inventory Vagrant's Ansible provisioner generated.
The session's main thread joins the namespace, so ssh, testinfra and pytest subprocesses
reach the VM; it leaves it at teardown, after `vagrant destroy`, stopping the daemons it
started (by PID) and deleting a namespace it created. Phase times go to
.kafkalab-test/vm/timings.json and the terminal summary.

With --vm-full (`make test-vm`), fixture `lab04_vms` first brings up lab 04's own
Vagrant lab (`vagrant up` in labs/04-replication-isr: 3 brokers) the same way and destroys
it before the smoke's VM comes up (tests/vm/test_lab04.py).

Environment: KAFKALAB_VM_DRIVER (default qemu: software emulation, works where KVM does
not), KAFKALAB_VM_KEEP=1 keeps the VM after the run (then `vagrant destroy` it yourself).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab import inventory, topology
from kafkalab.paths import repo_root
from kafkalab.targets import box, vagrant
from tests.conftest import until_last_user

STATE = repo_root() / ".kafkalab-test" / "vm"
BOX_NAME = os.environ.get("KAFKALAB_TEST_BOX", "kafkalab/debian12")
PREFIX = os.environ.get("KAFKALAB_TEST_NS", "kltest") + "-vm_"
# One KRaft broker: the smallest lab the roles provision, within the tier's time budget.
TOPOLOGY = {"mode": "kraft", "brokers": 1, "memory_mb": 1536, "kafka_heap_mb": 384}
TIMINGS: dict[str, float] = {}


def vm_topology() -> topology.Topology:
    return topology.load(STATE / "none.yml", overrides=TOPOLOGY)


@dataclass
class VmLab:
    """The VM lab under test: its inventories (Vagrant's and the contract-shaped copy)."""

    mode: str
    state: Path
    vagrant_inventory: Path
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def inventory_path(self) -> Path:
        return self.state / "inventory" / "hosts.yml"

    @property
    def inventory(self) -> dict[str, Any]:
        return inventory.load(self.inventory_path)

    @property
    def hosts(self) -> dict[str, dict[str, Any]]:
        return inventory.hosts(self.inventory)


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the VM tier needs root (network namespace, libvirtd)"
    if lacking := vagrant.missing():
        return f"missing {' '.join(lacking)}: run scripts/setup-vm.sh"
    if box.cached_box() is None and box.missing_tools():
        return f"cannot build the box, missing {' '.join(box.missing_tools())}"
    try:
        import vagrant as _python_vagrant  # noqa: F401
    except ImportError:
        return "python-vagrant missing: pip install python-vagrant"
    return None


def _timed(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    start = time.monotonic()
    try:
        return fn(*args, **kwargs)
    finally:
        TIMINGS[name] = round(time.monotonic() - start, 1)


@contextlib.contextmanager
def vagrant_machines(
    state: Path, root: Path, env: dict[str, str], label: str = ""
) -> Iterator[Any]:
    """Machines of the Vagrantfile in `root` up and provisioned, from the cached box, with
    libvirt inside the tier's namespace; yields python-vagrant's handle with this thread in
    that namespace. Destroys them after (unless KAFKALAB_VM_KEEP=1), also on failure or
    Ctrl-C; stops the daemons it started, by PID. Phase times go to TIMINGS, `label` first."""
    from vagrant import Vagrant, make_file_cm

    state.mkdir(parents=True, exist_ok=True)
    log = state / "vagrant.log"
    log.write_text("")
    keep = os.environ.get("KAFKALAB_VM_KEEP") == "1"
    created_ns = vagrant.ensure_netns()
    v = None
    try:
        _timed(f"{label}libvirtd", vagrant.start_libvirt, state)
        built = _timed(
            f"{label}box build (cached: ~0 s)",
            box.build,
            progress=lambda m: print(m, file=sys.stderr),
        )
        _timed(f"{label}box add (once per built box)", box.add_once, built, BOX_NAME, env, log)
        with vagrant.inside():
            v = Vagrant(root=str(root), env=env, out_cm=make_file_cm(log), err_cm=make_file_cm(log))
            _timed(f"{label}destroy leftovers", v.destroy)
            _timed(f"{label}vagrant up (boot to ssh, hostname, networks)", v.up, provision=False)
            _timed(f"{label}provision (ansible/site.yml)", v.provision)
            yield v
            if not keep:
                _timed(f"{label}vagrant destroy", v.destroy)
    except BaseException:  # also Ctrl-C: never leave a VM behind
        if v is not None and not keep:
            with vagrant.inside():
                v.destroy()
        tail = log.read_text().replace("\x1b[K", "\n").splitlines()[-30:]
        print("\n".join(tail), file=sys.stderr)
        raise
    finally:
        if not keep:
            vagrant.stop_libvirt(state)
            if created_ns:
                vagrant.delete_netns()
        STATE.mkdir(parents=True, exist_ok=True)  # lab 04 alone runs before the smoke made it
        (STATE / "timings.json").write_text(json.dumps(TIMINGS, indent=2) + "\n")


@pytest.fixture(scope="session")
def vm_lab() -> Iterator[VmLab]:
    if reason := _why_not():
        pytest.skip(reason)
    STATE.mkdir(parents=True, exist_ok=True)
    lab_file = STATE / "cluster.yml"
    lab_file.write_text(yaml.safe_dump(TOPOLOGY))
    env = vagrant.env(
        lab_file,
        STATE / ".vagrant",
        box=BOX_NAME,
        driver=os.environ.get("KAFKALAB_VM_DRIVER", "qemu"),
        prefix=PREFIX,
    )
    with until_last_user("vm_lab") as stack:  # destroyed after its last test
        yield stack.enter_context(_vm_lab_up(env))


@contextlib.contextmanager
def _vm_lab_up(env: dict[str, str]) -> Iterator[VmLab]:
    with vagrant_machines(STATE, repo_root(), env):
        lab = VmLab(
            vm_topology().mode, STATE, STATE / ".vagrant" / vagrant.GENERATED_INVENTORY, TIMINGS
        )
        vagrant.write_inventory(
            vagrant.contract_inventory(lab.vagrant_inventory), lab.inventory_path
        )
        start = time.monotonic()
        try:
            yield lab
        finally:
            TIMINGS["tests"] = round(time.monotonic() - start, 1)


# -- lab 04 on three VMs (`make test-vm`): a learner's `vagrant up` in the lab's folder --

LAB04 = repo_root() / "labs" / "04-replication-isr"
LAB04_STATE = repo_root() / ".kafkalab-test" / "vm-lab04"
# Over the root topology; lab 04's Vagrantfile adds its `needs` (3 brokers). Modest memory:
# three VMs share the machine (2 cores, TCG).
LAB04_TOPOLOGY = {"mode": "kraft", "memory_mb": 1536, "kafka_heap_mb": 384}
# What kafkalab must not inherit: it finds the Vagrant lab by its folder, as a learner's does.
NOT_FOR_KAFKALAB = (
    "KAFKALAB_STATE",
    "KAFKALAB_NETNS",
    "KAFKALAB_INVENTORY",
    "VAGRANT_CWD",
    "VAGRANT_DOTFILE_PATH",
)


@dataclass
class LabVms:
    """A lab folder whose Vagrant lab is up; `kafkalab` runs there, each call timed."""

    folder: Path
    state: Path

    @property
    def vagrant_inventory(self) -> Path:
        return self.folder / ".vagrant" / vagrant.GENERATED_INVENTORY

    def kafkalab(self, phase: str, *args: str, code: int = 0, timeout: float = 1800) -> str:
        """`kafkalab ARGS` run from the lab folder; asserts its exit code, returns stdout and
        adds its seconds to TIMINGS[phase]."""
        env = {k: v for k, v in os.environ.items() if k not in NOT_FOR_KAFKALAB}
        env.update(COLUMNS="200", KAFKALAB_STATE_HOME=str(self.state / "home"))
        argv = [sys.executable, "-m", "kafkalab", *args]
        start = time.monotonic()
        proc = subprocess.run(
            argv, cwd=self.folder, env=env, capture_output=True, text=True, timeout=timeout
        )
        TIMINGS[phase] = round(TIMINGS.get(phase, 0.0) + time.monotonic() - start, 1)
        with (self.state / "kafkalab.log").open("a") as log:
            log.write(f"$ kafkalab {' '.join(args)}  (exit {proc.returncode})\n")
            log.write(proc.stdout + proc.stderr + "\n")
        assert proc.returncode == code, f"kafkalab {' '.join(args)}:\n{proc.stdout}{proc.stderr}"
        return proc.stdout


@pytest.fixture(scope="module")
def lab04_vms() -> Iterator[LabVms]:
    """`vagrant up` in labs/04-replication-isr (3 KRaft brokers), provisioned; destroyed after.
    Module scope: down before the smoke's VM (tests/vm/test_vm.py) comes up."""
    if reason := _why_not():
        pytest.skip(reason)
    lab = LabVms(LAB04, LAB04_STATE)
    if any((lab.folder / ".vagrant" / "machines").glob("*/*/id")):
        pytest.fail(f"{lab.folder} has VMs of its own: `vagrant destroy -f` there first")
    LAB04_STATE.mkdir(parents=True, exist_ok=True)
    (LAB04_STATE / "kafkalab.log").write_text("")
    topology_file = LAB04_STATE / "cluster.yml"
    topology_file.write_text(yaml.safe_dump(LAB04_TOPOLOGY))
    env = vagrant.env(
        topology_file,
        lab.folder / ".vagrant",
        box=BOX_NAME,
        driver=os.environ.get("KAFKALAB_VM_DRIVER", "qemu"),
        prefix=os.environ.get("KAFKALAB_TEST_NS", "kltest") + "-lab04_",
        cwd=lab.folder,
    )
    with vagrant_machines(LAB04_STATE, lab.folder, env, label="lab 04: "):
        yield lab


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("VM tier timings (s)")
        for name, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{seconds:8.1f}  {name}")
        terminalreporter.write_line(f"{sum(TIMINGS.values()):8.1f}  total")
