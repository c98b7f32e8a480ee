from kafkalab.targets import provision

RECAP = """
PLAY RECAP *********************************************************************
kafka1                     : ok=31   changed=0    unreachable=0    failed=0    skipped=9    rescued=0    ignored=0
kafka2                     : ok=29   changed=2    unreachable=0    failed=0    skipped=9    rescued=0    ignored=0
kafka3                     : ok=12   changed=0    unreachable=1    failed=1    skipped=0    rescued=0    ignored=0
"""


def test_recap_counts():
    recap = provision.parse_recap(RECAP.splitlines())
    assert set(recap.hosts) == {"kafka1", "kafka2", "kafka3"}
    assert recap.changed == 2
    assert recap.failed == 2
    assert recap.hosts["kafka1"]["ok"] == 31


def test_task_lines_are_recognised():
    assert provision.TASK.match("TASK [kafka : Format KRaft storage] ****")["name"] == (
        "kafka : Format KRaft storage"
    )
    assert provision.TASK.match("RUNNING HANDLER [kafka : Restart] **")


def test_failure_detail_names_the_task_and_keeps_the_result():
    lines = [
        "TASK [kafka : Wait for the Kafka listener] ****",
        "fatal: [kafka1]: FAILED! => ",
        "    changed: false",
        "    msg: Timeout when waiting for 10.77.0.11:9092",
        "",
        "PLAY RECAP ****",
    ]
    detail = provision.failure_detail(lines)
    assert "TASK [kafka : Wait for the Kafka listener]" in detail
    assert "msg: Timeout when waiting for 10.77.0.11:9092" in detail
    assert "PLAY RECAP" not in detail
