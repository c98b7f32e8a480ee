"""A broker that can change no ISR any more (its AlterPartition thread died, a Kafka 3.9 bug
of migrating brokers, lab 16): the script that reads its server.log, the isr_full check that
names it with its remedy, and `lab solve`'s `until` step that applies that remedy once."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.labs import checks
from kafkalab.labs.checks.base import Remedy, Verdict
from kafkalab.labs.checks.failover import isr_full
from kafkalab.labs.context import ISR_THREAD_SCRIPT, LabContext
from kafkalab.labs.definition import LabStep
from kafkalab.labs.solver import Solver

STARTED_ZK = "[2026-11-27 06:40:34,311] INFO starting (kafka.server.KafkaServer)"
STARTED_KRAFT = (
    "[2026-11-27 06:42:00,001] INFO [BrokerServer id=3] Transition from SHUTDOWN to STARTING "
    "(kafka.server.BrokerServer)"
)
DIED = (
    "[2026-11-27 06:41:08,090] ERROR [zk-broker-3-to-controller-alter-partition-channel-manager]"
    ": Error due to (kafka.server.NodeToControllerRequestThread)"
)
OTHER = "[2026-11-27 06:41:09,000] INFO [Broker id=3] something else (state.change.logger)"


def run_script(tmp_path: Path, files: dict[str, list[str]]) -> str:
    """ISR_THREAD_SCRIPT on this host, with a systemctl that gives the kafka unit's LOG_DIR."""
    logs, bin_dir = tmp_path / "logs", tmp_path / "bin"
    logs.mkdir()
    bin_dir.mkdir()
    for name, lines in files.items():
        (logs / name).write_text("".join(f"{ln}\n" for ln in lines))
    fake = bin_dir / "systemctl"
    said = f'Environment="KAFKA_HEAP_OPTS=-Xmx1g -Xms1g" LOG_DIR={logs}'  # as systemd prints it
    fake.write_text(f"#!/bin/sh\necho '{said}'\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(
        ["bash", "-c", ISR_THREAD_SCRIPT], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"server.log": [STARTED_ZK, OTHER]}, "alive"),
        ({"server.log": [STARTED_ZK, DIED, OTHER]}, "died"),
        ({"server.log": [STARTED_ZK, DIED, STARTED_ZK, OTHER]}, "alive"),  # restarted since
        ({"server.log": [STARTED_ZK, DIED, STARTED_KRAFT]}, "alive"),
        # died in the last hour's file, nothing since in this hour's
        ({"server.log.2026-11-27-06": [STARTED_ZK, DIED], "server.log": [OTHER]}, "died"),
        # an older hour's death, the broker started again since
        (
            {
                "server.log.2026-11-27-05": [DIED],
                "server.log.2026-11-27-06": [STARTED_ZK],
                "server.log": [OTHER],
            },
            "alive",
        ),
        # a death hours ago, with no start since: still dead
        (
            {
                "server.log.2026-11-27-04": [STARTED_ZK, DIED],
                "server.log.2026-11-27-05": [OTHER],
                "server.log.2026-11-27-06": [OTHER],
                "server.log": [OTHER],
            },
            "died",
        ),
        ({}, "alive"),  # no log at all
    ],
)
def test_the_script_says_whether_the_running_brokers_thread_died(tmp_path, files, said):
    assert run_script(tmp_path, files) == said


def isr_context(stuck: set[str], asked: list[list[str]]):
    parts = {
        0: SimpleNamespace(id=0, leader=3, replicas=[3, 1, 2], isrs=[3, 2]),
        1: SimpleNamespace(id=1, leader=2, replicas=[2, 3, 1], isrs=[2, 3, 1]),
        2: SimpleNamespace(id=2, leader=2, replicas=[1, 2, 3], isrs=[2, 3]),
    }

    def stopped(hosts: list[str]) -> set[str]:
        asked.append(hosts)
        return stuck & set(hosts)

    return SimpleNamespace(
        topic=lambda _name: SimpleNamespace(partitions=parts),
        brokers={1: "kafka1", 2: "kafka2", 3: "kafka3"},
        host_of=lambda node: f"kafka{node}",
        isr_changes_stopped=stopped,
    )


