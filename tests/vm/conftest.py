"""The VM tier: a real Vagrant VM from the kafkalab box, provisioned by the Vagrantfile.

One session fixture (`vm_lab`) builds or reuses the cached box, adds it to Vagrant,
starts libvirtd/virtlogd inside network namespace `klvm` (no uplink, no NAT, no default
route) unless they already run there, brings up one KRaft broker with `vagrant up` driven
by python-vagrant, and reads back the inventory Vagrant's Ansible provisioner generated.
The session's main thread joins the namespace, so ssh, testinfra and pytest subprocesses
reach the VM; it leaves it at teardown, after `vagrant destroy`, stopping the daemons it
started (by PID) and deleting a namespace it created. Phase times go to
.kafkalab-test/vm/timings.json and the terminal summary.

Environment: KAFKALAB_VM_DRIVER (default qemu: software emulation, works where KVM does
not), KAFKALAB_VM_KEEP=1 keeps the VM after the run (then `vagrant destroy` it yourself).
"""

from __future__ import annotations

import json
import os
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


@pytest.fixture(scope="session")
def vm_lab() -> Iterator[VmLab]:
    if reason := _why_not():
        pytest.skip(reason)
    from vagrant import Vagrant, make_file_cm

    STATE.mkdir(parents=True, exist_ok=True)
    log = STATE / "vagrant.log"
    log.write_text("")
    lab_file = STATE / "cluster.yml"
    lab_file.write_text(yaml.safe_dump(TOPOLOGY))
    created_ns = vagrant.ensure_netns()
    env = vagrant.env(
        lab_file,
        STATE / ".vagrant",
        box=BOX_NAME,
        driver=os.environ.get("KAFKALAB_VM_DRIVER", "qemu"),
        prefix=PREFIX,
    )
    v = None
    try:
        _timed("libvirtd", vagrant.start_libvirt, STATE)
        built = _timed(
            "box build (cached: ~0 s)", box.build, progress=lambda m: print(m, file=sys.stderr)
        )
        _timed("box add (once per built box)", box.add_once, built, BOX_NAME, env, log)
        with vagrant.inside():
            v = Vagrant(
                root=str(repo_root()), env=env, out_cm=make_file_cm(log), err_cm=make_file_cm(log)
            )
            _timed("destroy leftovers", v.destroy)
            _timed("vagrant up (boot to ssh, hostname, networks)", v.up, provision=False)
            _timed("provision (ansible/site.yml)", v.provision)
            lab = VmLab(
                vm_topology().mode,
                STATE,
                STATE / ".vagrant" / vagrant.GENERATED_INVENTORY,
                TIMINGS,
            )
            vagrant.write_inventory(
                vagrant.contract_inventory(lab.vagrant_inventory), lab.inventory_path
            )
            start = time.monotonic()
            yield lab
            TIMINGS["tests"] = round(time.monotonic() - start, 1)
            if os.environ.get("KAFKALAB_VM_KEEP") != "1":
                _timed("vagrant destroy", v.destroy)
    except BaseException:  # also Ctrl-C: never leave a VM behind
        if v is not None and os.environ.get("KAFKALAB_VM_KEEP") != "1":
            with vagrant.inside():
                v.destroy()
        tail = log.read_text().replace("\x1b[K", "\n").splitlines()[-30:]
        print("\n".join(tail), file=sys.stderr)
        raise
    finally:
        if os.environ.get("KAFKALAB_VM_KEEP") != "1":
            vagrant.stop_libvirt(STATE)
            if created_ns:
                vagrant.delete_netns()
        (STATE / "timings.json").write_text(json.dumps(TIMINGS, indent=2) + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("VM tier timings (s)")
        for name, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{seconds:8.1f}  {name}")
        terminalreporter.write_line(f"{sum(TIMINGS.values()):8.1f}  total")
