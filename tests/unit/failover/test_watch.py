"""The scenario watcher's sample is what every broker that answers says alike: a broker
behind (a stale cache after a pause) holds the sample back, a broker that stopped
answering no longer counts."""

from __future__ import annotations

from kafkalab.failover.watch import agreed
from kafkalab.kafka.views import TopicView

FULL = {0: (1, (1, 2, 3), (1, 2, 3))}
SHRUNK = {0: (1, (1, 2, 3), (1, 2))}


def test_brokers_that_agree_give_a_sample_at_the_newest_answer():
    got = agreed({"a": (10.0, TopicView(1, FULL)), "b": (10.4, TopicView(1, FULL))}, now=10.5)
    assert got == (10.4, TopicView(1, FULL))


def test_a_broker_still_on_its_old_cache_holds_the_sample_back():
    answers = {"a": (10.0, TopicView(1, SHRUNK)), "b": (10.2, TopicView(1, FULL))}
    assert agreed(answers, now=10.3) is None


def test_a_broker_that_stopped_answering_no_longer_counts():
    answers = {"a": (10.0, TopicView(1, SHRUNK)), "paused": (8.0, TopicView(1, FULL))}
    assert agreed(answers, now=10.1) == (10.0, TopicView(1, SHRUNK))
    assert agreed({"paused": (8.0, TopicView(1, FULL))}, now=10.1) is None


def test_the_controller_is_the_one_most_brokers_name():
    answers = {
        "a": (10.0, TopicView(2, FULL)),
        "b": (10.1, TopicView(2, FULL)),
        "c": (10.2, TopicView(1, FULL)),  # has not heard of the new controller yet
    }
    assert agreed(answers, now=10.3) == (10.2, TopicView(2, FULL))


def test_a_broker_that_does_not_know_the_topic_yet_is_not_an_answer():
    answers = {"a": (10.0, TopicView(1, FULL)), "new": (10.1, TopicView(1, {}))}
    assert agreed(answers, now=10.2) == (10.0, TopicView(1, FULL))
