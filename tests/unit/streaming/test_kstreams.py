"""Lab 10's counts: rides per pickup location from the CSV, the Long values of
rides-pulocation-count decoded (latest per key), and the check that compares them."""

from __future__ import annotations

import struct
from datetime import datetime
from pathlib import Path

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.labs import checks
from kafkalab.labs.checks.streams import compare_key_counts
from kafkalab.streaming import expected, kstreams
from kafkalab.streaming.expected import RideRow


def long(n: int) -> bytes:
    return struct.pack(">q", n)


def test_expected_counts_are_rides_per_pickup_location() -> None:
    t = datetime(2020, 7, 1, 8)
    rides = [RideRow(t, 186), RideRow(t, 43), RideRow(t, 186)]
    assert kstreams.expected_counts(rides) == {"186": 2, "43": 1}


def test_the_csv_has_3000_rides_over_its_locations() -> None:
    counts = kstreams.expected_counts(expected.read_rides())
    assert sum(counts.values()) == 3000
    assert all(k.isdigit() and n > 0 for k, n in counts.items())


def test_the_latest_long_per_key_wins_and_tombstones_are_skipped() -> None:
    records = [(b"186", long(1)), (b"43", long(1)), (b"186", long(2)), (b"7", None)]
    assert kstreams.decode_counts(records) == {"186": 2, "43": 1}


def test_a_value_that_is_not_a_long_is_one_clear_error() -> None:
    with pytest.raises(KafkalabError, match=r"3 bytes .* not a Long count"):
        kstreams.decode_counts([(b"186", b"two")])


def test_counts_that_match_pass_and_every_difference_is_named() -> None:
    want = {"186": 2, "43": 1, "7": 5}
    assert compare_key_counts(want, dict(want), "out").ok
    v = compare_key_counts(want, {"186": 3, "43": 1, "99": 1}, "out")
    text = " | ".join(v.problems)
    assert "1 pickup location without a count in out, e.g. 7" in text
    assert "186: 3 instead of 2" in text
    assert "keys not in rides.csv in out: 99" in text


def test_the_check_kind_is_registered_with_its_params() -> None:
    assert "key_counts" in checks.KINDS
    checks.validate("key_counts", {"topic": "rides-pulocation-count"}, "lab.yml")
    with pytest.raises(KafkalabError, match="key_counts"):
        checks.validate("key_counts", {"topic": "t", "expected": "other"}, "lab.yml")


def test_the_changelog_name_is_the_one_the_lab_owns() -> None:
    from kafkalab.labs import catalog

    lab = catalog.find("10")
    assert kstreams.CHANGELOG in lab.spec.owns.topics
    assert kstreams.OUTPUT in lab.spec.owns.topics
    assert lab.spec.owns.groups == [kstreams.APPLICATION_ID]
    assert {c.kind for c in lab.spec.checks} >= {"key_counts", "topic", "records"}


def test_the_java_application_uses_the_names_the_check_reads() -> None:
    from kafkalab.artifacts import streams_app

    java = next(
        p
        for p in streams_app.build_inputs(streams_app.source_dir())
        if p.name == "JsonKStream.java"
    )
    text = java.read_text()
    for name in (kstreams.APPLICATION_ID, kstreams.INPUT, kstreams.OUTPUT):
        assert f'"{name}"' in text
    assert "groupByKey().count()" in text


def test_a_build_that_fails_inside_the_lab_network_says_to_build_on_the_host(monkeypatch) -> None:
    def offline(*_args: object, **_kwargs: object) -> Path:
        raise KafkalabError("mvn package failed: Could not resolve kafka-streams\n[ERROR] ...")

    monkeypatch.setattr(kstreams.streams_app, "resolve_streams_app", offline)
    monkeypatch.setattr(kstreams.netns, "current", lambda: "klab")
    with pytest.raises(KafkalabError) as err:
        kstreams.built("3.9.2")
    line = str(err.value)
    assert "\n" not in line and "inside the lab network klab" in line
    assert "kafkalab fetch --streams" in line and "Could not resolve kafka-streams" in line
    monkeypatch.setattr(kstreams.netns, "current", lambda: None)  # on the host: as it was
    with pytest.raises(KafkalabError, match=r"(?s)Could not resolve.*\[ERROR\]"):
        kstreams.built("3.9.2")
