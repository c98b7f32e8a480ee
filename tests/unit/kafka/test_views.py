"""kafkalab.kafka.views reads kafka-python's own v7 MetadataResponse: brokers registered and
the partitions short of a leader or a full ISR."""

from __future__ import annotations

from kafka.protocol.metadata import MetadataResponse  # type: ignore[import-untyped]

from kafkalab.kafka import views


def response(
    partitions: list[tuple[int, int, int, int, list[int], list[int], list[int]]],
) -> object:
    return MetadataResponse[7](
        throttle_time_ms=0,
        brokers=[(1, "10.77.0.11", 9092, None), (2, "10.77.0.12", 9092, None)],
        cluster_id="c",
        controller_id=1,
        topics=[(0, "t", False, partitions)],
    )


def test_a_view_lists_the_brokers_and_the_short_partitions():
    view = views.parse(
        response(
            [
                (0, 0, 1, 3, [1, 2], [1, 2], []),  # whole
                (0, 1, 2, 3, [1, 2], [2], []),  # ISR short
                (0, 2, -1, 3, [1, 2], [1, 2], []),  # no leader
            ]
        )
    )
    assert view.brokers == frozenset({1, 2})
    assert view.short == ("t-1", "t-2")


def test_a_topic_view_has_each_partitions_leader_replicas_isr_and_the_controller():
    got = views.parse_topic(
        response([(0, 0, 1, 3, [1, 2], [1, 2], []), (0, 1, 2, 3, [2, 1], [2], [])]), "t"
    )
    assert got.controller == 1
    assert got.parts == {0: (1, (1, 2), (1, 2)), 1: (2, (2, 1), (2,))}
    assert views.parse_topic(response([]), "other").parts == {}
