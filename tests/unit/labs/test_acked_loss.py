"""The no_acked_loss check without a cluster: its counts from the acked file and the records
read back, and, for a duplicated record, where its copies are and who wrote them (the batch
headers of the partition's leader, read by kafkalab.failover.forensics; faked here)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalab.failover import forensics
from kafkalab.failover.forensics import Writer
from kafkalab.kafka.topics import Consumed
from kafkalab.labs.checks.failover import AckedParams, no_acked_loss


def consumed(partition: int, offset: int, value: str) -> Consumed:
    return Consumed(partition, offset, None, value, 0)


def context(tmp_path, acked: list[str], records: list[Consumed], leaders: dict[int, int]):
    (tmp_path / "acked.txt").write_text("".join(f"{a} 0 0\n" for a in acked))
    parts = {p: SimpleNamespace(id=p, leader=lead) for p, lead in leaders.items()}
    return SimpleNamespace(
        workdir=tmp_path,
        cluster="the cluster",
        records=lambda _topic: records,
        topic=lambda _name: SimpleNamespace(partitions=parts),
        host_of=lambda node: f"kafka{node}",
    )


PARAMS = AckedParams(topic="payments", acked_file="acked.txt")


@pytest.fixture
def dumps(monkeypatch):
    """read_writers faked: the writers of (host, partition), and the calls made."""
    writers: dict[tuple[str, int], dict[int, Writer]] = {}
    calls: list[tuple[str, int, list[int]]] = []

    def read(cluster, host, topic, partition, offsets):
        assert cluster == "the cluster" and topic == "payments"
        calls.append((host, partition, sorted(offsets)))
        return {o: w for o, w in writers[(host, partition)].items() if o in offsets}

    monkeypatch.setattr(forensics, "read_writers", read)
    return SimpleNamespace(writers=writers, calls=calls)


def test_counts_without_duplicates_read_no_log(tmp_path, dumps):
    ctx = context(
        tmp_path,
        ["r-0", "r-1", "r-2"],
        [consumed(0, 0, "r-0"), consumed(1, 0, "r-1")],
        {0: 1, 1: 2},
    )
    v = no_acked_loss(ctx, PARAMS)  # type: ignore[arg-type]
    assert v.facts == ["acknowledged 3, lost 1, duplicates 0"]
    assert v.problems == ["1 acknowledged record cannot be read back (lost): r-2"]
    assert dumps.calls == []


def test_a_duplicate_names_its_copies_and_the_epoch_bump_that_wrote_it(tmp_path, dumps):
    records = [consumed(2, 7, "r-0"), consumed(2, 9, "r-0"), consumed(0, 3, "r-1")]
    dumps.writers[("kafka3", 2)] = {7: Writer(5, 0, 11), 9: Writer(5, 1, 0)}
    ctx = context(tmp_path, ["r-0", "r-1"], records, {0: 1, 2: 3})
    v = no_acked_loss(ctx, PARAMS)  # type: ignore[arg-type]
    assert v.ok
    assert v.facts == [
        "acknowledged 2, lost 0, duplicates 1",
        "r-0 written 2 times: payments-2@7 (producer 5 epoch 0 seq 11), "
        f"payments-2@9 (producer 5 epoch 1 seq 0): {forensics.RESENT}",
    ]
    assert dumps.calls == [("kafka3", 2, [7, 9])]


def test_a_partition_without_a_leader_is_said_and_its_duplicates_stay_unexplained(tmp_path, dumps):
    records = [consumed(1, 4, "r-0"), consumed(1, 5, "r-0")]
    ctx = context(tmp_path, ["r-0"], records, {1: -1})
    v = no_acked_loss(ctx, PARAMS)  # type: ignore[arg-type]
    assert v.facts[1:] == [
        "r-0 written 2 times: payments-1@4, payments-1@5: unknown (writers not read from the log)",
        "partition 1 has no leader to read its log from",
    ]
    assert dumps.calls == []


def test_only_five_duplicated_records_are_read_and_the_rest_counted(tmp_path, dumps):
    records = [consumed(0, o, f"r-{o // 2}") for o in range(14)]  # r-0 .. r-6, twice each
    dumps.writers[("kafka1", 0)] = {o: Writer(8, o % 2, o // 2) for o in range(14)}
    ctx = context(tmp_path, [f"r-{i}" for i in range(7)], records, {0: 1})
    v = no_acked_loss(ctx, PARAMS)  # type: ignore[arg-type]
    assert v.facts[0] == "acknowledged 7, lost 0, duplicates 7"
    assert len(v.facts) == 7 and v.facts[-1] == "... and 2 more duplicated records"
    assert dumps.calls == [("kafka1", 0, list(range(10)))]


def test_a_log_that_cannot_be_read_leaves_the_check_passing_and_says_why(tmp_path, monkeypatch):
    def read(*_args):
        raise OSError("ssh: kafka3 is gone")

    monkeypatch.setattr(forensics, "read_writers", read)
    records = [consumed(2, 7, "r-0"), consumed(2, 9, "r-0")]
    v = no_acked_loss(context(tmp_path, ["r-0"], records, {2: 3}), PARAMS)  # type: ignore[arg-type]
    assert v.ok
    assert v.facts[-1] == "ssh: kafka3 is gone"
    assert v.facts[1].endswith("unknown (writers not read from the log)")
