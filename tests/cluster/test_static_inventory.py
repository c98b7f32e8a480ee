"""The generic path (issue 12): the session's embedded machines addressed through a static
copy of their inventory, from inside their namespace, with every nspawn-specific piece of
kafkalab made to fail if anything calls it. status, exec, fault kill/heal, a lab's start,
check, solve and reset, fault isolate/heal with the ISR shrinking and expanding, and a scenario
with its verdict work as on any target (VMs, your own hosts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client import create_topic
from tests.failover.helpers import wait_isr

pytestmark = pytest.mark.cluster

# kafkalab's CLI with the embedded target's cluster, machines and boot check made to fail.
NO_EMBEDDED = """
import sys
from kafkalab.targets import boot, embedded, machines

def boom(*_a, **_k):
    raise SystemExit("nspawn-specific code called")

embedded.EmbeddedCluster.__init__ = boom
machines.EmbeddedMachine.running = machines.EmbeddedMachine.pid = boom
boot.state = boom
sys.argv = ["kafkalab", *sys.argv[1:]]
from kafkalab.cli.main import main
main()
"""


@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_a_static_inventory_of_the_machines_is_a_cluster(cluster, tmp_path: Path) -> None:
    static = tmp_path / "static.yml"
    static.write_text(cluster.inventory_path.read_text())  # no namespace in it
    env = {k: v for k, v in cluster.env.items() if k not in ("KAFKALAB_STATE", "KAFKALAB_NETNS")}
    env["KAFKALAB_STATE_HOME"] = str(tmp_path / "home")

    def kafkalab(*args: str, code: int = 0) -> str:
        argv = _with_inventory(args, static)
        proc = subprocess.run(
            [sys.executable, "-c", NO_EMBEDDED, *argv], capture_output=True, text=True, env=env
        )
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert "nspawn-specific" not in proc.stdout + proc.stderr
        return proc.stdout

    status = json.loads(kafkalab("status", "--json"))
    assert status["target"] == {
        "target": "hosts",
        "where": str(static),
        "netns": None,
        "state": status["target"]["state"],
    }
    assert {m["host"]: m["services"]["kafka"] for m in status["machines"]} == {
        "kafka1": "active",
        "kafka2": "active",
        "kafka3": "active",
    }
    assert kafkalab("exec", "kafka2", "--", "hostname").strip() == "kafka2"
    kafkalab("fault", "kill", "kafka2")
    down = json.loads(kafkalab("status", "--json"))["machines"][1]
    assert down["host"] == "kafka2" and down["services"]["kafka"] != "active"
    assert "kafka2: started" in kafkalab("fault", "heal")
    kafkalab("lab", "start", "01")  # waits until every broker is back
    assert "checks not passed yet" in kafkalab("lab", "check", "01", code=1)
    assert "lab 01 passed" in kafkalab("lab", "solve", "01")
    assert "lab 01 passed" in kafkalab("lab", "check", "01")
    kafkalab("lab", "reset", "01")
    assert "checks not passed yet" in kafkalab("lab", "check", "01", code=1)

    # isolate through nftables on the machine, ssh open; heal reconnects it
    node3 = cluster.hosts["kafka3"]["kafka_node_id"]
    create_topic(cluster.bootstrap, "static-isr", partitions=3, rf=3)
    wait_isr(cluster.bootstrap, "static-isr", node3, present=True)
    kafkalab("fault", "isolate", "kafka3")
    try:
        shrink = wait_isr(cluster.bootstrap, "static-isr", node3, present=False)
        assert kafkalab("exec", "kafka3", "--", "hostname").strip() == "kafka3"
    finally:
        healed = kafkalab("fault", "heal")
    assert "kafka3: reconnected" in healed
    expand = wait_isr(cluster.bootstrap, "static-isr", node3, present=True)
    print(f"static inventory: ISR shrank {shrink:.1f}s after isolate, full {expand:.1f}s after")

    # a scenario with its verdict: the verifier's clients run here, the faults over ssh
    report = tmp_path / "follower-isolated.json"
    out = kafkalab("scenario", "run", "follower-isolated", "--report", str(report))
    data = json.loads(report.read_text())
    assert data["passed"], (data["reasons"], out)
    assert data["delivery"]["acked"] > 0 and data["delivery"]["lost"] == 0
    assert data["recovery"]["isr_shrink_s"] is not None
    assert data["recovery"]["isr_s"] is not None


def _with_inventory(args: tuple[str, ...], static: Path) -> list[str]:
    """`-i` goes before `--` (what follows runs on the machine)."""
    at = args.index("--") if "--" in args else len(args)
    return [*args[:at], "-i", str(static), *args[at:]]
