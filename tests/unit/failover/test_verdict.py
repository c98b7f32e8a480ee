"""The scenario verdict on hand-made results: how duplicates are judged against
`expect.duplicates`, the JSON report's shape, and the terminal summary."""

from __future__ import annotations

import pytest

from kafkalab.cli.scenario import render_result
from kafkalab.failover import delivery, traffic
from kafkalab.failover import scenario as scenarios
from kafkalab.failover.forensics import Writer
from kafkalab.failover.verdict import Result, judge, to_dict

# Ids 0..3 on partition 0; id 2 is in the log twice, at offsets 2 and 3.
Record = delivery.Record
ACKED = [Record(0, o, f"key-{o}", o) for o in range(3)] + [Record(0, 4, "key-3", 3)]
READ = [*ACKED[:3], delivery.Record(0, 3, "key-2", 2), ACKED[3]]
EPOCH_BUMP = [Writer(3000, 0, 2), Writer(3000, 1, 0)]
SAME_EPOCH = [Writer(3000, 0, 2), Writer(3000, 0, 3)]


def judged(
    name: str, writers: list[Writer | None] | None, unknown: str = "", **expect: str
) -> Result:
    scenario = scenarios.load(name)
    if expect:
        scenario = scenario.model_copy(update={"expect": scenario.expect.model_copy(update=expect)})
    result = Result(scenario, "kltest", "kraft", "t", "2026-11-22T06:00:00+00:00", 4, 100)
    result.sends = traffic.SendStats(sent=4, acked=4)
    result.delivery = delivery.check(ACKED, READ)
    if writers is not None:
        result.duplicate_writers = {2: writers}
    result.writers_unknown = unknown
    judge(result)
    return result


def test_hard_kill_scenarios_expect_only_epoch_bump_duplicates():
    for name in ("leader-hard-bounce", "leader-hard-shutdown", "controller-kill"):
        assert scenarios.load(name).expect.duplicates == "after-epoch-bump"
    assert scenarios.load("leader-clean-shutdown").expect.duplicates == "none"


def test_a_copy_under_a_newer_epoch_passes_and_is_listed(capsys: pytest.CaptureFixture[str]):
    result = judged("leader-hard-bounce", EPOCH_BUMP)
    assert result.passed, result.reasons
    data = to_dict(result)
    assert data["delivery"]["duplicates"] == 1
    assert data["duplicates"] == [
        {
            "id": 2,
            "cause": "re-sent by the client after it bumped its producer epoch",
            "copies": [
                {"partition": 0, "offset": 2, "producer_id": 3000, "epoch": 0, "sequence": 2},
                {"partition": 0, "offset": 3, "producer_id": 3000, "epoch": 1, "sequence": 0},
            ],
        }
    ]
    data["seconds"] = 1.0
    render_result(data)
    out = capsys.readouterr().out
    assert "0:2 (3000/0/2), 0:3 (3000/1/0)" in out
    words = " ".join(out.split())  # the terminal may wrap the verdict line
    assert "PASS" in words and "1 record written twice, which this scenario allows" in words


@pytest.mark.parametrize(
    ("writers", "unknown", "said"),
    [
        (SAME_EPOCH, "", "by the same producer epoch"),
        ([Writer(3000, 0, 2), None], "", "by the same producer epoch"),
        (None, "kafka-dump-log.sh on kafka1 failed: boom", "kafka-dump-log.sh on kafka1 failed"),
    ],
)
def test_a_copy_the_log_does_not_explain_fails(writers, unknown, said):
    result = judged("leader-hard-bounce", writers, unknown)
    assert not result.passed
    assert any(said in reason for reason in result.reasons), result.reasons


def test_expecting_none_fails_on_any_duplicate():
    result = judged("leader-hard-bounce", EPOCH_BUMP, duplicates="none")
    assert result.reasons == ["1 record written more than once (expected none)"]
    assert judged("leader-hard-bounce", SAME_EPOCH, duplicates="allowed").passed
