"""A scenario file is checked whole before anything runs: targets against the lab's machines,
producer settings against an allow-list, bounded durations and counts. No cluster: the lab
is a topology and a machine list."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from kafkalab.errors import KafkalabError
from kafkalab.failover import faults, runner
from kafkalab.failover import scenario as scenarios
from kafkalab.topology import Topology

LAB = Topology(extra_hosts=["spark"])  # kafka1..3 and spark1
MACHINES = [m.name for m in LAB.machines()]
KAFKA_HOSTS = [m.name for m in LAB.machines() if "kafka_broker" in m.groups]


def scenario(tmp_path: Path, body: str, name: str = "s") -> scenarios.Scenario:
    path = tmp_path / f"{name}.yml"
    path.write_text("description: a test\n" + body)
    return scenarios.load(str(path))


def refused(tmp_path: Path, body: str) -> str:
    with pytest.raises(KafkalabError) as err:
        scenario(tmp_path, body, "bad")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("bad.yml: ")
    return message


# -- targets against the lab ---------------------------------------------------------------


def test_a_machine_the_lab_does_not_have_is_refused_before_any_step(tmp_path):
    s = scenario(
        tmp_path,
        "schedule:\n"
        "  - kill: leader\n"
        "  - start: last\n"
        "  - repeat: 2\n"
        "    steps:\n"
        "      - kill: kafka99\n",
    )
    with pytest.raises(KafkalabError) as err:
        scenarios.check_against(s, MACHINES, KAFKA_HOSTS)
    message = str(err.value)
    assert "schedule.2.steps.0.kill: no machine kafka99 in this lab" in message
    assert "kafka1, kafka2, kafka3, spark1" in message
    assert "nothing was run" in message
    assert "\n" not in message


def test_broker_faults_need_a_kafka_host_and_isolate_takes_any_machine(tmp_path):
    s = scenario(tmp_path, "schedule:\n  - kill: spark1\n")
    with pytest.raises(KafkalabError, match="spark1 runs no Kafka broker or controller"):
        scenarios.check_against(s, MACHINES, KAFKA_HOSTS)
    ok = scenario(
        tmp_path, "schedule:\n  - isolate: spark1\n  - heal: spark1\n  - kill: kafka2\n", "ok"
    )
    scenarios.check_against(ok, MACHINES, KAFKA_HOSTS)


def test_every_problem_is_listed_on_one_line(tmp_path):
    s = scenario(tmp_path, "schedule:\n  - stop: kafka7\n  - isolate: zk1\n")
    with pytest.raises(KafkalabError) as err:
        scenarios.check_against(s, MACHINES, KAFKA_HOSTS)
    assert "schedule.0.stop: no machine kafka7" in str(err.value)
    assert "schedule.1.isolate: no machine zk1" in str(err.value)


@pytest.mark.parametrize("s", scenarios.catalog(), ids=lambda s: s.name)
def test_shipped_scenarios_fit_the_default_lab(s):
    names = [m.name for m in Topology().machines()]
    scenarios.check_against(s, names, names)


class FakeLab:
    """What runner.preflight asks of a cluster, with machines that all run."""

    def __init__(self, tmp_path: Path, started: list[Any] | None = None) -> None:
        self.name = "klfake"
        self.inventory_path = tmp_path / "hosts.yml"
        self.inventory_path.write_text("{}\n")
        self.started = [] if started is None else started

    def layout(self) -> Topology:
        return LAB

    def run(self, fn: Any) -> None:
        self.started.append(fn)

    def machines(self) -> list[Any]:
        return [SimpleNamespace(name=n, running=lambda: True) for n in MACHINES]


def test_a_run_with_an_unknown_machine_stops_before_the_producer_and_any_fault(
    tmp_path, monkeypatch
):
    started = []
    monkeypatch.setattr(faults, "kafka_hosts", lambda lab: KAFKA_HOSTS)
    monkeypatch.setattr(runner, "Runner", lambda *a, **kw: started.append(a))
    s = scenario(tmp_path, "schedule:\n  - kill: leader\n  - kill: kafka99\n")
    with pytest.raises(KafkalabError, match="no machine kafka99"):
        runner.run(FakeLab(tmp_path, started), s)  # type: ignore[arg-type]
    assert started == []
    # the same lab passes with a machine it has
    good = scenario(tmp_path, "schedule:\n  - kill: leader\n  - kill: kafka3\n", "good")
    assert runner.preflight(FakeLab(tmp_path), good) is LAB  # type: ignore[arg-type]


# -- targets checked for form when the file is read -------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("schedule:\n  - kill: 'kafka1; rm -rf /'\n", "schedule.0.kill: 'kafka1; rm -rf /' is"),
        ("schedule:\n  - stop: Kafka 1\n", "neither a machine"),
        ("schedule:\n  - start: last\n", "schedule.0.start: target `last`"),
        ("schedule:\n  - heal: last\n  - kill: leader\n", "schedule.0.heal: target `last`"),
        ("schedule:\n  - stop: current\n", "schedule.0.stop: target `current` is for for_each"),
        (
            "topic: {replication_factor: 1, config: {}}\nschedule:\n  - pause: follower\n",
            "target `follower` needs topic.replication_factor 2",
        ),
    ],
)
def test_targets_are_checked_for_form(tmp_path, body, expected):
    assert expected in refused(tmp_path, body)


def test_targets_in_play_order_pass(tmp_path):
    s = scenario(
        tmp_path,
        "schedule:\n"
        "  - repeat: 2\n"
        "    steps:\n"
        "      - kill: leader\n"
        "      - start: last\n"
        "  - for_each: broker\n"
        "    steps:\n"
        "      - stop: current\n"
        "      - start: current\n"
        "  - resume: all\n"
        "  - isolate: controller\n"
        "  - heal: all\n",
    )
    assert [w for w, _s, _f in scenarios.walk(s.schedule)] == [
        "schedule.0",
        "schedule.0.steps.0",
        "schedule.0.steps.1",
        "schedule.1",
        "schedule.1.steps.0",
        "schedule.1.steps.1",
        "schedule.2",
        "schedule.3",
        "schedule.4",
    ]


# -- producer settings ----------------------------------------------------------------------


def test_plugin_library_paths_is_refused_with_the_allowed_list(tmp_path):
    message = refused(
        tmp_path, "producer: {config: {plugin.library.paths: /tmp/evil.so}}\nschedule: []\n"
    )
    assert "producer: plugin.library.paths: not a producer setting" in message
    assert "linger.ms" in message and "delivery.timeout.ms" in message


@pytest.mark.parametrize(
    "key", ["bootstrap.servers", "ssl.ca.location", "sasl.password", "debug", "interceptors"]
)
def test_settings_outside_the_list_are_refused(tmp_path, key):
    assert f"{key}: not a producer setting" in refused(
        tmp_path, f"producer: {{config: {{{key}: x}}}}\nschedule: []\n"
    )


def test_settings_on_the_list_pass(tmp_path):
    s = scenario(
        tmp_path,
        "producer:\n"
        "  config: {acks: all, linger.ms: 20, batch.size: 16384, compression.type: lz4,\n"
        "           delivery.timeout.ms: 30000, max.in.flight.requests.per.connection: 5,\n"
        "           queue.buffering.max.messages: 10000, retry.backoff.ms: 50}\n"
        "schedule: []\n",
    )
    assert s.producer.config["compression.type"] == "lz4"
    assert s.producer.config["enable.idempotence"] is True


@pytest.mark.parametrize("key", scenarios.PRODUCER_SETTINGS)
def test_every_allowed_setting_is_one_librdkafka_knows(key):
    with pytest.raises(KafkaException) as err:
        Producer({"log_level": 0, key: "not-a-value-for-anything"})
    assert "No such configuration property" not in err.value.args[0].str()


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("{compression.type: zstdd}", 'Invalid value "zstdd"'),
        ("{linger.ms: -5}", "outside allowed range"),
        ("{acks: 1, enable.idempotence: true}", "`acks` must be set to `all`"),
        ("{acks: 2}", "acks 2: use acks 1 or all"),
    ],
)
def test_bad_values_are_refused_when_the_file_is_read(tmp_path, config, expected):
    assert expected in refused(tmp_path, f"producer: {{config: {config}}}\nschedule: []\n")


# -- durations and counts -----------------------------------------------------------------


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "-1", "0", "0s", "3601", "61m", "true"])
def test_sleep_is_finite_above_0_and_at_most_an_hour(tmp_path, value):
    message = refused(tmp_path, f"schedule:\n  - sleep: {value}\n")
    assert "schedule.0.sleep: " in message


@pytest.mark.parametrize("value", [".inf", ".nan", "0", "-5", "7200"])
def test_wait_timeouts_are_bounded(tmp_path, value):
    message = refused(tmp_path, f"schedule:\n  - wait: isr-full\n    timeout: {value}\n")
    assert "schedule.0.timeout: " in message


def test_durations_in_range_still_read(tmp_path):
    s = scenario(tmp_path, "schedule:\n  - sleep: 500ms\n  - wait: traffic\n    timeout: 1m\n")
    assert s.schedule[0].sleep == 0.5
    assert s.schedule[1].timeout == 60.0
    assert faults.parse_duration("60m") == 3600.0


@pytest.mark.parametrize("value", [math.inf, math.nan, 0, -1, "0ms", 3600.5])
def test_parse_duration_refuses_what_cannot_be_waited_for(value):
    with pytest.raises(KafkalabError, match="more than 0 and at most 3600s"):
        faults.parse_duration(value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("producer: {records: 0}\nschedule: []\n", "producer.records"),
        ("producer: {rate: 0}\nschedule: []\n", "producer.rate"),
        ("producer: {records: 2000000}\nschedule: []\n", "producer.records"),
    ],
)
def test_records_and_rate_in_the_file_are_above_0(tmp_path, body, expected):
    assert expected in refused(tmp_path, body)


@pytest.mark.parametrize(
    ("option", "value"), [("--records", 0), ("--records", -3), ("--rate", 0), ("--rate", 10**6)]
)
def test_records_and_rate_options_are_refused_before_the_lab_is_asked(option, value):
    with pytest.raises(KafkalabError, match=f"{option}: give a number from 1 to"):
        scenarios.check_count(option, value, 100_000)


def test_cli_refuses_records_0_with_exit_2(tmp_path):
    env = dict(os.environ, KAFKALAB_STATE=str(tmp_path / "state"), KAFKALAB_NETNS="klnoscen")
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalab", "scenario", "run", "controller-kill", "--records", "0"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2
    assert "--records: give a number from 1 to 1000000 (got 0)" in proc.stderr
    assert not (tmp_path / "state").exists()
