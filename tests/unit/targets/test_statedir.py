"""The lab state dir: `down --purge` deletes only a lab's own, one command at a time per
lab, lab.json written whole and a damaged one explained in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.targets import statedir
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.topology import Topology

NS = f"kltest-state-{os.getpid()}"  # never made: these labs have no namespace


def kafkalab(state: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, KAFKALAB_STATE=str(state), KAFKALAB_NETNS=NS, COLUMNS="400")
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True, env=full
    )


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one error line (exit 2, no traceback)."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def saved_lab(state: Path, *, marker: bool, owns: bool = False, ns: str = NS) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    data = {"netns": ns, "owns_netns": owns, "topology": Topology(brokers=1).model_dump()}
    (state / "lab.json").write_text(json.dumps(data))
    if marker:
        statedir.mark(state)
    return state


def quiet(_msg: str) -> None:
    pass


@pytest.fixture(autouse=True)
def _lab_netns(monkeypatch):
    """Labs made in this process use a namespace name nobody has."""
    monkeypatch.setenv("KAFKALAB_NETNS", NS)


# -- down --purge removes only a lab's own directory ----------------------------------------


def test_purge_refuses_a_directory_kafkalab_did_not_make(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work\n")
    line = error_line(kafkalab(home, "down", "--purge"))
    assert f"{home} is not a kafkalab lab" in line and "thesis.tex" in line
    assert "KAFKALAB_STATE" in line
    assert (home / "thesis.tex").read_text() == "years of work\n"
    assert sorted(p.name for p in home.iterdir()) == ["thesis.tex"]  # no lock, no marker left
    with pytest.raises(KafkalabError, match="not a kafkalab lab"):
        EmbeddedCluster(home).down(True, quiet)
    assert (home / "thesis.tex").exists()
    # up is refused the same way, before anything is made in it
    error_line(kafkalab(home, "up", "--no-provision"))
    assert sorted(p.name for p in home.iterdir()) == ["thesis.tex"]


def test_purge_refuses_a_damaged_lab_json_without_marker(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "lab.json").write_text('{"netns": "kafka')
    line = error_line(kafkalab(state, "down", "--purge"))
    assert "not a kafkalab lab" in line and f"touch {state / statedir.MARKER}" in line
    assert (state / "lab.json").exists()


def test_purge_of_an_absent_or_empty_directory_is_fine(tmp_path):
    EmbeddedCluster(tmp_path / "never").down(True, quiet)
    assert not (tmp_path / "never").exists()
    (tmp_path / "empty").mkdir()
    proc = kafkalab(tmp_path / "empty", "down", "--purge")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "empty").exists()


def test_a_marked_lab_is_purged(tmp_path):
    state = saved_lab(tmp_path / "state", marker=True)
    (state / "logs").mkdir()
    (state / "logs" / "provision.log").write_text("ok\n")
    proc = kafkalab(state, "down", "--purge")
    assert proc.returncode == 0, proc.stderr
    assert not state.exists()


def test_a_lab_saved_before_the_marker_counts_as_ours(tmp_path):
    """Legacy: a lab.json kafkalab wrote (topology and netns) stands in for the marker."""
    state = saved_lab(tmp_path / "legacy", marker=False)
    (state / "ssh").mkdir()
    assert statedir.is_legacy(state)
    statedir.check_ours(state)
    proc = kafkalab(state, "down", "--purge")
    assert proc.returncode == 0, proc.stderr
    assert not state.exists()
    # a JSON file of someone else's is not a lab.json of kafkalab's
    other = tmp_path / "other"
    other.mkdir()
    (other / "lab.json").write_text('{"name": "my lab notes"}')
    assert not statedir.is_legacy(other)
    with pytest.raises(KafkalabError, match="not a kafkalab lab"):
        statedir.check_ours(other)


def test_first_save_marks_the_directory(tmp_path):
    lab = EmbeddedCluster(tmp_path / "state")
    lab._save(Topology())
    assert (tmp_path / "state" / statedir.MARKER).is_file()
    assert lab._saved()["owns_netns"] is False  # nothing claimed without `up` making it


def test_purge_does_not_cross_a_mount(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    state = saved_lab(tmp_path / "state", marker=True)
    inside = state / "machines" / "kafka1" / "merged"
    inside.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(inside)], check=True)
    try:
        (inside / "precious").write_text("x")
        # the machine's own unmount is not enough when something else is mounted there too
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(inside)], check=True)
        assert statedir.mounts_under(state) == [inside, inside]
        with pytest.raises(KafkalabError, match=r"is still mounted.*umount"):
            EmbeddedCluster(state).down(True, quiet)
        assert state.exists()
    finally:
        while os.path.ismount(inside):
            subprocess.run(["umount", str(inside)], check=True)


# -- lab.json: whole or not at all; damaged: one line ----------------------------------------


def test_lab_json_is_replaced_atomically(tmp_path, monkeypatch):
    path = tmp_path / "lab.json"
    statedir.write_json(path, {"v": 1})
    assert json.loads(path.read_text()) == {"v": 1}
    with pytest.raises(TypeError):
        statedir.write_json(path, {"v": object()})  # fails half-way through the dump
    monkeypatch.setattr(os, "replace", lambda *_a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        statedir.write_json(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]  # no temp file left


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"netns": "kafkalab", "topology": {"mode": "kr', "not JSON"),
        ("", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"netns": "kafkalab"}', "no topology"),
        ('{"netns": "../../etc", "topology": {}}', "netns '../../etc'"),
        ('{"netns": "kafkalab", "topology": {"brokers": "three"}}', "brokers"),
    ],
)
def test_a_damaged_lab_json_is_one_line_with_the_way_out(tmp_path, text, why):
    state = tmp_path / "state"
    state.mkdir()
    statedir.mark(state)
    (state / "lab.json").write_text(text)
    lab = EmbeddedCluster(state)  # `down --purge` needs it: making one must not fail
    with pytest.raises(statedir.StateDamaged) as err:
        lab.machines()
    line = str(err.value)
    assert f"{state / 'lab.json'} is damaged" in line and why in line, line
    assert "run `kafkalab down --purge`" in line and "\n" not in line
    with pytest.raises(statedir.StateDamaged):
        lab.down(False, quiet)
    assert (state / "lab.json").read_text() == text  # nothing rewrote it
    lab.down(True, quiet)  # the way out works with the file as it is
    assert not state.exists()


def test_the_cli_says_a_truncated_lab_json_in_one_line(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    statedir.mark(state)
    (state / "lab.json").write_text('{"netns": "kafkalab", "topology": {"mode": "kr')
    for args in (["status"], ["up", "--no-provision"], ["fault", "heal"]):
        line = error_line(kafkalab(state, *args))
        assert f"{state / 'lab.json'} is damaged (not JSON: " in line, line
        assert "run `kafkalab down --purge`" in line
    proc = kafkalab(state, "down", "--purge")
    assert proc.returncode == 0, proc.stderr
    assert not state.exists()


def test_purge_with_a_damaged_lab_json_still_finds_the_machines(tmp_path):
    state = tmp_path / "state"
    (state / "machines" / "kafka1").mkdir(parents=True)
    (state / "machines" / "spark1").mkdir(parents=True)
    statedir.mark(state)
    (state / "lab.json").write_bytes(b"\xff\xfe")
    lab = EmbeddedCluster(state)
    with pytest.raises(statedir.StateDamaged, match="not UTF-8"):
        lab.topology()
    found = lab._machines_on_disk(known=set())
    assert [m.name for m in found] == ["kafka1", "spark1"]
    lab.down(True, quiet)
    assert not state.exists()


# -- one command at a time ------------------------------------------------------------------

HOLDER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from kafkalab.targets import statedir
    sys.argv = ["kafkalab", "up", "--brokers", "3"]
    with statedir.exclusive(Path(os.environ["STATE"])):
        print("held", flush=True)
        sys.stdin.read()
    """
)


