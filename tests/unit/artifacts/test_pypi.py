"""kafkalab.artifacts.pypi: one `pip download` into the cache's pypi dir, checked before it
is kept, nothing left behind when it fails (pip itself is faked: no network here)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from kafkalab.artifacts import pypi, spark


def _pip(files: dict[str, bytes], calls: list[list[str]], rc: int = 0):
    def run(cmd: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        dest = Path(cmd[cmd.index("--dest") + 1])
        for name, body in files.items():
            (dest / name).write_bytes(body)
        return subprocess.CompletedProcess(cmd, rc, "", "ERROR: No matching distribution")

    return run


def test_the_file_pip_fetched_is_moved_in_and_nothing_else_stays(tmp_path, monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _pip({"pkg-1.0.tar.gz": b"sdist"}, calls))
    got = pypi.download("pkg==1.0", tmp_path / "pypi", timeout=5)
    assert got == tmp_path / "pypi" / "pkg-1.0.tar.gz" and got.read_bytes() == b"sdist"
    assert [p.name for p in (tmp_path / "pypi").iterdir()] == ["pkg-1.0.tar.gz"]
    assert "--no-deps" in calls[0] and "--only-binary=:all:" not in calls[0]
    assert calls[0][-1] == "pkg==1.0"


def test_a_file_the_check_refuses_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", _pip({"pkg-1.0-py3-none-any.whl": b"x"}, []))

    def refuse(path: Path) -> None:
        raise pypi.DownloadFailed(f"{path.name} is not the pinned file")

    with pytest.raises(pypi.DownloadFailed, match="is not the pinned file"):
        pypi.download("pkg==1.0", tmp_path, timeout=5, binary_only=True, check=refuse)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("files", "rc", "why"),
    [
        ({}, 1, "pip download failed: ERROR: No matching distribution"),
        ({"a.whl": b"", "b.whl": b""}, 0, "pip download failed"),  # not one file: --no-deps broke
    ],
)
def test_a_failed_download_says_why_and_leaves_nothing(tmp_path, monkeypatch, files, rc, why):
    monkeypatch.setattr(subprocess, "run", _pip(files, [], rc))
    with pytest.raises(pypi.DownloadFailed, match=why):
        pypi.download("pkg==1.0", tmp_path, timeout=5)
    assert list(tmp_path.iterdir()) == []


def test_a_pip_that_hangs_is_stopped_with_its_time(tmp_path, monkeypatch):
    def hang(cmd: list[str], **kwargs: Any) -> None:
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(subprocess, "run", hang)
    with pytest.raises(pypi.DownloadFailed, match="pip took over 7s"):
        pypi.download("pkg==1.0", tmp_path, timeout=7)


def test_pyspark_comes_through_it_once_and_a_failure_names_the_ways_out(tmp_path, monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _pip({"pyspark-4.0.0.tar.gz": b"sdist"}, calls))
    said: list[str] = []
    got = spark.download_pyspark("4.0.0", tmp_path, said.append)
    assert got == tmp_path / "pypi" / "pyspark-4.0.0.tar.gz"
    assert spark.download_pyspark("4.0.0", tmp_path, said.append) == got
    assert len(calls) == 1 and len(said) == 1
    monkeypatch.setattr(subprocess, "run", _pip({}, [], rc=1))
    with pytest.raises(Exception, match=r"no Spark 3\.5\.9: pip download failed.*pip install"):
        spark.download_pyspark("3.5.9", tmp_path, said.append)
