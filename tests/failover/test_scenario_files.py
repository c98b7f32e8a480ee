"""Scenarios are data: every shipped file validates, and bad ones fail with one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.failover import faults
from kafkalab.failover import scenario as scenarios

REQUIRED = {
    "leader-clean-shutdown",
    "leader-hard-shutdown",
    "leader-hard-bounce",
    "controller-kill",
    "follower-isolated",
    "rolling-restart",
    "unclean-leader-isolated",
}


def test_the_shipped_scenarios():
    names = {s.name for s in scenarios.catalog()}
    assert names >= REQUIRED


@pytest.mark.parametrize("scenario", scenarios.catalog(), ids=lambda s: s.name)
def test_acks_all_scenarios_expect_no_loss(scenario):
    acks = scenario.producer.config["acks"]
    if acks in ("all", "-1"):
        assert scenario.expect.loss == "none"
        assert scenario.producer.config["enable.idempotence"] is True
        assert scenario.topic.replication_factor == 3
        assert scenario.topic.config["min.insync.replicas"] == "2"
    else:
        assert scenario.expect.loss == "allowed"


def test_negative_control_is_acks_1_with_unclean_election():
    s = scenarios.load("unclean-leader-isolated")
    assert s.producer.config["acks"] == "1"
    assert s.producer.config["enable.idempotence"] is False
    assert s.topic.config["unclean.leader.election.enable"] == "true"
    assert any(step.kind == "isolate" and step.arg == "leader" for step in s.schedule)


def test_a_new_scenario_is_a_file(tmp_path):
    path = tmp_path / "follower-paused.yml"
    path.write_text(
        "description: pause a follower\n"
        "schedule:\n"
        "  - pause: follower\n"
        "  - sleep: 2s\n"
        "  - resume: last\n"
        "  - wait: isr-full\n"
    )
    s = scenarios.load(str(path))
    assert s.name == "follower-paused"
    assert [step.kind for step in s.schedule] == ["pause", "sleep", "resume", "wait"]
    assert s.expect.loss == "none"  # the default
    assert s.producer.config == {"acks": "all", "enable.idempotence": True}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("schedule:\n  - explode: leader\n", "schedule.0.explode"),
        ("schedule:\n  - kill: leader\n    stop: leader\n", "exactly one of"),
        ("schedule:\n  - wait: forever\n", "schedule.0.wait"),
        ("schedule:\n  - repeat: 2\n", "take `steps:`"),
        ("schedule:\n  - kill: all\n", "target `all`"),
        ("schedule:\n  - sleep: soon\n", "not a duration"),
        ("producer: {config: {acks: 0}}\nschedule: []\n", "acks 0"),
        ("expect: {loss: maybe}\nschedule: []\n", "expect.loss"),
    ],
)
def test_bad_scenario_files_fail_with_one_line(tmp_path, body, expected):
    path = tmp_path / "bad.yml"
    path.write_text("description: bad\n" + body)
    with pytest.raises(KafkalabError) as err:
        scenarios.load(str(path))
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_lists_and_refuses_unknown_names(tmp_path):
    env = dict(os.environ, KAFKALAB_STATE=str(tmp_path / "state"), KAFKALAB_NETNS="klnoscen")
    env["COLUMNS"] = "200"

    def kafkalab(*args):
        return subprocess.run(
            [sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True, env=env
        )

    listed = kafkalab("scenario", "list")
    assert listed.returncode == 0
    for name in REQUIRED:
        assert name in listed.stdout
    shown = kafkalab("scenario", "show", "leader-hard-bounce")
    assert "repeat: 5" in shown.stdout
    unknown = kafkalab("scenario", "run", "nope")
    assert unknown.returncode == 2
    assert "no scenario named 'nope'" in unknown.stderr
    no_lab = kafkalab("scenario", "run", "controller-kill")
    assert no_lab.returncode == 2
    assert "no lab here yet" in no_lab.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    ("text", "seconds"), [("20s", 20.0), ("500ms", 0.5), ("2m", 120.0), ("3", 3.0), (1.5, 1.5)]
)
def test_durations(text, seconds):
    assert faults.parse_duration(text) == seconds


def test_a_bad_duration_says_how():
    with pytest.raises(KafkalabError, match=r"use e\.g\. 20s"):
        faults.parse_duration("20 seconds")
