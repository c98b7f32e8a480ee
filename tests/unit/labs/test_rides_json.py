"""Lab 09 without a cluster (seconds): the page's producer and consumer run against fake
kafka-python clients that apply their own serializers, so the records they would send
are checked against what lab 07 reads (spark/producer.py's records, the Spark job's
RIDE_SCHEMA); the check kind csv_as_json passes on those records and fails, with its
reason, on each way they can be wrong."""

from __future__ import annotations

import ast
import csv
import functools
import importlib.util
import json
import runpy
import sys
from types import SimpleNamespace
from typing import ClassVar

import kafka
import pytest

from kafkalab.kafka.topics import Consumed
from kafkalab.labs import catalog, checks
from kafkalab.labs.checks.base import validate
from kafkalab.labs.checks.csv_as_json import csv_as_json
from kafkalab.paths import repo_root

LAB = repo_root() / "labs" / "09-rides-json"
CSV = repo_root() / "spark" / "data" / "rides.csv"
GROUP = "consumer.group.id.json-example.1"
SPARK_TYPES = {"StringType": str, "IntegerType": int, "DoubleType": float}


def rows() -> list[list[str]]:
    with CSV.open(newline="") as f:
        return list(csv.reader(f))[1:]


def ride_schema() -> list[tuple[str, type]]:
    """RIDE_SCHEMA of spark/jobs/ride_counts.py (read from its source: no pyspark here)."""
    tree = ast.parse((repo_root() / "spark" / "jobs" / "ride_counts.py").read_text())
    node = next(
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "RIDE_SCHEMA"
    )
    assert isinstance(node, ast.Call)
    fields = node.args[0]
    assert isinstance(fields, ast.List)
    out = []
    for f in fields.elts:
        assert isinstance(f, ast.Call)
        name, kind = f.args
        assert isinstance(name, ast.Constant) and isinstance(kind, ast.Call)
        assert isinstance(kind.func, ast.Attribute)
        out.append((name.value, SPARK_TYPES[kind.func.attr]))
    return out


