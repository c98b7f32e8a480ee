"""Reading who wrote a record from kafka-dump-log.sh's batch headers, and what a duplicate's
writers say about its cause. The dump lines are from a real leader-hard-bounce run: id 15159
at offset 7107 (producer 3000, epoch 0) and again at 7108 after librdkafka bumped to epoch 1."""

from __future__ import annotations

from kafkalab.failover.forensics import Writer, cause, parse, resent_after_epoch_bump

DUMP = """\
Dumping /var/lib/kafka/data/scenario-leader-hard-bounce-20261122062925-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 7102 lastOffset: 7103 count: 2 baseSequence: 7102 lastSequence: 7103 producerId: 3000 producerEpoch: 0 partitionLeaderEpoch: 4 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 247831 CreateTime: 1795329041769 size: 97 magic: 2 compresscodec: none crc: 3437348543 isvalid: true
baseOffset: 7107 lastOffset: 7107 count: 1 baseSequence: 7107 lastSequence: 7107 producerId: 3000 producerEpoch: 0 partitionLeaderEpoch: 4 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 248165 CreateTime: 1795329041804 size: 79 magic: 2 compresscodec: none crc: 3600687430 isvalid: true
baseOffset: 7108 lastOffset: 7108 count: 1 baseSequence: 0 lastSequence: 0 producerId: 3000 producerEpoch: 1 partitionLeaderEpoch: 5 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 248244 CreateTime: 1795329041804 size: 79 magic: 2 compresscodec: none crc: 2708448004 isvalid: true
baseOffset: 7111 lastOffset: 7953 count: 843 baseSequence: 3 lastSequence: 845 producerId: 3000 producerEpoch: 1 partitionLeaderEpoch: 5 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 248420 CreateTime: 1795329050834 size: 16700 magic: 2 compresscodec: none crc: 3346240179 isvalid: true
baseOffset: 9000 lastOffset: 9001 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 6 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 260000 CreateTime: 1795329060000 size: 97 magic: 2 compresscodec: none crc: 1 isvalid: true
"""  # noqa: E501


def test_parse_finds_the_batch_of_each_offset():
    found = parse(DUMP, [7103, 7107, 7108, 7200, 9001, 5])
    assert found[7103] == Writer(3000, 0, 7103)  # second record of a two-record batch
    assert found[7107] == Writer(3000, 0, 7107)
    assert found[7108] == Writer(3000, 1, 0)
    assert found[7200] == Writer(3000, 1, 3 + 7200 - 7111)
    assert found[9001] == Writer(-1, -1, -1)  # not idempotent: no sequence
    assert 5 not in found  # not in this dump


def test_a_copy_under_a_newer_epoch_is_a_client_resend():
    found = parse(DUMP, [7107, 7108])
    copies: list[Writer | None] = [found[7107], found[7108]]
    assert resent_after_epoch_bump(copies)
    assert cause(copies) == "re-sent by the client after it bumped its producer epoch"


def test_two_copies_in_one_epoch_are_the_brokers_failure():
    copies: list[Writer | None] = [Writer(3000, 0, 7107), Writer(3000, 0, 7108)]
    assert not resent_after_epoch_bump(copies)
    assert cause(copies).startswith("same producer epoch")


def test_unknown_or_foreign_writers_never_count_as_an_epoch_bump():
    assert not resent_after_epoch_bump([Writer(3000, 0, 1), None])
    assert cause([Writer(3000, 0, 1), None]).startswith("unknown")
    assert not resent_after_epoch_bump([Writer(3000, 0, 1), Writer(3001, 1, 0)])
    assert cause([Writer(3000, 0, 1), Writer(3001, 1, 0)]) == "written by different producer ids"
    assert not resent_after_epoch_bump([Writer(-1, -1, -1), Writer(-1, -1, -1)])
    assert cause([Writer(-1, -1, -1)] * 2).startswith("not an idempotent producer")
    assert not resent_after_epoch_bump([Writer(3000, 0, 1)])
    assert not resent_after_epoch_bump([])
