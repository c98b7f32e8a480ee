"""The check kind `csv_as_json`: a CSV file published row by row as JSON records (lab 09's
rides). It reads the topic back and compares it with the file itself: every row is there
once, as a JSON object with exactly the lab's fields, keyed by the row's key column, and
each key stays in one partition. Numbers compare as numbers (`7.55` in the CSV is 7.55 in
the JSON), everything else as text.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from typing import Any

from pydantic import Field, model_validator

from kafkalab.labs.checks.base import Params, Verdict, existing_topic, kind
from kafkalab.labs.context import LabContext
from kafkalab.paths import repo_root
from kafkalab.render import plural

Value = tuple[str, Any]  # ("n", float) or ("s", text): how a CSV cell and a JSON value compare


class CsvAsJsonParams(Params):
    topic: str
    csv: str  # the file, relative to the repository's root
    key_column: str  # the CSV column whose value each record's key is
    fields: dict[str, str] = Field(min_length=1)  # JSON field -> the CSV column it carries

    @model_validator(mode="after")
    def _file_has_the_columns(self) -> CsvAsJsonParams:
        path = repo_root() / self.csv
        if not path.is_file():
            raise ValueError(f"csv: no file {self.csv} in the repository")
        with path.open(newline="") as f:
            header = next(csv.reader(f), [])
        missing = [c for c in [self.key_column, *self.fields.values()] if c not in header]
        if missing:
            raise ValueError(f"{self.csv} has no column {', '.join(missing)}")
        return self


def comparable(x: object) -> Value:
    """A CSV cell or a JSON value, as the check compares it."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return ("n", float(x))
    try:
        return ("n", float(str(x)))
    except ValueError:
        return ("s", str(x))


def csv_rows(p: CsvAsJsonParams) -> list[tuple[Value, tuple[Value, ...]]]:
    """(key, the row's fields) of every row of the file, in the lab's field order."""
    with (repo_root() / p.csv).open(newline="") as f:
        return [
            (comparable(r[p.key_column]), tuple(comparable(r[c]) for c in p.fields.values()))
            for r in csv.DictReader(f)
        ]


def _are(n: int, word: str) -> str:
    """`1 record is`, `2 records are`."""
    return f"{plural(n, word)} {'is' if n == 1 else 'are'}"


def _title(p: CsvAsJsonParams, _mode: str) -> str:
    return (
        f"every row of {p.csv} is in {p.topic} once, as JSON with its "
        f"{len(p.fields)} fields, keyed by {p.key_column}"
    )


@kind("csv_as_json", CsvAsJsonParams, _title)
def csv_as_json(ctx: LabContext, p: CsvAsJsonParams) -> Verdict:
    existing_topic(ctx, p.topic)
    v = Verdict()
    want = csv_rows(p)
    key_field = next((f for f, c in p.fields.items() if c == p.key_column), None)
    have: Counter[tuple[Value, ...]] = Counter()
    bad_json, bad_fields, bad_keys = [], [], []
    partitions: dict[str | None, set[int]] = {}
    for r in ctx.records(p.topic):
        try:
            value = json.loads(r.value) if r.value is not None else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            bad_json.append(r)
            continue
        if set(value) != set(p.fields):
            bad_fields.append((r, value))
            continue
        if key_field is not None and (
            r.key is None or comparable(r.key) != comparable(value[key_field])
        ):
            bad_keys.append((r, value))
        partitions.setdefault(r.key, set()).add(r.partition)
        have[tuple(comparable(value[f]) for f in p.fields)] += 1
    if bad_json:
        r = bad_json[0]
        v.problems.append(
            f"{_are(len(bad_json), 'record')} not a JSON object in {p.topic} "
            f"(e.g. partition {r.partition} offset {r.offset}: {str(r.value)[:60]!r})"
        )
    if bad_fields:
        r, value = bad_fields[0]
        gone = sorted(set(p.fields) - set(value))
        more = sorted(set(value) - set(p.fields))
        v.problems.append(
            f"{_are(len(bad_fields), 'record')} in {p.topic} with other fields than the "
            f"lab's (e.g. offset {r.offset} of partition {r.partition}: "
            f"missing {', '.join(gone) or 'none'}; extra {', '.join(more) or 'none'})"
        )
    if bad_keys:
        r, value = bad_keys[0]
        v.problems.append(
            f"{_are(len(bad_keys), 'record')} not keyed by {p.key_column} in {p.topic} "
            f"(e.g. key {r.key!r} for {key_field} {value[key_field]!r})"
        )
    spread = sorted(str(k) for k, ps in partitions.items() if len(ps) > 1)
    if spread:
        v.problems.append(
            f"records of key(s) {', '.join(spread[:5])} are spread over several partitions"
        )
    rows = Counter(fields for _key, fields in want)
    missing = sum((rows - have).values())
    extra = sum((have - rows).values())
    if missing:
        v.problems.append(
            f"{plural(missing, 'row')} of {p.csv} {'is' if missing == 1 else 'are'} "
            f"not in {p.topic}"
        )
    if extra:
        v.problems.append(
            f"{plural(extra, 'record')} of {p.topic} {'is' if extra == 1 else 'are'} no row "
            f"of {p.csv} or a row again (the producer ran twice?): delete the topic and "
            "produce once"
        )
    v.facts.append(
        f"{plural(sum(have.values()), 'JSON record')} in {p.topic} for {len(want)} rows, "
        f"{plural(len(partitions), 'key')}"
    )
    return v
