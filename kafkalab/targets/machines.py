"""Embedded machines: systemd-nspawn containers booted from the base image.

Each machine has systemd as PID 1, its own hostname, address and sshd, on the
cluster's bridge inside the cluster's network namespace. Its root is an overlay of the
shared base image; the upper dir keeps everything the machine wrote, so
`down` then `up` keeps topics and data.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import KafkalabError
from kafkalab.targets import netns, rootfs, share, ssh

# After `ip netns exec` remounts /sys, the cgroup mounts are gone; PID 1 here is
# not systemd, so nspawn neither registers nor makes its own scope. So the launcher
# mounts the two hierarchies a machine's systemd uses (cgroup2 and name=systemd) and
# moves itself into a cgroup of the machine's own, kafkalab/<netns>/<machine>, in both:
# nspawn makes the machine's cgroup namespace there. Without it every machine's systemd
# managed the same root subtree, and one machine removed the unit cgroups another was
# attaching to (219/CGROUP, a boot left `degraded` or refusing logins for ever).
# The machine's link is a veth pair kafkalab makes (cluster side on the bridge, the other
# end moved into the machine), so its names are ours and several labs run side by side.
CGROUP_MOUNTS = """mount -t tmpfs tmpfs /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/unified /sys/fs/cgroup/systemd
mount -t cgroup2 none /sys/fs/cgroup/unified
mount -t cgroup -o none,name=systemd none /sys/fs/cgroup/systemd
"""

LAUNCHER = (
    """#!/bin/sh
set -e
"""
    + CGROUP_MOUNTS
    + """for h in unified systemd; do
  mkdir -p /sys/fs/cgroup/$h/{cgroup}
  echo $$ > /sys/fs/cgroup/$h/{cgroup}/cgroup.procs
done
# No udev runs here: a read-only /sys tells nspawn not to wait for udev to take the link.
mount -o remount,ro /sys
exec systemd-nspawn --boot --register=no --keep-unit --quiet \\
  --directory={root} --machine={machine} --hostname={name} --network-interface={link} {binds}
"""
)

# Removes a machine's cgroups (deepest first) once nothing runs in them; run under
# `unshare -m`, so the mounts stay private. rmdir fails on a cgroup with processes.
CGROUP_REMOVER = (
    "set -e\n"
    + CGROUP_MOUNTS
    + """for h in unified systemd; do
  d="/sys/fs/cgroup/$h/$1"
  [ -d "$d" ] || continue
  find "$d" -depth -type d -exec rmdir {} +
  p=$(dirname "$d")
  while [ "$p" != "/sys/fs/cgroup/$h" ]; do rmdir "$p" 2>/dev/null || break; p=$(dirname "$p"); done
done
"""
)

VAGRANT_UID = 1000  # the base image's vagrant user, ssh.LOGIN_USER (images/debian-base.yml)

NETWORK_UNIT = """[Match]
Name={link}

