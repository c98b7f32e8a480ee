"""The kafka-python wheel step (kafkalab.artifacts.kafka_python): where it lives in the cache,
PyPI's SHA-256 checked on every resolve, one pip download when it is missing, nothing fetched
once it is there."""

from __future__ import annotations

import hashlib
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kafkalab.artifacts import kafka_python
from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root


def _pin(monkeypatch: pytest.MonkeyPatch, body: bytes) -> None:
    monkeypatch.setattr(kafka_python, "SHA256", hashlib.sha256(body).hexdigest())


def test_the_wheel_is_named_as_on_pypi_and_lives_in_the_caches_pypi_dir(tmp_path: Path):
    assert kafka_python.wheel_name("2.3.3") == "kafka_python-2.3.3-py2.py3-none-any.whl"
    assert kafka_python.wheel_path(tmp_path) == tmp_path / "pypi" / kafka_python.wheel_name()


def test_the_pin_is_a_sha256_and_the_controller_gets_the_same_version():
    assert len(kafka_python.SHA256) == 64 and int(kafka_python.SHA256, 16) >= 0
    pyproject = tomllib.loads((repo_root() / "pyproject.toml").read_text())
    deps = pyproject["project"]["dependencies"]
    assert f"kafka-python=={kafka_python.VERSION}" in deps


def test_a_wheel_in_the_cache_is_used_without_any_download(tmp_path, monkeypatch):
    wheel = kafka_python.wheel_path(tmp_path)
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"wheel bytes")
    _pin(monkeypatch, b"wheel bytes")

    def no_network(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("downloaded although the wheel is in the cache")

    monkeypatch.setattr(subprocess, "run", no_network)
    assert kafka_python.resolve_kafka_python(cache=tmp_path) == wheel


def test_a_changed_wheel_is_refused_with_the_fix(tmp_path, monkeypatch):
    wheel = kafka_python.wheel_path(tmp_path)
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"tampered")
    _pin(monkeypatch, b"wheel bytes")
    with pytest.raises(KafkalabError, match="does not match PyPI's SHA-256") as exc:
        kafka_python.resolve_kafka_python(cache=tmp_path)
    assert "Delete it" in str(exc.value) and str(wheel) in str(exc.value)


def _fake_pip(body: bytes, calls: list[list[str]], rc: int = 0):
    def run(cmd: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        dest = Path(cmd[cmd.index("--dest") + 1])
        if rc == 0:
            (dest / kafka_python.wheel_name()).write_bytes(body)
        return subprocess.CompletedProcess(cmd, rc, "", "ERROR: No matching distribution")

    return run


def test_an_empty_cache_downloads_the_pinned_wheel_once(tmp_path, monkeypatch):
    _pin(monkeypatch, b"wheel bytes")
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _fake_pip(b"wheel bytes", calls))
    said: list[str] = []
    got = kafka_python.resolve_kafka_python(cache=tmp_path / "cache", progress=said.append)
    assert got == kafka_python.wheel_path(tmp_path / "cache") and got.read_bytes() == b"wheel bytes"
    assert calls[0][-1] == f"kafka-python=={kafka_python.VERSION}"
    assert {"--no-deps", "--only-binary=:all:"} <= set(calls[0])
    assert said == [f"downloading kafka-python {kafka_python.VERSION} from PyPI"]
    assert kafka_python.resolve_kafka_python(cache=tmp_path / "cache") == got
    assert len(calls) == 1
    leftovers = [p.name for p in got.parent.iterdir() if p != got]
    assert leftovers == [] or leftovers == [".locks"]


def test_a_download_that_does_not_match_the_pin_is_not_kept(tmp_path, monkeypatch):
    _pin(monkeypatch, b"wheel bytes")
    monkeypatch.setattr(subprocess, "run", _fake_pip(b"something else", []))
    with pytest.raises(KafkalabError, match="does not match PyPI's SHA-256"):
        kafka_python.resolve_kafka_python(cache=tmp_path)
    assert not kafka_python.wheel_path(tmp_path).exists()


def test_a_failed_download_says_where_to_put_the_wheel(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", _fake_pip(b"", [], rc=1))
    with pytest.raises(KafkalabError) as exc:
        kafka_python.resolve_kafka_python(cache=tmp_path)
    message = str(exc.value)
    assert "pip download failed: ERROR: No matching distribution" in message
    assert str(kafka_python.wheel_path(tmp_path)) in message
