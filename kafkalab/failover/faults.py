"""Faults on a cluster's machines: kill, stop, start, pause, resume, isolate, heal.

Broker faults act on the machine's `kafka` systemd unit through a login on it. A
killed or stopped broker stays down until `start` or `heal`: before the signal a
runtime drop-in (`Restart=no`, under /run, gone at reboot) tells systemd not to
restart it. `isolate` loads nftables rules on the machine itself that drop its lab-network
traffic both ways and leave ssh open (kafkalab.failover.isolation), so it works the same on
an embedded machine, a VM or one of your own hosts, and a fault or `heal` still reaches it.
`heal` undoes every fault on every machine and is safe to run at any time.
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.failover import isolation
from kafkalab.targets.cluster import InventoryCluster

DROPIN_DIR = "/run/systemd/system/kafka.service.d"
DROPIN = f"{DROPIN_DIR}/kafkalab-fault.conf"
KAFKA_GROUPS = ("kafka_broker", "kafka_controller")
# The longest sleep, pause or wait a fault schedule or `fault pause --for` takes, in seconds.
MAX_DURATION = 3600.0

# Keep systemd from restarting the broker until `start`/`heal` removes the drop-in.
_HOLD = (
    f"sudo mkdir -p {DROPIN_DIR} && "
    f"printf '[Service]\\nRestart=no\\n' | sudo tee {DROPIN} >/dev/null && "
    "sudo systemctl daemon-reload"
)
_MUST_RUN = "systemctl is-active --quiet kafka || { echo 'kafka is not running' >&2; exit 3; }"
_WAIT_DOWN = (
    "{ for _ in $(seq 100); do systemctl is-active --quiet kafka || exit 0; sleep 0.1; done; "
    "echo 'kafka still active 10s after the signal' >&2; exit 4; }"
)
# The JVM is the unit's main process; signalling the whole cgroup fails in nspawn (EIO).
_SIGNAL = "sudo systemctl kill --kill-whom=main --signal="
_RELEASE = (
    f"if [ -e {DROPIN} ]; then sudo rm -f {DROPIN} && sudo systemctl daemon-reload; fi; "
    "sudo systemctl reset-failed kafka 2>/dev/null; true"
)
_PAUSED = (
    "pid=$(systemctl show -p MainPID --value kafka); "
    '[ "$pid" != 0 ] && ps -o stat= -p "$pid" | grep -q T'
)

SCRIPTS = {
    "kill": f"{_MUST_RUN}; {_HOLD} && {_SIGNAL}SIGKILL kafka && {_WAIT_DOWN}",
    "stop": f"{_MUST_RUN}; {_HOLD} && sudo systemctl stop kafka",
    "start": f"{_RELEASE}; systemctl is-active --quiet kafka || sudo systemctl start kafka",
    "pause": f"{_MUST_RUN}; {_SIGNAL}SIGSTOP kafka",
    "resume": f"{_MUST_RUN}; {_SIGNAL}SIGCONT kafka",
    # One pass that undoes kill, stop and pause; prints what it did.
    "heal": (
        f"if {_PAUSED}; then {_SIGNAL}SIGCONT kafka && echo resumed; fi; "
        f"held=$([ -e {DROPIN} ] && echo 1); {_RELEASE}; "
        "if ! systemctl is-active --quiet kafka; then sudo systemctl start kafka && echo started; "
        'elif [ -n "$held" ]; then echo released; fi'
    ),
}


@dataclass
class Healed:
    host: str
    actions: list[str]


def _hosts(cluster: InventoryCluster) -> dict[str, dict[str, Any]]:
    if not cluster.inventory_path.exists():
        raise KafkalabError("no lab here yet: run `kafkalab up`")
    return cluster.hosts()


def kafka_hosts(cluster: InventoryCluster) -> list[str]:
    """The cluster's hosts that run a Kafka broker or controller, in inventory order."""
    hosts = _hosts(cluster)
    return [h for h, hv in hosts.items() if any(g in KAFKA_GROUPS for g in hv["groups"])]


def _check_kafka_host(cluster: InventoryCluster, host: str) -> None:
    machine = cluster.machine(host)  # raises with the known names
    if host not in kafka_hosts(cluster):
        raise KafkalabError(f"{host} runs no Kafka broker or controller; nothing to fault there")
    if not machine.running():
        raise KafkalabError(f"machine {host} is not running: `kafkalab up` starts it")


def _remote(
    cluster: InventoryCluster, host: str, action: str, timeout: float = 60, script: str = ""
) -> str:
    """Run `script` (default: SCRIPTS[action]) on the machine; its output, or an error that
    names the action, the host and the script's last line on stderr."""
    try:
        proc = cluster.sh(host, script or SCRIPTS[action], timeout)
    except subprocess.TimeoutExpired as exc:
        raise KafkalabError(f"{action} on {host}: no answer within {timeout:.0f}s") from exc
    if proc.returncode == 255:
        raise KafkalabError(f"{action} on {host}: cannot reach it over ssh")
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise KafkalabError(f"{action} on {host}: {detail[0]}")
    return proc.stdout


