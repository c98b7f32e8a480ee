"""`make test-vm`: lab 04 on three VMs as a learner runs it, and a failover scenario on them.

`vagrant up` in labs/04-replication-isr (its lab.yml `needs` 3 brokers), then kafkalab
from that folder with no inventory given: it finds the Vagrant lab up there by itself
(`-i` with Vagrant's inventory is checked too). Lab 04 started, its check failing, solved,
passing; then `scenario run leader-hard-bounce` and its verdict. Not in `make test` (three
VMs under TCG take most of an hour): marker vm_full, run with --vm-full.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = [pytest.mark.vm, pytest.mark.vm_full]


def test_kafkalab_finds_the_vagrant_lab_of_its_folder(lab04_vms: Any) -> None:
    status = json.loads(lab04_vms.kafkalab("lab 04: status", "status", "--json"))
    assert status["target"]["target"] == "vagrant", status["target"]
    assert status["target"]["where"] == str(lab04_vms.folder)
    assert [m["host"] for m in status["machines"]] == ["kafka1", "kafka2", "kafka3"]


def test_lab_04_start_check_solve_on_the_vms(lab04_vms: Any) -> None:
    """Started, its check fails; the reference solution (stops and starts brokers over
    ssh) makes it pass, from the folder and with `-i` Vagrant's inventory alike."""
    run = lab04_vms.kafkalab
    run("lab 04: start", "lab", "start", "04")
    assert "checks not passed yet" in run("lab 04: check (fails)", "lab", "check", "04", code=1)
    assert "lab 04 passed" in run("lab 04: solve", "lab", "solve", "04")
    assert "lab 04 passed" in run("lab 04: check (passes)", "lab", "check", "04")
    inventory = str(lab04_vms.vagrant_inventory)
    assert "lab 04 passed" in run("lab 04: check -i", "lab", "check", "04", "-i", inventory)
    run("lab 04: reset", "lab", "reset", "04")


def test_leader_hard_bounce_on_the_vms(lab04_vms: Any) -> None:
    """Partition 0's leader SIGKILLed five times over systemd/ssh while an idempotent
    acks=all producer writes: no acknowledged record lost."""
    report = lab04_vms.state / "leader-hard-bounce.json"
    out = lab04_vms.kafkalab(
        "scenario leader-hard-bounce",
        "scenario",
        "run",
        "leader-hard-bounce",
        "--report",
        str(report),
        timeout=3600,
    )
    (lab04_vms.state / "leader-hard-bounce.txt").write_text(out)
    data = json.loads(report.read_text())
    assert data["passed"], data["reasons"]
    assert data["delivery"]["lost"] == 0
    assert data["delivery"]["acked"] >= 5000
    assert len(data["recovery"]["each"]["leader_s"]) == 5, data["recovery"]
    assert "PASS" in out
