"""Reading who leads the metadata (kafkalab.kafka.quorum) from the tools' own output."""

from __future__ import annotations

from kafkalab.kafka import quorum


def test_quorum_table_is_parsed():
    text = (
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
        "LastCaughtUpTimestamp\tStatus  \t\n"
        "2     \tAAAAAAAAAAAAAAAAAAAAAA\t722         \t0  \t1795308217798     \t1795308217798"
        "        \tLeader  \t\n"
        "1     \tAAAAAAAAAAAAAAAAAAAAAA\t722         \t0  \t1795308217320     \t1795308217320"
        "        \tFollower\t\n"
    )
    rows = quorum._table(text)
    assert [(r["NodeId"], r["Status"], r["Lag"]) for r in rows] == [
        ("2", "Leader", "0"),
        ("1", "Follower", "0"),
    ]


STATUS = """ClusterId:              AAAAAAAAAAAAAAAAAAAAAA
LeaderId:               2
LeaderEpoch:            7
HighWatermark:          722
CurrentVoters:          [{"id": 1, "endpoints": ["CONTROLLER://10.77.0.11:9093"]}, {"id": 2, "endpoints": ["CONTROLLER://10.77.0.12:9093"]}, {"id": 3, "endpoints": ["CONTROLLER://10.77.0.13:9093"]}]
"""  # noqa: E501
REPLICATION = (
    "NodeId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\n"
    "2\t722\t0\t1795308217798\t1795308217798\tLeader\n"
    "1\t650\t72\t1795308217320\t1795308217320\tFollower\n"
)


def test_one_reading_of_the_quorum_tool_for_labs():
    scripts: list[str] = []

    def run(script: str) -> str:
        scripts.append(script)
        return STATUS + ("---\n" + REPLICATION if "--replication" in script else "")

    quick = quorum.kraft_leader(run, "10.77.0.11:9092", lambda n: f"kafka{n}", replication=False)
    assert "--replication" not in scripts[-1]
    assert (quick.leader, quick.epoch) == ("kafka2", 7)
    now = quorum.kraft_leader(run, "10.77.0.11:9092", lambda n: f"kafka{n}")
    assert (now.leader, now.epoch) == ("kafka2", 7)
    assert now.members == {"kafka2": "Leader", "kafka1": "Follower", "kafka3": "down"}
    assert now.lagging == {"kafka1": 72}
    assert quorum.kraft_leader(lambda _script: "", "x", str).leader is None  # the tool timed out