def kill(cluster: InventoryCluster, host: str) -> None:
    """SIGKILL the broker; systemd leaves it down until `start` or `heal`."""
    _check_kafka_host(cluster, host)
    _remote(cluster, host, "kill")


def stop(cluster: InventoryCluster, host: str) -> None:
    """Clean shutdown (SIGTERM, controlled shutdown); returns when the broker is down."""
    _check_kafka_host(cluster, host)
    _remote(cluster, host, "stop", timeout=240)  # the unit's TimeoutStopSec is 180 s


def start(cluster: InventoryCluster, host: str) -> None:
    """Start a killed or stopped broker again (returns at once; it needs a while to join)."""
    _check_kafka_host(cluster, host)
    _remote(cluster, host, "start")


def pause(cluster: InventoryCluster, host: str) -> None:
    """SIGSTOP the broker's JVM: alive for the kernel, silent for everyone else."""
    _check_kafka_host(cluster, host)
    _remote(cluster, host, "pause")


def pause_for(cluster: InventoryCluster, host: str, seconds: float) -> float:
    """SIGSTOP the broker and SIGCONT it `seconds` later, both from one shell on the
    machine, so the machine's clock times the pause. (Resuming through a second login
    stretched it by that login's time: a few seconds on a busy host, enough to take a
    3 s pause past the broker's 9 s session timeout and have the controller fence it.)
    The machine resumes the broker by itself even if kafkalab is interrupted meanwhile.
    Returns the seconds the broker was stopped, as the machine measured them."""
    _check_kafka_host(cluster, host)
    script = (
        f"{_MUST_RUN}; trap '{_SIGNAL}SIGCONT kafka' EXIT; trap 'exit 129' HUP INT TERM; "
        f"{_SIGNAL}SIGSTOP kafka; t0=$(date +%s.%N); sleep {seconds:.3f}; "
        f"{_SIGNAL}SIGCONT kafka; t1=$(date +%s.%N); trap - EXIT; "
        'echo "$t0 $t1"'
    )
    out = _remote(cluster, host, "pause", timeout=seconds + 60, script=script).split()
    try:
        return float(out[-1]) - float(out[-2])
    except (IndexError, ValueError) as exc:
        raise KafkalabError(f"pause on {host}: unexpected answer {' '.join(out)!r}") from exc


def resume(cluster: InventoryCluster, host: str) -> None:
    """SIGCONT a paused broker."""
    _check_kafka_host(cluster, host)
    _remote(cluster, host, "resume")


def isolate(cluster: InventoryCluster, host: str) -> None:
    """Cut the machine off the lab network, both directions, with nftables rules on the
    machine (kafkalab.failover.isolation); ssh to it stays open."""
    if not cluster.machine(host).running():  # raises with the known names
        raise KafkalabError(f"machine {host} is not running: `kafkalab up` starts it")
    address = isolation.lab_address(_hosts(cluster).get(host, {}).get("kafkalab_address"), host)
    shown = _remote(cluster, host, "isolate", script=isolation.ADDRESSES)
    interface = isolation.interface_of(shown, address)
    if interface is None:
        raise KafkalabError(
            f"isolate on {host}: no interface carries its kafkalab_address {address} "
            "(`ip -o addr` on the machine): is the inventory's address the machine's?"
        )
    _remote(cluster, host, "isolate", script=isolation.isolate_script(interface))


def isolated(cluster: InventoryCluster, host: str) -> bool:
    """Whether the machine holds kafkalab's isolation table (asked over ssh); a machine
    that is not running holds none (the rules live in its kernel only)."""
    if not cluster.machine(host).running():
        return False
    return _remote(cluster, host, "isolated", script=isolation.IS_ISOLATED).strip() == "isolated"


def heal(cluster: InventoryCluster, hosts: list[str] | None = None) -> list[Healed]:
    """Undo every fault: isolation rules deleted, paused brokers resumed, stopped/killed
    ones started; one login on each machine."""
    names = hosts or [m.name for m in cluster.machines()]
    brokers = kafka_hosts(cluster)
    out: list[Healed] = []
    for name in names:
        if not cluster.machine(name).running():
            out.append(Healed(name, ["machine not running: `kafkalab up` starts it"]))
            continue
        script = isolation.RECONNECT
        if name in brokers:
            script += "\n" + SCRIPTS["heal"]
        out.append(Healed(name, _remote(cluster, name, "heal", 120, script).split()))
    return out


def parse_duration(text: str | float, most: float = MAX_DURATION) -> float:
    """Seconds from `20`, `20s`, `500ms`, `2m` (a number is seconds): above 0, at most
    `most` (an hour by default)."""
    if isinstance(text, bool):
        raise KafkalabError(f"not a duration: {text!r} (use e.g. 20s, 500ms, 2m)")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", text)
        if not m:
            raise KafkalabError(f"not a duration: {text!r} (use e.g. 20s, 500ms, 2m)")
        value, unit = float(m.group(1)), m.group(2) or "s"
        seconds = value * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]
    if not math.isfinite(seconds) or not 0 < seconds <= most:
        raise KafkalabError(
            f"duration {text!r}: give more than 0 and at most {most:g}s (e.g. 20s, 500ms, 2m)"
        )
    return seconds
