"""Vagrant VMs on libvirt inside a network namespace of their own (VM tests, bench), and
which folder's Vagrant lab is up (`running_inventory`: kafkalab's commands talk to it).

libvirtd and virtlogd run inside namespace `klvm` (no uplink, no NAT, no default
route): the libvirt networks and bridges Vagrant creates exist only there, and so does
every address they carry. Whatever talks to the VMs (vagrant, ansible, ssh, testinfra)
joins that namespace too. The daemons kafkalab starts are recorded with their PIDs and
stopped by PID; daemons it did not start are left alone (and must be in the namespace).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root
from kafkalab.targets import netns

NETNS = os.environ.get("KAFKALAB_VM_NETNS", "klvm")
DAEMONS = ("virtlogd", "libvirtd")  # virtlogd first: libvirtd hands it the VMs' consoles
SOCKET = Path("/run/libvirt/libvirt-sock")
GENERATED_INVENTORY = Path("provisioners/ansible/inventory/vagrant_ansible_inventory")
APT_PACKAGES = (
    "vagrant",
    "vagrant-libvirt",
    "libvirt-daemon-system",
    "qemu-system-x86",
    "qemu-utils",
    "dnsmasq-base",
    "e2fsprogs",
    "fdisk",
    "mmdebstrap",
)


def missing() -> list[str]:
    """What this machine lacks to run kafkalab's VMs (empty: ready)."""
    need = {
        "vagrant": "vagrant",
        "libvirtd": "libvirt-daemon-system",
        "virtlogd": "libvirt-daemon-system",
        "qemu-system-x86_64": "qemu-system-x86",
        "qemu-img": "qemu-utils",
        "dnsmasq": "dnsmasq-base",
    }
    out = {pkg for tool, pkg in need.items() if shutil.which(tool) is None}
    plugin = Path("/usr/share/rubygems-integration/all/gems")
    if shutil.which("vagrant") and not any(plugin.glob("vagrant-libvirt-*")) and not _user_plugin():
        out.add("vagrant-libvirt")
    return sorted(out)


def _user_plugin() -> bool:
    home = Path(os.environ.get("VAGRANT_HOME", Path.home() / ".vagrant.d"))
    plugins = home / "plugins.json"
    return plugins.exists() and "vagrant-libvirt" in plugins.read_text()


# -- the namespace ----------------------------------------------------------------------


def ensure_netns(ns: str = NETNS) -> bool:
    """Create the VM namespace (loopback only); True when this call created it."""
    created = False
    if not netns.exists(ns):
        subprocess.run(["ip", "netns", "add", ns], check=True)
        created = True
    subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
    check_no_default_route(ns)
    return created


def default_routes(ns: str = NETNS) -> str:
    out = subprocess.run(
        ["ip", "-n", ns, "route", "show", "default"], capture_output=True, text=True, check=True
    ).stdout.strip()
    out6 = subprocess.run(
        ["ip", "-n", ns, "-6", "route", "show", "default"], capture_output=True, text=True
    ).stdout.strip()
    return "\n".join(r for r in (out, out6) if r)


def check_no_default_route(ns: str = NETNS) -> None:
    if routes := default_routes(ns):
        raise KafkalabError(f"namespace {ns} has a default route ({routes}); refusing to go on")


def _ns_inode(path: str | Path) -> int:
    return os.stat(path).st_ino


def in_netns(pid: int, ns: str = NETNS) -> bool:
    try:
        return _ns_inode(f"/proc/{pid}/ns/net") == _ns_inode(netns.NETNS_RUN / ns)
    except FileNotFoundError:
        return False


def inside(ns: str = NETNS) -> contextlib.AbstractContextManager[None]:
    """Run the body (and the subprocesses it starts) with this thread in `ns`; back after."""
    return netns.inside(ns)


# -- libvirtd and virtlogd ----------------------------------------------------------------


def _pid_of(name: str) -> int | None:
    """The running daemon's PID from its pid file, if that process is really it."""
    pidfile = Path(f"/run/{name}.pid")
    try:
        pid = int(pidfile.read_text().split()[0])
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ValueError, IndexError):
        return None
    return pid if comm == name else None


def start_libvirt(state: Path, ns: str = NETNS) -> dict[str, int]:
    """Start virtlogd and libvirtd inside `ns` unless they already run there.

    Returns the PIDs this call started (also written to `state`/libvirt.json, so a later
    `stop_libvirt` ends exactly those)."""
    if os.geteuid() != 0:
        raise KafkalabError("VMs need root (network namespace, libvirtd): run with sudo")
    if lacking := missing():
        raise KafkalabError(
            f"missing Debian packages: {' '.join(lacking)}; run scripts/setup-vm.sh"
        )
    ensure_netns(ns)
    started: dict[str, int] = {}
    for name in DAEMONS:
        pid = _pid_of(name)
        if pid is not None:
            if not in_netns(pid, ns):
                raise KafkalabError(
                    f"{name} (pid {pid}) runs outside network namespace {ns}: its networks would "
                    f"reach outside this machine. Stop it, then retry (kafkalab starts it in {ns})."
                )
            continue
        subprocess.run(netns.wrap(ns, [name, "-d"]), check=True)
        deadline = time.monotonic() + 30
        while (pid := _pid_of(name)) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid is None:
            raise KafkalabError(f"{name} did not start in namespace {ns}")
        started[name] = pid
    deadline = time.monotonic() + 30
    while not SOCKET.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    state.mkdir(parents=True, exist_ok=True)
    record = state / "libvirt.json"
    old = json.loads(record.read_text()) if record.exists() else {}
    record.write_text(json.dumps({**old, **started}) + "\n")
    return started


def stop_libvirt(state: Path, timeout: float = 20) -> list[str]:
    """Stop, by PID, the daemons `start_libvirt` recorded in `state` (libvirtd first)."""
    record = state / "libvirt.json"
    if not record.exists():
        return []
    pids: dict[str, int] = json.loads(record.read_text())
    stopped = []
    for name in reversed(DAEMONS):
        pid = pids.get(name)
        if pid is None or _pid_of(name) != pid:
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
        stopped.append(f"{name} ({pid})")
    record.unlink()
    return stopped


def delete_netns(ns: str = NETNS) -> None:
    """Remove the namespace once nothing of ours runs in it."""
    if netns.exists(ns):
        subprocess.run(["ip", "netns", "delete", ns], check=True)


# -- Vagrant ----------------------------------------------------------------------------


def env(
    topology_file: Path,
    dotfile: Path,
    box: str | None = None,
    driver: str | None = None,
    prefix: str | None = None,
    cwd: Path | None = None,
) -> dict[str, str]:
    """The environment for `vagrant` on the Vagrantfile in `cwd` (default: the root's, a
    lab folder's reads the lab's `needs`) with this topology."""
    out = dict(os.environ)
    out["VAGRANT_CWD"] = str(cwd or repo_root())
    out["VAGRANT_DOTFILE_PATH"] = str(dotfile)
    out["VAGRANT_DEFAULT_PROVIDER"] = "libvirt"
    out["VAGRANT_CHECKPOINT_DISABLE"] = "1"  # no version check over the network
    out["VAGRANT_NO_COLOR"] = "1"
    out["KAFKALAB_TOPOLOGY"] = str(topology_file)
    out["PATH"] = f"{Path(sys.executable).parent}:{out.get('PATH', '')}"
    if box:
        out["KAFKALAB_BOX"] = box
    if driver:
        out["KAFKALAB_VM_DRIVER"] = driver
    if prefix:
        out["KAFKALAB_VM_PREFIX"] = prefix
    return out


def describe(
    environ: dict[str, str] | None = None, vagrantfile: Path | None = None
) -> dict[str, Any]:
    """The machines and inventory the Vagrantfile defines (it prints them as JSON)."""
    environ = dict(environ or os.environ, KAFKALAB_VAGRANT_DUMP="1")
    path = vagrantfile or repo_root() / "Vagrantfile"
    ruby = shutil.which("ruby")
    if ruby is None:
        raise KafkalabError("ruby is missing (it comes with the vagrant package)")
    proc = subprocess.run(
        [ruby, path.name], cwd=path.parent, env=environ, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise KafkalabError(f"{path}: {proc.stderr.strip() or proc.stdout.strip()}")
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def contract_inventory(vagrant_inventory: Path) -> dict[str, Any]:
    """Vagrant's generated inventory read back by Ansible, in the contract's YAML shape
    (all.vars, children.<group>.hosts.<host> with each host's own variables)."""
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-inventory"),
            "-i",
            str(vagrant_inventory),
            "--list",
            "--export",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(proc.stdout)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    children: dict[str, Any] = {}
    for group in data["all"].get("children", []):
        hosts = data.get(group, {}).get("hosts", [])
        if group != "ungrouped" and hosts:
            children[group] = {"hosts": {h: hostvars.get(h, {}) for h in hosts}}
    return {"all": {"vars": data["all"].get("vars", {}), "children": children}}


def write_inventory(data: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# Generated from Vagrant's inventory (kafkalab/vagrant.py): do not edit.\n"
    path.write_text(text + yaml.safe_dump(data, sort_keys=False))
    return path


# -- the Vagrant lab of a folder --------------------------------------------------------

# A machine line of the inventory Vagrant writes: `kafka1 ansible_host=... ansible_port=...`.
_MACHINE_LINE = re.compile(r"^(\S+)\s.*\bansible_host=(\S+)\s.*\bansible_port=(\d+)")


def running_inventory(start: Path, timeout: float = 1.0) -> Path | None:
    """The inventory of the Vagrant lab that is up where `start` is (the folder of the
    Vagrantfile vagrant would use there: `start` or the nearest folder above it with one),
    else None. Up: Vagrant wrote its inventory, every machine in it still exists
    (.vagrant/machines/<name>/<provider>/id; `vagrant destroy` removes it) and answers on
    its ssh port within `timeout` (a halted machine does not): no `vagrant status`."""
    here = Path(os.environ.get("VAGRANT_CWD") or start).absolute()
    folder = next((d for d in (here, *here.parents) if (d / "Vagrantfile").is_file()), None)
    if folder is None:
        return None
    dotdir = folder / Path(os.environ.get("VAGRANT_DOTFILE_PATH") or ".vagrant").expanduser()
    found = dotdir / GENERATED_INVENTORY
    try:
        lines = found.read_text().splitlines()
    except OSError:
        return None
    machines = [(m[1], m[2], int(m[3])) for line in lines if (m := _MACHINE_LINE.match(line))]
    if not machines or not all(
        any((dotdir / "machines" / n).glob("*/id")) for n, _h, _p in machines
    ):
        return None
    with ThreadPoolExecutor(max_workers=len(machines)) as pool:
        answers = pool.map(lambda m: _answers(m[1], m[2], timeout), machines)
    return found if all(answers) else None


def _answers(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
