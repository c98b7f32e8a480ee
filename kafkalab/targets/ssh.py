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
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from kafkalab.errors import KafkalabError
from kafkalab.targets import netns

# What every ssh of kafkalab's adds after the inventory's own options (ssh keeps the first
# value it is given): quiet, bounded waits.
QUIET = "-o LogLevel=ERROR -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
SSH_ARGS = f"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null {QUIET}"
# The user people, labs and kafkalab's own ssh log in as on the embedded machines (the base
# image's; machines.VAGRANT_UID is its uid). Ansible logs in as root (ansible_vars).
LOGIN_USER = "vagrant"
# Seconds one login of the boot wait may take (a handshake and `true`).
LOGIN_TIMEOUT = 20.0
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
    """How Ansible reaches the machines: the same key, options and socket directory.

    Ansible logs in as root: the roles' tasks run as root, and logged in as vagrant
    Mitogen starts a second interpreter on each machine through sudo (a changed=0 run of
    site.yml took 8.4-10.9 s as root, 9.9-11.9 s as vagrant, three runs each). kafkalab's
    own ssh (lab checks, `kafkalab ssh`, faults) logs in as `kafkalab_login_user`, the
    user a person has."""
    return {
        "ansible_user": "root",
        "kafkalab_login_user": LOGIN_USER,
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
    ansible_ssh_common_args, ansible_ssh_extra_args; kafkalab_login_user before
    ansible_user), sharing connections in `sockets`.
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
    user = hv.get("kafkalab_login_user") or hv.get("ansible_user")
    # ssh joins its words for the remote shell to split again: quote each one.
    return [*cmd, f"{user}@{host}" if user else host, "--", shlex.join(words)]


def login_probe(ns: str, key: Path, address: str) -> list[str]:
    """One ssh login as LOGIN_USER that runs `true`, outside the shared connections (it
    must not leave a master behind) and with ssh's own messages kept."""
    cmd = ["ssh", *SSH_ARGS.replace("LogLevel=ERROR", "LogLevel=INFO").split()]
    cmd += ["-i", str(key), "-o", "ControlPath=none", "-o", "BatchMode=yes", "-T"]
    return netns.wrap(ns, [*cmd, f"{LOGIN_USER}@{address}", "true"])


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


class BootingMachine(Protocol):
    """What the login wait needs of a machine (machines.EmbeddedMachine)."""

    @property
    def name(self) -> str: ...

    @property
    def address(self) -> str: ...

    @property
    def home(self) -> Path: ...

    def running(self) -> bool: ...


def wait_ssh(
    ns: str,
    machines: Sequence[BootingMachine],
    timeout: float = 120,
    tick: Callable[[str], None] | None = None,
    login: Callable[[Any], list[str]] | None = None,
) -> None:
    """Wait until every machine's sshd answers with its banner, from inside the cluster, and
    then, with `login` (an ssh command that runs `true`), until a login succeeds.

    A banner alone is not enough: while a machine boots, sshd already answers but PAM
    still refuses unprivileged users (/run/nologin until systemd-user-sessions has run),
    and such an ssh exits 255 with nothing on the terminal. Refused logins are written to
    the machine's ssh-probe.log."""

    def banner(m: BootingMachine) -> bool:
        try:
            with socket.create_connection((m.address, 22), timeout=1) as sock:
                sock.settimeout(2)
                return sock.recv(4).startswith(b"SSH")
        except OSError:
            return False

    def logged_in(chosen: list[BootingMachine]) -> set[str]:
        """The machines of `chosen` that let a login in: one ssh each, all at once (each
        login is a whole ssh handshake; in turn, three cost about a second). Each gets
        LOGIN_TIMEOUT from its start; one that hangs does not shorten the others'."""
        if login is None:
            return {m.name for m in chosen}
        procs: list[tuple[BootingMachine, subprocess.Popen[str]]] = []
        ok: set[str] = set()
        try:
            for m in chosen:
                proc = subprocess.Popen(
                    login(m), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                )
                procs.append((m, proc))
            deadline = time.monotonic() + LOGIN_TIMEOUT
            for m, proc in procs:
                try:
                    # a floor: one that already ended is read even after another's hang
                    _, err = proc.communicate(timeout=max(0.5, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                    said = f"no answer within {LOGIN_TIMEOUT:.0f}s"
                else:
                    if proc.returncode == 0:
                        ok.add(m.name)
                        continue
                    said = f"exit {proc.returncode}: {err.strip() or '(no message)'}"
                with (m.home / "ssh-probe.log").open("a") as log:
                    log.write(f"{time.strftime('%H:%M:%S')} {said}\n")
        finally:  # an error or Ctrl-C part way: no probe left running
            for _, proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
        return ok

    def probe() -> None:
        pending = {m.name: m for m in machines}
        answered: set[str] = set()
        deadline = time.monotonic() + timeout
        while pending:
            for name, m in list(pending.items()):
                if not m.running():
                    log = m.home / "console.log"
                    raise KafkalabError(f"machine {name} stopped while booting; see {log}")
                if name not in answered and banner(m):
                    answered.add(name)
            for name in sorted(logged_in([m for n, m in pending.items() if n in answered])):
                del pending[name]
                if tick:
                    tick(name)
            if pending and time.monotonic() > deadline:
                refused = [n for n in pending if n in answered]
                why = (
                    f" (sshd answers but refuses the login on {', '.join(refused)}: see "
                    "ssh-probe.log in their machine directories)"
                    if refused
                    else ""
                )
                raise KafkalabError(
                    f"machines not reachable over ssh after {timeout:.0f}s: "
                    f"{', '.join(pending)}{why}"
                )
            if pending:
                time.sleep(0.3)

    netns.run_in(ns, probe)