def test_isr_full_names_a_leader_that_can_change_no_isr_and_its_remedy():
    asked: list[list[str]] = []
    v = isr_full(isr_context({"kafka3"}, asked), checks.failover.TopicOnly(topic="payments"))  # type: ignore[arg-type]
    assert asked == [["kafka2", "kafka3"]]  # the leaders of the short partitions only
    assert v.problems[:2] == [
        "partition 0: replica 1 (kafka1) is not in the ISR (ISR: 3, 2)",
        "partition 2: replica 1 (kafka1) is not in the ISR (ISR: 2, 3)",
    ]
    assert "kafka3 leads some of them but can add no replica to an ISR" in v.problems[2]
    assert v.problems[2].endswith("restart it (sudo systemctl restart kafka on kafka3)")
    assert [(r.host, r.command) for r in v.remedies] == [("kafka3", "sudo systemctl restart kafka")]


def test_isr_full_without_a_stuck_leader_has_no_remedy():
    v = isr_full(isr_context(set(), []), checks.failover.TopicOnly(topic="payments"))  # type: ignore[arg-type]
    assert len(v.problems) == 2 and v.remedies == []


class Ctx:
    """A lab context for the solver: a check that fails until a remedy ran, and the
    machines' shell."""

    def __init__(self, fixed_after: int) -> None:
        self.ran: list[tuple[str, str]] = []
        self.fixed_after = fixed_after

    def forget_records(self) -> None:
        pass

    def sh(self, host: str, script: str, timeout: float = 60):
        self.ran.append((host, script))
        return subprocess.CompletedProcess([], 0, "restarted\n", "")


REMEDY = Remedy("kafka3", "sudo systemctl restart kafka", "kafka3 can change no ISR")


@pytest.mark.parametrize("remedy", [True, False])
def test_an_until_step_marked_remedy_applies_a_checks_remedy_once(monkeypatch, capsys, remedy):
    ctx = Ctx(fixed_after=3)
    looks = []

    def check(_ctx, _spec):
        looks.append(1)
        if ctx.ran and len(looks) > ctx.fixed_after:
            return "ISR full", Verdict()
        return "ISR full", Verdict(["partition 0: short"], remedies=[REMEDY])

    monkeypatch.setattr(checks, "run", check)
    monkeypatch.setattr("kafkalab.labs.solver.UNTIL_TICK", 0.01)
    monkeypatch.setattr(Solver, "_show_warnings", lambda self: None)
    step = LabStep.model_validate(
        {"title": "w", "until": {"kind": "isr_full", "topic": "t"}, "remedy": remedy, "timeout": 1}
    )
    if remedy:
        Solver(ctx)._until(step)  # type: ignore[arg-type]
        out = capsys.readouterr().out
        assert ctx.ran == [("kafka3", "sudo systemctl restart kafka")]  # once, not per look
        assert "kafka3$ sudo systemctl restart kafka" in out and "kafka3 can change no ISR" in out
        assert "✓ ISR full" in out
    else:
        with pytest.raises(KafkalabError, match="still not true after 1s"):
            Solver(ctx)._until(step)  # type: ignore[arg-type]
        assert ctx.ran == []


def test_a_lenient_look_at_machines_gives_nothing_for_one_that_does_not_answer(monkeypatch):
    ctx = LabContext(cluster=None, topo=None, lab=None, workdir=Path())  # type: ignore[arg-type]

    def sh(host: str, script: str, timeout: float = 60):
        if host == "kafka2":
            raise subprocess.TimeoutExpired(script, timeout)
        return subprocess.CompletedProcess([], 0, f"{host} said\n", "")

    monkeypatch.setattr(ctx, "sh", sh)
    assert ctx.sh_each(["kafka1", "kafka2"], "x", 1, lenient=True) == {
        "kafka1": "kafka1 said\n",
        "kafka2": "",
    }
    with pytest.raises(subprocess.TimeoutExpired):
        ctx.sh_each(["kafka1", "kafka2"], "x", 1)