@pytest.fixture
def held(tmp_path):
    """Another process holds the lab's lock (as a running `kafkalab up --brokers 3`)."""
    state = tmp_path / "state"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, STATE=str(state)),
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    try:
        yield state, proc.pid
    finally:
        proc.communicate("", timeout=30)
    assert proc.returncode == 0


def test_a_second_command_is_refused_at_once_naming_the_holder(held):
    state, pid = held
    for args in (["up"], ["down", "--purge"], ["lab", "reset", "01"], ["fault", "heal"]):
        line = error_line(kafkalab(state, *args))
        assert f"the lab at {state} is busy" in line, line
        assert f"`kafkalab up --brokers 3` (pid {pid}, since " in line
        assert "wait until it ends" in line
    assert state.exists()  # down --purge did not run
    with pytest.raises(statedir.Busy, match=f"pid {pid}"), statedir.exclusive(state):
        pass


def test_read_only_commands_do_not_wait_for_the_lock(held):
    state, _ = held
    proc = kafkalab(state, "status", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"lab": null' in proc.stdout
    assert kafkalab(state, "lab", "list").returncode == 0


def test_the_lock_is_reentrant_within_a_process_and_released_after(tmp_path):
    state = tmp_path / "state"
    lock = state / statedir.LOCK
    with statedir.exclusive(state):
        assert json.loads(lock.read_text())["pid"] == os.getpid()
        with statedir.exclusive(state), statedir.locked(lock):  # e.g. lab start -> up
            assert lock.exists()
        assert lock.exists()  # the inner exit did not release the outer hold
        code = (
            "import pathlib; from kafkalab.targets import statedir; "
            f"statedir.locked(pathlib.Path({str(lock)!r})).__enter__()"
        )
        probe = [sys.executable, "-c", code]
        busy = subprocess.run(probe, capture_output=True, text=True)
        assert busy.returncode != 0 and "is busy" in busy.stderr
    assert not state.exists()  # a new lab nobody wrote into: no dir, no marker, no lock
    free = subprocess.run(probe, capture_output=True, text=True)
    assert free.returncode == 0, free.stderr


def test_the_lock_is_released_when_the_body_fails(tmp_path):
    path = tmp_path / "cache" / "kafka.tgz.lock"
    with pytest.raises(RuntimeError), statedir.locked(path, "the Kafka archive"):
        raise RuntimeError("download failed")
    assert not path.exists()
    with statedir.locked(path, "the Kafka archive"):
        assert path.exists()
    assert path.parent.is_dir()  # a cache dir stays: no remove_dirs_up_to


def test_a_refused_command_on_a_new_lab_leaves_nothing(tmp_path):
    state = tmp_path / "a" / "b" / "state"
    line = error_line(kafkalab(state, "fault", "heal"))
    assert "no lab here yet" in line
    assert not (tmp_path / "a").exists()


def test_a_lab_kept_after_a_command_keeps_its_marker(tmp_path):
    state = tmp_path / "state"
    with statedir.exclusive(state):
        (state / "ssh").mkdir()  # what `up` makes before it saves the lab
    assert (state / statedir.MARKER).is_file()
    assert not (state / statedir.LOCK).exists()
    statedir.check_ours(state)


def test_a_cache_lock_can_wait_for_its_holder(tmp_path):
    """`locked(path, wait=...)`, as a build of a cache artifact would use it."""
    path = tmp_path / "cache" / "kafka-3.9.2.tgz.lock"
    code = (
        "import pathlib, sys; from kafkalab.targets import statedir\n"
        f"with statedir.locked(pathlib.Path({str(path)!r})):\n"
        "    print('held', flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    started = time.monotonic()
    busy = pytest.raises(statedir.Busy, match="the Kafka archive is busy")
    with busy, statedir.locked(path, "the Kafka archive", wait=0.5):
        pass
    assert time.monotonic() - started >= 0.5
    threading.Timer(0.5, lambda: proc.communicate("")).start()
    with statedir.locked(path, "the Kafka archive", wait=30):
        assert json.loads(path.read_text())["pid"] == os.getpid()
    assert proc.wait(30) == 0


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kafkalab.targets import statedir
    try:
        with statedir.exclusive(Path(sys.argv[1])):
            print("ran")
    except statedir.Busy as exc:
        print("busy:", exc)
    """
)


def test_a_child_runs_under_the_lock_its_parent_lends_it(tmp_path):
    """A lab step's `kafkalab up` (lab 14's solve) runs under the lock of the `lab solve`
    that started it, and only then: not a process the lock was not lent to, nor a child
    told so by another process."""
    state = tmp_path / "state"
    child = [sys.executable, "-c", CHILD, str(state)]
    with statedir.exclusive(state):
        lent = {**os.environ, statedir.LOCK_HOLDER: str(os.getpid())}
        assert subprocess.run(child, env=lent, capture_output=True, text=True).stdout == "ran\n"
        plain = subprocess.run(child, capture_output=True, text=True).stdout
        assert plain.startswith("busy:") and f"pid {os.getpid()}" in plain
        other = {**os.environ, statedir.LOCK_HOLDER: "1"}
        assert subprocess.run(child, env=other, capture_output=True, text=True).stdout.startswith(
            "busy:"
        )
    # the parent's lock is gone: the child takes its own, as any command does
    assert subprocess.run(child, env=lent, capture_output=True, text=True).stdout == "ran\n"
    assert statedir.held_by_parent(state) is False
