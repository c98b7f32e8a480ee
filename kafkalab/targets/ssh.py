"""How kafkalab reaches a machine of a cluster: ssh as vagrant, inside the cluster's network
namespace, over connections shared by this cluster only (its own socket directory).

Every cluster uses the same addresses in its own namespace, so ssh connection sharing
must never cross clusters: each has its sockets under a directory of its own.
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

SSH_ARGS = (
    "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "
    "-o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
)


def control_dir(state: Path) -> Path:
    """The cluster's ssh connection-sharing sockets (never shared with another cluster).

    Unix socket paths are limited to 108 bytes and ssh appends a 40-character hash
    plus a random suffix, so the sockets live under a short per-user /tmp directory
    keyed by a hash of the cluster's state path, not inside the (possibly deep) state dir.
    """
    digest = hashlib.sha1(str(state.resolve()).encode()).hexdigest()[:12]
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


def command(
    ns: str, key: Path, sockets: Path, address: str, words: list[str], tty: bool = False
) -> list[str]:
    """An ssh call to a machine, run inside the cluster's namespace."""
    cmd = ["ssh", *SSH_ARGS.split(), "-i", str(key), "-o", "ControlMaster=auto"]
    cmd += ["-o", "ControlPersist=30s", "-o", f"ControlPath={sockets}/%C"]
    cmd += ["-t"] if tty else ["-T"]
    # ssh joins its words for the remote shell to split again: quote each one.
    cmd += [f"vagrant@{address}", "--", shlex.join(words)]
    return netns.wrap(ns, cmd)


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