@functools.cache
def course_ride() -> type:
    """spark/ride.py's Ride, the one lab 07's producer sends (a module named `ride` too)."""
    spec = importlib.util.spec_from_file_location("course_ride", repo_root() / "spark" / "ride.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["course_ride"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.Ride


def lab07_record(row: list[str]) -> tuple[str, dict]:
    """What spark/producer.py (lab 07's producer) sends for a row: key, value."""
    ride = course_ride().from_row(row)
    return str(ride.pu_location_id), ride.to_dict()


@pytest.fixture
def lab_dir(monkeypatch):
    """Import the lab's scripts as `python labs/09-rides-json/x.py` would (its folder first)."""
    monkeypatch.syspath_prepend(str(LAB))
    for name in ("ride", "settings"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setenv("KAFKALAB_BOOTSTRAP", "kafka1:9092,kafka2:9092")


class FakeProducer:
    """kafka-python's KafkaProducer as far as the page uses it; keeps the bytes it would send."""

    made: ClassVar[list[FakeProducer]] = []

    def __init__(self, **props):
        self.props = props
        self.sent: list[tuple[str, bytes, bytes]] = []
        FakeProducer.made.append(self)

    def send(self, topic, key, value):
        self.sent.append(
            (topic, self.props["key_serializer"](key), self.props["value_serializer"](value))
        )
        return SimpleNamespace(get=lambda: SimpleNamespace(offset=len(self.sent) - 1))

    def close(self):
        pass


def produced(monkeypatch) -> FakeProducer:
    FakeProducer.made = []
    monkeypatch.setattr(kafka, "KafkaProducer", FakeProducer)
    monkeypatch.setattr(sys, "argv", ["producer.py"])
    runpy.run_path(str(LAB / "producer.py"), run_name="__main__")
    (producer,) = FakeProducer.made
    return producer


def test_the_producer_sends_every_ride_as_lab_07s_producer_does(lab_dir, monkeypatch, capsys):
    producer = produced(monkeypatch)
    assert producer.props["bootstrap_servers"] == ["kafka1:9092", "kafka2:9092"]
    data = rows()
    assert len(producer.sent) == len(data) == 3000
    assert "sent 3000 of 3000 rides to rides" in capsys.readouterr().out
    schema = ride_schema()
    for (topic, key, value), row in zip(producer.sent, data, strict=True):
        assert topic == "rides"
        ride = json.loads(value)
        assert (key.decode(), ride) == lab07_record(row)
        assert key.decode() == row[7]  # PULocationID
        assert list(ride) == [name for name, _ in schema]
        for name, kind in schema:
            assert type(ride[name]) is kind, (name, ride[name])


class FakeConsumer:
    """kafka-python's KafkaConsumer as far as the page uses it: one partition holding the
    records, given to this member on the first poll, 1000 records a poll."""

    def __init__(self, records: list[tuple[bytes, bytes]], **props):
        self.props = props
        self.records = records
        self.at = 0
        self.polls = 0
        self.tp = kafka.TopicPartition("rides", 0)
        self.mine: set = set()
        self.closed = False

    def subscribe(self, topics):
        self.topics = topics

    def subscription(self):
        return set(self.topics)

    def poll(self, timeout_ms):
        assert timeout_ms == 1000  # kafka-python's poll takes ms: the page's 1.0 would spin
        self.polls += 1
        if self.polls == 1:
            self.mine = {self.tp}  # the group's assignment comes with the first poll
            return {}
        batch = self.records[self.at : self.at + 1000]
        self.at += len(batch)
        deser = self.props["key_deserializer"], self.props["value_deserializer"]
        return (
            {self.tp: [SimpleNamespace(key=deser[0](k), value=deser[1](v)) for k, v in batch]}
            if batch
            else {}
        )

    def assignment(self):
        return self.mine

    def end_offsets(self, tps):
        return dict.fromkeys(tps, len(self.records))

    def position(self, tp):
        return self.at

    def close(self):
        self.closed = True


def test_the_consumer_reads_rides_back_and_stops_once_caught_up(lab_dir, monkeypatch, capsys):
    records = [(k, v) for _t, k, v in produced(monkeypatch).sent]
    capsys.readouterr()
    made: list[FakeConsumer] = []

    def consumer(**props):
        made.append(FakeConsumer(records, **props))
        return made[-1]

    monkeypatch.setattr(kafka, "KafkaConsumer", consumer)
    monkeypatch.setattr(sys, "argv", ["consumer.py", "--until-caught-up"])
    runpy.run_path(str(LAB / "consumer.py"), run_name="__main__")
    (c,) = made
    assert c.props["group_id"] == GROUP
    assert c.props["auto_offset_reset"] == "earliest" and c.props["enable_auto_commit"]
    assert c.closed and c.at == 3000  # close() is what commits, at the end
    out = capsys.readouterr().out.splitlines()
    printed = [line for line in out if line.startswith(("186 ", "236 "))]
    assert printed[0].startswith("186 Ride: {'vendor_id': '2', 'tpep_pickup_datetime': datetime")
    assert out[-1] == "read 3000 rides"
    assert len(out) == 3000 + 3  # the two lines of the page before, the count after


def test_ride_from_dict_gives_the_same_ride_back(lab_dir):
    from ride import Ride

    for row in rows()[:50]:
        ride = Ride(arr=row)
        again = Ride.from_dict(json.loads(json.dumps(ride.__dict__, default=str)))
        assert again.__dict__ == ride.__dict__


# -- the check ---------------------------------------------------------------------------


def lab_check():
    (lab,) = [x for x in catalog.discover() if getattr(x, "id", None) == "09"]
    (spec,) = [c for c in lab.spec.checks if c.kind == "csv_as_json"]
    return validate(spec.kind, spec.params, "lab 09")


@functools.cache
def _good() -> tuple[Consumed, ...]:
    out = []
    for i, row in enumerate(rows()):
        key, value = lab07_record(row)
        out.append(Consumed(int(key) % 3, i, key, json.dumps(value), 0))
    return tuple(out)


def good_records() -> list[Consumed]:
    """Lab 07's producer's records of every ride (each key in one partition)."""
    return list(_good())


def verdict(records: list[Consumed]):
    ctx = SimpleNamespace(topic=lambda _name: object(), records=lambda _topic: records)
    return csv_as_json(ctx, lab_check())  # type: ignore[arg-type]


def test_the_lab_uses_the_check_kinds_and_the_group():
    (lab,) = [x for x in catalog.discover() if getattr(x, "id", None) == "09"]
    assert [c.kind for c in lab.spec.checks] == ["topic", "csv_as_json", "group_caught_up"]
    assert all(c.kind in checks.KINDS for c in lab.spec.checks)
    assert lab.spec.checks[2].params == {"group": GROUP, "topic": "rides"}
    assert GROUP in lab.spec.owns.groups and "rides" in lab.spec.owns.topics


def test_csv_as_json_passes_on_the_producers_records():
    v = verdict(good_records())
    assert v.ok, v.problems
    assert v.facts[0].startswith("3000 JSON records in rides for 3000 rows, "), v.facts


def _changed(i: int, **fields) -> list[Consumed]:
    recs = good_records()
    r = recs[i]
    value = {**json.loads(r.value or "{}"), **fields}
    recs[i] = Consumed(r.partition, r.offset, r.key, json.dumps(value), 0)
    return recs


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda rs: rs[:-1], "1 row of spark/data/rides.csv is not in rides"),
        (
            lambda rs: [*rs, rs[5]],
            "1 record of rides is no row of spark/data/rides.csv or a row again",
        ),
        (lambda rs: _changed(3, fare_amount=1.0), "1 row of spark/data/rides.csv is not in rides"),
        (
            lambda rs: [Consumed(0, 0, "186", "not json", 0), *rs],
            "1 record is not a JSON object in rides",
        ),
        (
            lambda rs: [*rs[:-1], Consumed(0, 9, rs[-1].key, '{"pu_location_id": 1}', 0)],
            "missing congestion_surcharge",
        ),
        (
            lambda rs: [Consumed(r.partition, r.offset, "7", r.value, 0) for r in rs[:1]] + rs[1:],
            "1 record is not keyed by PULocationID in rides (e.g. key '7' for pu_location_id 186)",
        ),
        (
            lambda rs: (
                [Consumed(r.partition + 1, r.offset, r.key, r.value, 0) for r in rs[:1]] + rs[1:]
            ),
            "records of key(s) 186 are spread over several partitions",
        ),
    ],
    ids=["missing", "twice", "changed", "not-json", "fields", "key", "spread"],
)
def test_csv_as_json_fails_with_the_reason(damage, problem):
    v = verdict(damage(good_records()))
    assert not v.ok
    assert any(problem in p for p in v.problems), v.problems


def test_csv_as_json_refuses_a_column_the_file_lacks():
    from kafkalab.errors import KafkalabError

    params = {"topic": "rides", "csv": "spark/data/rides.csv", "key_column": "PULocationID"}
    with pytest.raises(KafkalabError, match="has no column Nope"):
        validate("csv_as_json", {**params, "fields": {"x": "Nope"}}, "lab")
    with pytest.raises(KafkalabError, match=r"no file nowhere\.csv"):
        validate("csv_as_json", {**params, "csv": "nowhere.csv", "fields": {"x": "VendorID"}}, "x")
