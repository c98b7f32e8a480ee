"""The cluster's own network namespace: a bridge, no uplink, no NAT, no default route.

Everything that talks to the cluster's machines runs inside it: subprocesses through
`ip netns exec`, Python code in a thread that has joined the namespace (setns is
per thread, and threads that thread starts inherit it, librdkafka's included).

A namespace kafkalab made for a cluster has a claim, /run/kafkalab/netns/<ns>.owner (not in
/etc/netns/<ns>/, whose every file `ip netns exec` bind-mounts over /etc): the cluster's
state dir and the namespace's inode (a namespace made again after a reboot, by someone
else, is not the old claim's). Only that cluster deletes it; a namespace made by someone
else (a test harness that runs the cluster inside it) is never deleted by kafkalab.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from kafkalab.errors import KafkalabError

T = TypeVar("T")
BRIDGE = "klbr0"
CLONE_NEWNET = 0x40000000
NETNS_RUN = Path("/run/netns")
NETNS_ETC = Path("/etc/netns")
CLAIMS = Path("/run/kafkalab/netns")
# A path component, an `ip` argument and part of nspawn machine names (`<ns>-kafka1`,
# at most 64 characters): lowercase letters, digits and '-', starting with a letter.
NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")
NAME_RULE = "1 to 32 lowercase letters, digits and '-', starting with a letter"


def _ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *(["-n", ns] if ns else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise KafkalabError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip()}")
    return proc


def valid_name(ns: str) -> bool:
    return NAME.fullmatch(ns) is not None


def check_name(ns: str, source: str = "KAFKALAB_NETNS") -> str:
    """`ns` if it is a name kafkalab uses for a namespace, else one line with the rule."""
    if not valid_name(ns):
        raise KafkalabError(
            f"{source}={ns!r} is not a network namespace name kafkalab uses: "
            f"use {NAME_RULE} (e.g. kafkalab or kltest-kraft)"
        )
    return ns


def exists(ns: str) -> bool:
    return (NETNS_RUN / ns).exists()


def _inode(ns: str) -> int | None:
    try:
        return (NETNS_RUN / ns).stat().st_ino
    except OSError:
        return None


def _claim_record(ns: str) -> dict[str, object] | None:
    try:
        data = json.loads(_claim_file(ns).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def claimed(ns: str) -> bool:
    """A lab's claim is recorded for `ns` (current or left from an earlier namespace)."""
    return _claim_file(check_name(ns, "namespace")).exists()


def _claim_file(ns: str) -> Path:
    return CLAIMS / f"{ns}.owner"


def owner(ns: str) -> Path | None:
    """The state dir of the lab that made `ns`, while that very namespace exists."""
    claim = _claim_record(ns)
    inode = _inode(check_name(ns, "namespace"))
    if claim is None or inode is None or claim.get("inode") != inode:
        return None
    state = claim.get("state")
    return Path(state) if isinstance(state, str) else None


def check_ours(ns: str, saved: str | None, state: Path) -> None:
    """Refuse, before anything is touched, a namespace that is not this cluster's: a saved
    cluster keeps its own (`saved`), and another cluster's claim is never taken."""
    if saved and saved != ns:
        raise KafkalabError(
            f"this cluster runs in network namespace {saved}, KAFKALAB_NETNS names {ns}: "
            "unset KAFKALAB_NETNS, or `kafkalab down --purge` first"
        )
    other = owner(ns) if exists(ns) else None
    if other is not None and other != state.resolve():
        raise KafkalabError(
            f"network namespace {ns} belongs to the cluster at {other}: choose another "
            "KAFKALAB_NETNS for this one"
        )


def claim(ns: str, state: Path) -> None:
    """Record that the lab at `state` made `ns` (it exists): only that lab deletes it."""
    inode = _inode(check_name(ns, "namespace"))
    if inode is None:
        raise KafkalabError(f"cannot claim network namespace {ns}: it does not exist")
    CLAIMS.mkdir(parents=True, exist_ok=True, mode=0o755)
    record = {"state": str(state.resolve()), "inode": inode}
    _claim_file(ns).write_text(json.dumps(record) + "\n")


def ensure(ns: str, gateway: str, hosts: dict[str, str]) -> None:
    """Create the namespace with its bridge (idempotent) and its /etc/hosts view."""
    check_name(ns, "namespace")
    if os.geteuid() != 0:
        raise KafkalabError("kafkalab needs root for network namespaces: run it with sudo")
    if not exists(ns):
        _ip("netns", "add", ns)
    _ip("link", "set", "lo", "up", ns=ns)
    if _ip("link", "show", BRIDGE, ns=ns, check=False).returncode != 0:
        _ip("link", "add", BRIDGE, "type", "bridge", ns=ns)
    addrs = _ip("-o", "addr", "show", "dev", BRIDGE, ns=ns).stdout
    if f" {gateway} " not in addrs:
        _ip("addr", "add", gateway, "dev", BRIDGE, ns=ns)
    _ip("link", "set", BRIDGE, "up", ns=ns)
    routes = _ip("route", "show", "default", ns=ns).stdout.strip()
    if routes:  # never: the cluster has no way out, and we check rather than trust
        raise KafkalabError(f"namespace {ns} has a default route ({routes}); refusing to go on")
    write_hosts(ns, hosts)


def write_hosts(ns: str, hosts: dict[str, str]) -> None:
    """`ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts."""
    etc = NETNS_ETC / check_name(ns, "namespace")
    etc.mkdir(parents=True, exist_ok=True)
    lines = ["127.0.0.1 localhost", *(f"{addr} {name}" for name, addr in hosts.items())]
    (etc / "hosts").write_text("\n".join(lines) + "\n")


def delete(ns: str, owner_state: Path | None = None) -> bool:
    """Delete `ns` and its /etc/netns files; True when done. With `owner_state` (a
    cluster's state dir), only if that cluster made it; without (a harness removing a
    namespace it made itself), only if no cluster claims it."""
    check_name(ns, "namespace")
    made_by = owner(ns)
    mine = None if owner_state is None else owner_state.resolve()
    if exists(ns):
        if made_by != mine:
            return False
        _ip("netns", "delete", ns)
    else:  # its files stay unless they are this cluster's (or, for a harness, no cluster's)
        stale = _claim_record(ns)
        left_by = None if stale is None else stale.get("state")
        if left_by != (None if mine is None else str(mine)):
            return False
    etc = NETNS_ETC / ns
    (etc / "hosts").unlink(missing_ok=True)
    _claim_file(ns).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # gone already, or holds files that are not ours
        etc.rmdir()
    return True


def wrap(ns: str, cmd: Sequence[str]) -> list[str]:
    """A command line that runs `cmd` inside the lab namespace."""
    return ["ip", "netns", "exec", ns, *cmd]


def veth_pair(ns: str, lab_end: str, machine_end: str) -> None:
    """A fresh veth pair in `ns`: `lab_end` on the bridge and up, `machine_end` for nspawn
    to move into the machine (the pair dies with the machine's namespace)."""
    if _ip("link", "show", lab_end, ns=ns, check=False).returncode == 0:
        _ip("link", "delete", lab_end, ns=ns)
    _ip("link", "add", lab_end, "type", "veth", "peer", "name", machine_end, ns=ns)
    _ip("link", "set", lab_end, "master", BRIDGE, "up", ns=ns)


# The network namespace this process was in before it first joined a lab's (the host's):
# kept open, so a lab step can run a host command (`kafkalab up`) from inside (on_host).
_HOME: list[int] = []
_HOME_LOCK = threading.Lock()


def _setns(ns: str) -> None:
    with _HOME_LOCK:
        if not _HOME and current() is None:
            _HOME.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY))
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(NETNS_RUN / ns, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise KafkalabError(f"cannot join network namespace {ns}: {os.strerror(err)}")
    finally:
        os.close(fd)


def run_in(ns: str, fn: Callable[[], T]) -> T:
    """Run `fn` in a thread that has joined namespace `ns`; return its result or raise."""
    if not exists(ns):
        raise KafkalabError(f"the lab network {ns} does not exist: run `kafkalab up` first")
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            _setns(ns)
            result.append(fn())
        except BaseException as exc:
            error.append(exc)

    # A daemon: Ctrl-C in the caller (its join) must not wait for the work to end.
    thread = threading.Thread(target=target, name=f"netns-{ns}", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


def current() -> str | None:
    """The name of the named namespace the calling thread is in, if any."""
    try:
        here = _inode_here()
        names = list(NETNS_RUN.iterdir()) if NETNS_RUN.exists() else []
    except OSError:
        return None
    for path in names:
        try:
            if path.stat().st_ino == here:
                return path.name
        except OSError:
            continue
    return None


def _inode_here() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


_CONTROLLER = threading.Event()


def reach_from_controller() -> None:
    """This process talks to a cluster without a namespace of its own, whose addresses the
    controller reaches (VMs' private network, your own hosts, a static inventory run from
    inside a namespace): Kafka clients may be made here (kafkalab.targets.cluster)."""
    _CONTROLLER.set()


def require_inside(ns: str | None = None) -> None:
    """Refuse to go on from a thread outside the cluster's network namespace (`ns`, or any
    namespace kafkalab named), unless the process talks to a cluster reached from here
    (`reach_from_controller`). An embedded cluster's addresses exist only in its namespace;
    from the host's namespace they would be someone else's private addresses: never send a
    byte there. Every Kafka client kafkalab makes is made after this check
    (kafkalab.kafka.clients)."""
    if ns is None and _CONTROLLER.is_set():
        return
    try:
        here: int | None = _inode_here()
    except OSError:
        here = None
    inside = here is not None and here == _inode(ns) if ns else current() is not None
    if not inside:
        where = f" {ns}" if ns else ""
        raise KafkalabError(
            "refusing to talk to the lab from the host's network namespace: "
            f"run this inside the lab network{where} (netns.run_in / kafkalab shell)"
        )


def on_host(cmd: Sequence[str]) -> tuple[list[str], tuple[int, ...]]:
    """A command line (and the descriptors it must inherit) that runs `cmd` in the host's
    network namespace, where this process was before it joined a lab's: the host's own
    commands (`kafkalab up`) refuse to run inside a lab network."""
    if current() is None:
        return list(cmd), ()
    if not _HOME:
        raise KafkalabError(
            "this process started inside a lab network (kafkalab shell): run it from the "
            "host's shell, so that it can run host commands such as kafkalab up"
        )
    fd = _HOME[0]
    return ["nsenter", f"--net=/proc/self/fd/{fd}", *cmd], (fd,)


def enter(ns: str) -> None:
    """Move the calling thread (e.g. a CLI process's main thread) into `ns` for good."""
    _setns(ns)


@contextlib.contextmanager
def inside(ns: str) -> Iterator[None]:
    """Run the body (and the subprocesses and threads it starts) with the calling thread
    in `ns`, and bring the thread back to where it was afterwards, even on errors: a test
    session's later steps (downloads, other clusters) must not stay in a cluster's network."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        _setns(ns)
        yield
    finally:
        libc.setns(home, CLONE_NEWNET)
        os.close(home)
