"""Is a machine's boot done, and done well? Asked of the machine's own systemd.

An sshd that answers is not a booted machine: systemd may still be starting units, or
have finished `degraded` with a unit failed (then logins may be refused for ever, when
the failed unit is systemd-user-sessions). kafkalab asks the machine's systemd itself,
entering the machine's namespaces from the host (as `machinectl shell` does), so the
answer needs neither ssh nor a login that the bad boot may refuse.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

# Units the cluster's roles run: a failed one is the cluster's business (a fault, a broker
# that crashed), which provisioning and `fault heal` handle, not a bad boot.
CLUSTER_SERVICES = frozenset(
    f"{unit}.service" for unit in ("kafka", "zookeeper", "spark-master", "spark-worker", "ksqldb")
)
BOOT_TIMEOUT = 180.0


class Machine(Protocol):
    name: str

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
        return {"state": self.state, "failed_units": self.failed}


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


def in_machine(pid: int, command: list[str]) -> list[str]:
    """A command line that runs `command` as root inside the machine whose PID 1 is `pid`."""
    return ["nsenter", "-t", str(pid), "-m", "-u", "-i", "-n", "-p", "--", *command]


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
            try:
                proc = subprocess.run(
                    in_machine(init, ["systemctl", "is-system-running", "--wait"]),
                    capture_output=True,
                    text=True,
                    timeout=left,
                )
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
    for listed in boot.failed[:5]:
        unit = listed.removeprefix("(waiting) ")
        tail = _run(
            init, ["journalctl", "-u", unit, "-n", str(journal_lines), "--no-pager", "-o", "cat"]
        )
        boot.journal[unit] = tail.splitlines()[-journal_lines:]
    return boot


def states(machines: Sequence[Machine], timeout: float = BOOT_TIMEOUT) -> dict[str, BootState]:
    """Every machine's boot state, waited for side by side."""
    if not machines:
        return {}
    with ThreadPoolExecutor(max_workers=len(machines)) as pool:
        found = list(pool.map(lambda m: state(m, timeout), machines))
    return {m.name: s for m, s in zip(machines, found, strict=True)}


def _run(pid: int, command: list[str]) -> str:
    try:
        proc = subprocess.run(in_machine(pid, command), capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout
