"""Is a machine's boot done, and done well? Asked of the machine's own systemd.

An sshd that answers is not a booted machine: systemd may still be starting units, or
have finished `degraded` with a unit failed (then logins may be refused for ever, when
the failed unit is systemd-user-sessions). kafkalab asks the machine's systemd itself,
entering the machine's namespaces from the host (as `machinectl shell` does), so the
answer needs neither ssh nor a login that the bad boot may refuse.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from kafkalab.errors import KafkalabError

# Units the cluster's roles run: a failed one is the cluster's business (a fault, a broker
# that crashed), which provisioning and `fault heal` handle, not a bad boot.
CLUSTER_SERVICES = frozenset(
    f"{unit}.service" for unit in ("kafka", "zookeeper", "spark-master", "spark-worker", "ksqldb")
)
BOOT_TIMEOUT = 180.0
COMMAND_TIMEOUT = 30  # seconds, for anything else asked of a machine


class Machine(Protocol):
    name: str
    home: Path

    def pid(self) -> int | None: ...


@dataclass
class BootState:
    """What the machine's systemd says: `running`, `degraded`, `starting`, ..."""

    state: str
    failed: list[str] = field(default_factory=list)  # failed units not among CLUSTER_SERVICES
    journal: dict[str, list[str]] = field(default_factory=dict)  # unit -> its last lines

    @property
    def ok(self) -> bool:
        return self.state == "running" or (self.state == "degraded" and not self.failed)

    def describe(self) -> str:
        if self.ok:
            return self.state
        lines = [self.state + (f", failed: {', '.join(self.failed)}" if self.failed else "")]
        for unit, tail in self.journal.items():
            lines += [f"    {unit}: {line}" for line in tail]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        return {"state": self.state, "failed_units": self.failed, "ok": self.ok}


def init_pid(nspawn_pid: int) -> int | None:
    """The host PID of the machine's PID 1: the child of its systemd-nspawn."""
    for task in Path(f"/proc/{nspawn_pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                status = Path(f"/proc/{child}/status").read_text()
            except OSError:
                continue
            # NSpid: <host pid> <pid inside>; the machine's own PID 1 is systemd.
            nspid = next(
                (ln.split()[1:] for ln in status.splitlines() if ln.startswith("NSpid:")), []
            )
            if nspid[-1:] == ["1"]:
                return int(child)
    return None


NOBODY = 65534


def in_machine(pid: int, command: list[str], gid: int = NOBODY, seconds: float = 0) -> list[str]:
    """A command line that runs `command` inside the machine whose PID 1 is `pid`, as the
    unprivileged user `nobody` with no capabilities (the machine's root chooses what its
    binaries are: run as the host's root they could reach the host), bounded in time by
    the machine's own `timeout` (nsenter forks: killing nsenter would leave it running)."""
    return [
        "nsenter", "-t", str(pid), "-m", "-u", "-i", "-n", "-p",
        "-S", str(NOBODY), "-G", str(gid), "--",
        "timeout", "-k", "5", str(max(1, int(seconds or COMMAND_TIMEOUT))), *command,
    ]  # fmt: skip


def state(machine: Machine, timeout: float = BOOT_TIMEOUT, journal_lines: int = 5) -> BootState:
    """Wait until the machine's boot is over (`systemctl is-system-running --wait`) and
    say how it went, with each failed unit's last journal lines."""
    deadline = time.monotonic() + timeout
    found = "starting"
    while True:
        nspawn = machine.pid()
        if nspawn is None:
            return BootState("stopped")
        init = init_pid(nspawn)
        left = deadline - time.monotonic()
        if init is not None and left > 0:
            cmd = in_machine(init, ["systemctl", "is-system-running", "--wait"], seconds=left)
            try:
                proc = _subprocess(cmd, timeout=left + 10)
                found = proc.stdout.strip() or f"unknown ({proc.stderr.strip() or 'no answer'})"
            except subprocess.TimeoutExpired:
                found = "starting"
            # Until the machine's systemd has its bus up, systemctl reaches no manager.
            if found.split()[0] not in ("offline", "unknown"):
                break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.3)
    if init is None:
        return BootState(f"{found} (no init after {timeout:.0f}s)")
    boot = BootState(found.splitlines()[-1] if found else "unknown")
    if boot.state == "running":
        return boot
    units = _run(init, ["systemctl", "list-units", "--state=failed", "--no-legend", "--plain"])
    boot.failed = [
        line.split()[0]
        for line in units.splitlines()
        if line.split() and line.split()[0] not in CLUSTER_SERVICES
    ]
    if boot.state.startswith("starting"):
        jobs = _run(init, ["systemctl", "list-jobs", "--no-legend", "--plain"])
        boot.failed += [
            f"(waiting) {line.split()[1]}" for line in jobs.splitlines() if len(line.split()) > 1
        ]
    # The journal is readable by its group: look its number up in the machine.
    group = _run(init, ["getent", "group", "systemd-journal"]).split(":")
    gid = int(group[2]) if len(group) > 2 and group[2].isdigit() else NOBODY
    for listed in boot.failed[:5]:
        unit = listed.removeprefix("(waiting) ")
        tail = _run(
            init,
            ["journalctl", "-u", unit, "-n", str(journal_lines), "--no-pager", "-o", "cat"],
            gid,
        )
        boot.journal[unit] = tail.splitlines()[-journal_lines:]
    return boot


def states(machines: Sequence[Machine], timeout: float = BOOT_TIMEOUT) -> dict[str, BootState]:
    """Every machine's boot state, waited for side by side. Daemon threads: a Ctrl-C here
    returns at once, and what they run in the machines ends by its own timeout."""
    found: dict[str, BootState] = {}

    def one(m: Machine) -> None:
        found[m.name] = state(m, timeout)

    threads = [threading.Thread(target=one, args=(m,), daemon=True) for m in machines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    missing = [m.name for m in machines if m.name not in found]
    if missing:
        raise KafkalabError(f"the boot check of {', '.join(missing)} failed: see the log above")
    return {m.name: found[m.name] for m in machines}


M = TypeVar("M", bound=Machine)


def ensure_clean(
    machines: Sequence[M],
    reboot: Callable[[list[M]], None],
    leave: Callable[[M, BootState], bool],
    progress: Callable[[str], None],
) -> None:
    """Wait for every machine's boot; one that did not boot cleanly (unless `leave` says it
    serves as it is) is reported with its failed units and journal, and rebooted once. A
    second bad boot is an error that shows both."""
    found = states(machines)
    bad = [m for m in machines if not found[m.name].ok and not leave(m, found[m.name])]
    if not bad:
        return
    for m in bad:
        progress(f"{m.name} did not boot cleanly: {found[m.name].describe()}")
    progress(f"rebooting {', '.join(m.name for m in bad)} once")
    reboot(bad)
    again = states(bad)
    still = [m for m in bad if not again[m.name].ok]
    if still:
        detail = "\n".join(
            f"  {m.name}: {again[m.name].describe()} (console: {m.home / 'console.log'})"
            for m in still
        )
        raise KafkalabError(
            f"{', '.join(m.name for m in still)} did not boot cleanly twice:\n{detail}"
        )


def _subprocess(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Its own session: a Ctrl-C in the terminal is kafkalab's, not the machine's check's."""
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, start_new_session=True
    )


def _run(pid: int, command: list[str], gid: int = NOBODY) -> str:
    try:
        proc = _subprocess(in_machine(pid, command, gid), timeout=COMMAND_TIMEOUT + 10)
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout
