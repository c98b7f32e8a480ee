"""README's two commands, `make up` and `make test`, as root and as a sudo user: what each
would run (`make -n` with a fake `id` first on PATH), and what `scripts/setup.sh` fetches
(run in a copy of the scripts with fake tools: no apt, no pip, no download)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from kafkalab.paths import repo_root

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def fake_tool(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    tool = bin_dir / name
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)


def dry_run(target: str, uid: int, tmp_path: Path) -> list[str]:
    """The commands `make <target>` would run for a user with this uid."""
    bin_dir = tmp_path / f"uid{uid}"
    fake_tool(bin_dir, "id", f'[ "$1" = -u ] && echo {uid} || exec /usr/bin/id "$@"')
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    done = subprocess.run(
        ["make", "-n", "-C", str(repo_root()), target],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if line and not line.startswith("make")]


def test_as_root_nothing_runs_under_sudo(tmp_path: Path) -> None:
    for target in ("up", "test"):
        lines = dry_run(target, 0, tmp_path)
        assert lines and not any("sudo" in line for line in lines), lines
    assert dry_run("up", 0, tmp_path) == ["./scripts/setup.sh", ".venv/bin/kafkalab up"]


def test_as_a_user_the_root_steps_run_under_sudo(tmp_path: Path) -> None:
    assert dry_run("up", 1000, tmp_path) == [
        "sudo ./scripts/setup.sh",
        "sudo .venv/bin/kafkalab up",
    ]
    lines = dry_run("test", 1000, tmp_path)
    assert lines and all(line.startswith("sudo ") for line in lines), lines


def test_make_up_fetches_nothing_for_spark_or_vms(tmp_path: Path) -> None:
    lines = dry_run("up", 0, tmp_path)
    assert not any("spark" in line or "setup-vm" in line or "box" in line for line in lines)


def test_make_test_prepares_spark_the_streams_app_and_the_box_before_pytest(tmp_path: Path) -> None:
    lines = dry_run("test", 0, tmp_path)
    pytest_at = lines.index("./scripts/test.sh")  # the pytest runs (below)
    assert pytest_at == len(lines) - 1
    assert lines.index("./scripts/setup-vm.sh") < pytest_at  # it builds the box
    assert lines.index(".venv/bin/kafkalab fetch --with spark --streams") < pytest_at
    assert lines.index(".venv/bin/kafkalab fetch --mode zookeeper") < pytest_at  # Kafka 3.9


def test_setup_script_fetches_only_what_the_default_lab_needs(tmp_path: Path) -> None:
    """scripts/setup.sh, run for real on a copy with every package present: its one
    `kafkalab` call is a plain `fetch` (Kafka and the base image), not `--with spark`."""
    copy = tmp_path / "repo"
    shutil.copytree(repo_root() / "scripts", copy / "scripts")
    shutil.copy2(repo_root() / "pyproject.toml", copy / "pyproject.toml")
    venv = copy / ".venv"
    calls = tmp_path / "kafkalab-calls"
    fake_tool(venv / "bin", "python", "exit 0")
    fake_tool(venv / "bin", "kafkalab", f'echo "$*" >> {calls}')
    (venv / ".kafkalab-installed").touch()  # newer than pyproject.toml: pip is skipped
    tools = tmp_path / "tools"
    fake_tool(tools, "id", '[ "$1" = -u ] && echo 0 || exec /usr/bin/id "$@"')
    fake_tool(tools, "dpkg-query", "printf 'install ok installed'")
    fake_tool(tools, "apt-get", "echo apt-get must not run >&2; exit 1")
    env = dict(os.environ, PATH=f"{tools}:{os.environ['PATH']}")
    subprocess.run(
        ["bash", str(copy / "scripts" / "setup.sh")], env=env, check=True, capture_output=True
    )
    assert calls.read_text().splitlines() == ["fetch"]


def fake_suite(tmp_path: Path, codes: dict[str, int]) -> tuple[Path, Path]:
    """A copy of scripts/test.sh beside a fake .venv/bin/pytest that logs each run's
    arguments (start and end) and exits with the code given for its first path."""
    copy = tmp_path / "repo"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy(repo_root() / "scripts" / "test.sh", copy / "scripts" / "test.sh")
    log = tmp_path / "runs.log"
    cases = "\n".join(f"  *' {path} '*) code={code} ;;" for path, code in codes.items())
    fake_tool(
        copy / ".venv" / "bin",
        "pytest",
        f"""echo "start $*" >> {log}
grep SigIgn /proc/$$/status >> {log}.sigint
code=0
case " $* " in
{cases}
esac
[ "$code" = 0 ] || echo "pytest of $* failed"
# run on until two runs have started (at most 3 s): two that overlap both start first
for _ in $(seq 60); do [ "$(grep -c '^start' {log})" -ge 2 ] && break; sleep 0.05; done
echo "end $*" >> {log}
exit $code""",
    )
    return copy / "scripts" / "test.sh", log


def test_make_test_runs_the_session_lab_tiers_beside_the_others_then_the_vm_smoke(
    tmp_path: Path,
) -> None:
    script, log = fake_suite(tmp_path, {})
    done = subprocess.run([str(script), "-x"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    runs = log.read_text().splitlines()
    side = (
        "-p no:cacheprovider tests/streaming tests/targets tests/unit tests/lint"
        " tests/machines tests/molecule -x"
    )
    first = (
        "tests --ignore=tests/streaming --ignore=tests/targets --ignore=tests/unit"
        " --ignore=tests/lint --ignore=tests/machines --ignore=tests/molecule --ignore=tests/vm -x"
    )
    # the session labs' tiers and the side tiers overlap: both start before either ends
    assert {runs[0], runs[1]} == {f"start {side}", f"start {first}"}
    assert sorted(runs[2:4]) == sorted([f"end {side}", f"end {first}"])
    # then the VM smoke, alone
    assert runs[4:] == ["start tests/vm -x", "end tests/vm -x"]


@pytest.mark.parametrize("failing", ["tests", "tests/vm", "tests/unit"])
def test_make_test_fails_when_any_run_fails_and_still_runs_the_others(
    tmp_path: Path, failing: str
) -> None:
    script, log = fake_suite(tmp_path, {failing: 3})
    done = subprocess.run([str(script)], capture_output=True, text=True)
    assert done.returncode == 3
    assert len(log.read_text().splitlines()) == 6  # three runs, each started and ended
    shown = [line for line in done.stdout.splitlines() if line.startswith("pytest of ")]
    assert len(shown) == 1 and f" {failing} " in f"{shown[0]} ", done.stdout  # its output too


def sigint_as_from_a_terminal() -> None:
    """A terminal's make test starts with SIGINT at its default. A shell that starts with it
    ignored (a background job of a script, nohup's harness) cannot reset it, rightly: so
    the script runs here as a terminal would start it, whatever this test inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_reaches_every_pytest_run(tmp_path: Path) -> None:
    """No run starts with SIGINT ignored (bash's default for a background command): a
    Ctrl-C on make test stops the side tiers too, and their labs are taken down."""
    script, log = fake_suite(tmp_path, {})
    done = subprocess.run(
        [str(script)], capture_output=True, text=True, preexec_fn=sigint_as_from_a_terminal
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ignored = [int(line.split()[1], 16) for line in Path(f"{log}.sigint").read_text().splitlines()]
    assert len(ignored) == 3 and not [m for m in ignored if m & (1 << (signal.SIGINT - 1))]
