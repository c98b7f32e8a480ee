"""machines.EmbeddedMachine: the artifact dir it shares with its machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.targets import machines


def test_a_machine_notes_the_artifact_dir_it_shares_and_forgets_a_replaced_one(
    tmp_path: Path,
) -> None:
    """shared_artifacts names the dir noted at start while that path is the same directory;
    a cache removed and made again (another inode, which the machine's mount does not
    show), a note missing, or a damaged one give None."""
    m = machines.EmbeddedMachine("kafka1", "10.77.0.11", tmp_path / "home")
    m.home.mkdir()
    cache = tmp_path / "artifacts"
    cache.mkdir()
    assert m.shared_artifacts() is None
    st = cache.stat()
    (m.home / "artifacts").write_text(f"{st.st_dev}:{st.st_ino} {cache}\n")
    assert m.shared_artifacts() == cache
    cache.rmdir()
    (tmp_path / "elsewhere").mkdir()  # takes the freed inode number, if any, first
    cache.mkdir()
    if cache.stat().st_ino != st.st_ino:
        assert m.shared_artifacts() is None
    (m.home / "artifacts").write_text("garbage\n")
    assert m.shared_artifacts() is None


def test_the_launcher_shares_the_artifact_dir_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start() writes a launcher whose nspawn binds the cache read-only at
    ARTIFACTS_ON_MACHINE, quoted (a state dir or cache may hold spaces), and notes it; a
    path nspawn's --bind-ro cannot take (a ':' in it) is not shared and not noted."""
    started: list[list[str]] = []

    class Proc:
        pid = 4242

    monkeypatch.setattr(machines.netns, "veth_pair", lambda *_a: None)
    monkeypatch.setattr(machines, "_name_in_use", lambda _n: None)
    monkeypatch.setattr(
        machines.subprocess, "Popen", lambda argv, **_k: started.append(argv) or Proc()
    )
    monkeypatch.setattr(machines.EmbeddedMachine, "remove_cgroups", lambda *_a, **_k: None)
    m = machines.EmbeddedMachine("kafka1", "10.77.0.11", tmp_path / "home")
    m.home.mkdir()
    cache = tmp_path / "my cache"
    cache.mkdir()
    assert m.start("klx", artifacts=cache) == 4242
    launcher = (m.home / "launch.sh").read_text()
    assert f"'--bind-ro={cache}:{machines.share.ARTIFACTS_ON_MACHINE}'" in launcher
    assert m.shared_artifacts() == cache
    m.pid_file.unlink()
    odd = tmp_path / "a:b"
    odd.mkdir()
    m.start("klx", artifacts=odd)
    assert "--bind-ro" not in (m.home / "launch.sh").read_text()
    assert m.shared_artifacts() is None
