"""The verifier's arithmetic on hand-made ack and consume logs."""

from __future__ import annotations

from kafkalab.failover.delivery import Record, check, targets


def rec(partition: int, offset: int, id_: int) -> Record:
    return Record(partition, offset, f"key-{id_ % 32}", id_)


# Ids 0..5 over two partitions, as the producer was told they landed.
ACKED = [rec(0, 0, 0), rec(1, 0, 1), rec(0, 1, 2), rec(1, 1, 3), rec(0, 2, 4), rec(1, 2, 5)]


def test_everything_read_back_once():
    d = check(ACKED, ACKED)
    assert (d.acked, d.consumed, d.lost, d.duplicates) == (6, 6, [], {})
    assert (d.out_of_order, d.moved, d.unacked_consumed) == (0, 0, 0)


def test_lost_is_acked_minus_consumed_and_lists_the_records():
    read = [r for r in ACKED if r.id not in (2, 5)]
    d = check(ACKED, read)
    assert d.acked == 6
    assert d.consumed == 4
    assert d.lost == [rec(0, 1, 2), rec(1, 2, 5)]
    assert d.duplicates == {}


def test_duplicates_are_ids_read_more_than_once():
    # A retried send written twice: id 3 at offsets 1 and 2 of partition 1, id 5 thrice.
    read = [
        rec(0, 0, 0), rec(1, 0, 1), rec(0, 1, 2), rec(1, 1, 3), rec(1, 2, 3),
        rec(0, 2, 4), rec(1, 3, 5), rec(1, 4, 5), rec(1, 5, 5),
    ]  # fmt: skip
    d = check(ACKED, read)
    assert d.lost == []
    assert d.duplicates == {3: [(1, 1), (1, 2)], 5: [(1, 3), (1, 4), (1, 5)]}
    assert d.duplicate_records == 3
    assert d.consumed == 9
    assert d.reread == 0
    assert d.out_of_order == 0  # copies are duplicates, not reordering
    assert d.moved == 1  # id 5 was acked at offset 2 of partition 1 and is not there
    assert d.as_dict()["duplicates"] == 2
    assert d.as_dict()["duplicate_positions"] == {
        "3": [[1, 1], [1, 2]],
        "5": [[1, 3], [1, 4], [1, 5]],
    }


def test_one_position_read_twice_is_a_reread_not_a_duplicate():
    # The consumer was handed offset 1 of partition 1 again (a refetch across a leader
    # change): the log holds id 3 once, so the verdict has no duplicate.
    read = [*ACKED, rec(1, 1, 3), rec(0, 0, 0)]
    d = check(ACKED, read)
    assert d.duplicates == {}
    assert d.reread == 2
    assert d.consumed == 6
    assert (d.lost, d.moved, d.out_of_order) == ([], 0, 0)


def test_a_copy_at_another_offset_is_a_duplicate_even_when_also_reread():
    read = [*ACKED, rec(1, 3, 3), rec(1, 3, 3)]
    d = check(ACKED, read)
    assert d.duplicates == {3: [(1, 1), (1, 3)]}
    assert (d.duplicate_records, d.reread, d.consumed) == (1, 1, 7)


def test_reading_in_another_order_loses_nothing():
    # The consumer interleaves partitions differently: the log order is irrelevant.
    read = list(reversed(ACKED))
    d = check(ACKED, read)
    assert d.lost == []
    assert d.out_of_order == 0


def test_reordering_in_a_partition_is_counted_not_lost():
    # id 4 was written before id 2 in partition 0 (a retry overtook it).
    acked = [rec(0, 0, 0), rec(0, 2, 2), rec(0, 1, 4)]
    d = check(acked, acked)
    assert d.lost == []
    assert d.out_of_order == 1


def test_truncated_and_overwritten_offsets():
    # Unclean election: offsets 1-2 of partition 0 were truncated; later records took them.
    acked = [rec(0, 0, 0), rec(0, 1, 2), rec(0, 2, 4), rec(0, 1, 6), rec(0, 2, 8)]
    read = [rec(0, 0, 0), rec(0, 1, 6), rec(0, 2, 8)]
    d = check(acked, read)
    assert [r.id for r in d.lost] == [2, 4]
    assert d.moved == 0
    assert d.acked == 5


def test_records_read_but_never_acked_are_reported_apart():
    read = [*ACKED, rec(0, 3, 6)]  # a send that timed out but landed
    d = check(ACKED, read)
    assert d.lost == []
    assert d.unacked_consumed == 1


def test_nothing_acked_nothing_lost():
    d = check([], [])
    assert (d.acked, d.consumed, d.lost) == (0, 0, [])


def test_consumer_targets_are_one_past_the_last_acked_offset():
    assert targets(ACKED) == {0: 3, 1: 3}
    assert targets([rec(2, 41, 7), rec(2, 9, 1)]) == {2: 42}


def test_an_ack_without_offset_counts_by_id():
    # An idempotent retry the broker already had: success, but no offset in the ack.
    acked = [rec(0, 0, 0), Record(0, -1, "key-2", 2), rec(0, 2, 4)]
    read = [rec(0, 0, 0), rec(0, 1, 2), rec(0, 2, 4)]
    d = check(acked, read)
    assert d.lost == []
    assert d.moved == 0
    assert d.acked_without_offset == 1
    assert targets(acked) == {0: -1}  # read that partition to the end of its log
    assert check(acked, read[:1] + read[2:]).lost == [Record(0, -1, "key-2", 2)]