[Network]
Address={address}/{prefix}
"""


@dataclass
class EmbeddedMachine:
    name: str
    address: str
    home: Path  # <state>/machines/<name>

    @property
    def pid_file(self) -> Path:
        return self.home / "pid"

    @property
    def root(self) -> Path:
        return self.home / "merged"

    @property
    def veth(self) -> str:
        """The lab-side end of the machine's link, on the bridge."""
        return f"kh-{self.name}"[:15]

    @property
    def link(self) -> str:
        """The machine-side end, moved into the machine at boot."""
        return f"kc-{self.name}"[:15]

    def pid(self) -> int | None:
        """The PID of this machine's nspawn (or its launcher, while booting), else None."""
        try:
            pid = int(self.pid_file.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            # Empty while the process is between two of its execs (ip netns exec ->
            # unshare -> launcher -> nspawn) or a zombie: look again before saying gone.
            for _ in range(10):
                if cmdline:
                    break
                time.sleep(0.05)
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        # From `ip netns exec` through the launcher to nspawn it is one PID (exec all the way);
        # every stage names this machine's home on its command line.
        if str(self.home).encode() in cmdline:
            return pid
        return None  # a stale file, or the PID now belongs to someone else

    def running(self) -> bool:
        return self.pid() is not None

    def prepare(self, base: Path, prefix: int, pubkey: str) -> None:
        """Mount the overlay and write what makes this machine itself."""
        for sub in ("upper", "work", "merged"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        if not os.path.ismount(self.root):
            opts = f"lowerdir={base},upperdir={self.home / 'upper'},workdir={self.home / 'work'}"
            proc = subprocess.run(
                ["mount", "-t", "overlay", "overlay", "-o", opts, str(self.root)],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise KafkalabError(f"cannot mount the root of {self.name}: {proc.stderr.strip()}")
        # Every write goes through rootfs: the machine may have made any of these a link.
        rootfs.write_text(self.root, "etc/hostname", self.name + "\n")
        rootfs.write_text(
            self.root,
            "etc/systemd/network/10-host0.network",
            NETWORK_UNIT.format(link=self.link, address=self.address, prefix=prefix),
        )
        # Its own name resolves to its cluster address (not 127.0.1.1, where nothing listens).
        line = f"{self.address} {self.name}"
        current = rootfs.read_text(self.root, "etc/hosts") or "127.0.0.1 localhost\n"
        # An address that moved (ksql1 was .21 without spark1) replaces its old line.
        kept = [ln for ln in current.splitlines() if ln.split()[1:] != [self.name] or ln == line]
        if line not in kept:
            kept.append(line)
        rootfs.write_text(self.root, "etc/hosts", "\n".join(kept) + "\n")
        rootfs.write_text(
            self.root,
            f"home/{ssh.LOGIN_USER}/.ssh/authorized_keys",
            pubkey.strip() + "\n",
            mode=0o600,
            owner=(VAGRANT_UID, VAGRANT_UID),
            dir_owner=(VAGRANT_UID, VAGRANT_UID),
        )
        # Ansible logs in as root (ssh.ansible_vars says why); people and labs as LOGIN_USER.
        rootfs.write_text(
            self.root,
            "root/.ssh/authorized_keys",
            pubkey.strip() + "\n",
            mode=0o600,
            owner=(0, 0),
            dir_owner=(0, 0),
            dir_mode=0o700,
        )

    @property
    def cgroup_file(self) -> Path:
        """Where start() notes the machine's cgroup, so that stop can remove it."""
        return self.home / "cgroup"

    def cgroup(self, ns: str) -> str:
        """This machine's own cgroup, the same path in the cgroup2 and name=systemd trees."""
        return f"kafkalab/{ns}/{self.name}"

    def remove_cgroups(self, keep_note: bool = False) -> None:
        """Remove the cgroups the launcher made (and its lab's, once empty)."""
        try:
            path = self.cgroup_file.read_text().strip()
        except FileNotFoundError:
            return
        if not path.startswith("kafkalab/") or ".." in path.split("/"):
            raise KafkalabError(f"{self.cgroup_file} does not name a kafkalab cgroup: {path!r}")
        proc = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", CGROUP_REMOVER, "sh", path],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise KafkalabError(
                f"cannot remove the cgroups of {self.name} ({path}): {proc.stderr.strip()}; "
                "is something of the machine still running?"
            )
        if not keep_note:
            self.cgroup_file.unlink()

    def shared_artifacts(self) -> Path | None:
        """The host dir this running machine sees at ARTIFACTS_ON_MACHINE (or None)."""
        return share.noted(self.home / "artifacts")

    def start(self, ns: str, artifacts: Path | None = None) -> int:
        """Boot; `artifacts` (a host dir) is shared into the machine read-only (share.bind_ro)."""
        if (pid := self.pid()) is not None:
            return pid
        if (other := _name_in_use(f"{ns}-{self.name}")) is not None:
            raise KafkalabError(
                f"a machine {self.name} of lab network {ns} already runs from {other}; "
                "stop that lab first (`kafkalab down` with its KAFKALAB_STATE)"
            )
        netns.veth_pair(ns, self.veth, self.link)
        launcher = self.home / "launch.sh"
        machine = f"{ns}-{self.name}"
        # Empty cgroups left by an unclean stop would carry the last boot's units over:
        # the ones noted last time, and any at this boot's path (its note may be lost).
        self.remove_cgroups()
        self.cgroup_file.write_text(self.cgroup(ns) + "\n")
        self.remove_cgroups(keep_note=True)
        binds = share.bind_ro(artifacts, self.home / "artifacts")
        launcher.write_text(
            LAUNCHER.format(
                **{
                    key: shlex.quote(str(value))  # a state dir may hold any character
                    for key, value in {
                        "root": self.root,
                        "machine": machine,
                        "name": self.name,
                        "link": self.link,
                        "cgroup": self.cgroup(ns),
                    }.items()
                },
                binds=binds,
            )
        )
        launcher.chmod(0o755)
        with _interrupts_deferred(), (self.home / "console.log").open("ab") as log:
            proc = subprocess.Popen(
                netns.wrap(ns, ["unshare", "-m", "--propagation", "private", str(launcher)]),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            # Written before a Ctrl-C can land: no machine runs unknown to its cluster.
            self.pid_file.write_text(f"{proc.pid}\n")
        return proc.pid

    def stop(self, timeout: float = 60) -> None:
        stop_all([self], timeout)

    def unmount(self) -> None:
        if os.path.ismount(self.root):
            subprocess.run(["umount", str(self.root)], check=False)


def stop_all(machines: list[EmbeddedMachine], timeout: float = 60) -> None:
    """Clean poweroff of all at once (SIGTERM to nspawn); SIGKILL what is not down in time."""
    pids = {m.name: (m, pid) for m in machines if (pid := m.pid()) is not None}
    for _m, pid in pids.values():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for m, pid in pids.values():
        if not _wait_gone(pid, max(1.0, deadline - time.monotonic())):
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 10)
        m.pid_file.unlink(missing_ok=True)
    for m in machines:
        if not m.running():
            m.remove_cgroups()


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) until the block is done, then raise it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        if callable(previous):
            previous(signal.SIGINT, None)
        raise KeyboardInterrupt


def _name_in_use(name: str) -> str | None:
    """The root dir of a running nspawn machine with this name, if any (names are global)."""
    flag = f"--machine={name}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"systemd-nspawn") and flag in args:
            root = next((a for a in args if a.startswith(b"--directory=")), b"")
            return root.decode(errors="replace").removeprefix("--directory=")
    return None


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            waited, _ = os.waitpid(pid, os.WNOHANG)
            if waited == pid:
                return True
        except ChildProcessError:
            pass  # not our child: poll /proc instead
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.2)
    return False
