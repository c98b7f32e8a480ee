"""How kafkalab reaches a machine of a cluster: ssh as its inventory says Ansible does
(`from_vars`), where the cluster's addresses are reachable, over connections shared by
this cluster only (its own socket directory); the embedded machines' login probe.

Every embedded cluster uses the same addresses in its own namespace, so ssh connection
sharing must never cross clusters: each has its sockets under a directory of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.targets import netns

# What every ssh of kafkalab's adds after the inventory's own options (ssh keeps the first
# value it is given): quiet, bounded waits.
QUIET = "-o LogLevel=ERROR -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
SSH_ARGS = f"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null {QUIET}"
# ansible/ansible.cfg says host_key_checking = False: kafkalab's own ssh does as its Ansible.
HOST_KEYS = "-o StrictHostKeyChecking=no"


def control_dir(owner: Path | str) -> Path:
    """A cluster's ssh connection-sharing sockets (never shared with another cluster):
    `owner` is its state dir, or what names it (its inventory and namespace).

    Unix socket paths are limited to 108 bytes and ssh appends a 40-character hash
    plus a random suffix, so the sockets live under a short per-user /tmp directory
    keyed by a hash of the owner, not inside the (possibly deep) state dir.
    """
    key = str(owner.resolve()) if isinstance(owner, Path) else owner
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    base = Path(tempfile.gettempdir()) / f"kafkalab-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    if base.stat().st_uid != os.getuid() or base.stat().st_mode & 0o077:
        raise KafkalabError(f"{base} must be a private directory owned by you (mode 700)")
    path = base / digest
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def ansible_vars(key: Path, sockets: Path) -> dict[str, Any]:
    """How Ansible reaches the machines: the same key, options and socket directory."""
    return {
        "ansible_user": "vagrant",
        "ansible_become": True,
        "ansible_ssh_private_key_file": str(key),
        "ansible_ssh_common_args": f"{SSH_ARGS} -o ControlPath={sockets}/%C",
        "ansible_control_path_dir": str(sockets / "ansible"),
    }


def from_vars(
    name: str, hv: dict[str, str], sockets: Path, words: list[str], tty: bool = False
) -> list[str]:
    """An ssh call to inventory host `name` with its connection variables (`hv`:
    ansible_host, ansible_port, ansible_user, ansible_ssh_private_key_file,
    ansible_ssh_common_args, ansible_ssh_extra_args), sharing connections in `sockets`.
    The inventory's options come first, so they win over kafkalab's (ssh keeps the first)."""
    cmd = ["ssh"]
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        cmd += shlex.split(hv.get(key, ""))
    cmd += [*HOST_KEYS.split(), *QUIET.split()]
    if "ansible_ssh_private_key_file" in hv:
        cmd += ["-i", str(Path(hv["ansible_ssh_private_key_file"]).expanduser())]
    if "ansible_port" in hv:
        cmd += ["-p", hv["ansible_port"]]
    cmd += ["-o", "ControlMaster=auto", "-o", "ControlPersist=30s"]
    cmd += ["-o", f"ControlPath={sockets}/%C"]
    cmd += ["-t"] if tty else ["-T"]
    host = hv.get("ansible_host", name)
    user = hv.get("ansible_user")
    # ssh joins its words for the remote shell to split again: quote each one.
    return [*cmd, f"{user}@{host}" if user else host, "--", shlex.join(words)]


def login_probe(ns: str, key: Path, address: str) -> list[str]:
    """One ssh login as vagrant that runs `true`, outside the shared connections (it
    must not leave a master behind) and with ssh's own messages kept."""
    cmd = ["ssh", *SSH_ARGS.replace("LogLevel=ERROR", "LogLevel=INFO").split()]
    cmd += ["-i", str(key), "-o", "ControlPath=none", "-o", "BatchMode=yes", "-T"]
    return netns.wrap(ns, [*cmd, f"vagrant@{address}", "true"])


def forget_connections(sockets: Path) -> None:
    """Drop the shared ssh connections (ours and Ansible's) of a cluster. A master
    connection to a machine that was stopped is dead, but its socket stays for its
    ControlPersist time and a new ssh would try to use it ("Data could not be sent")."""
    for sock in sockets.rglob("*"):
        if not sock.is_socket():
            continue
        # Stop the master itself: left running, it would exit later and unlink the
        # socket of the new master that took its path.
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "kafkalab-stale-master"],
                capture_output=True,
                timeout=10,
            )
        sock.unlink(missing_ok=True)
