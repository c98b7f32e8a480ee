import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkalab.paths import repo_root
from kafkalab.targets import provision

RECAP = """
PLAY RECAP *********************************************************************
kafka1                     : ok=31   changed=0    unreachable=0    failed=0    skipped=9    rescued=0    ignored=0
kafka2                     : ok=29   changed=2    unreachable=0    failed=0    skipped=9    rescued=0    ignored=0
kafka3                     : ok=12   changed=0    unreachable=1    failed=1    skipped=0    rescued=0    ignored=0
"""


def test_recap_counts():
    recap = provision.parse_recap(RECAP.splitlines())
    assert set(recap.hosts) == {"kafka1", "kafka2", "kafka3"}
    assert recap.changed == 2
    assert recap.failed == 2
    assert recap.hosts["kafka1"]["ok"] == 31


def test_task_lines_are_recognised():
    assert provision.TASK.match("TASK [kafka : Format KRaft storage] ****")["name"] == (
        "kafka : Format KRaft storage"
    )
    assert provision.TASK.match("RUNNING HANDLER [kafka : Restart] **")


def test_failure_detail_names_the_task_and_keeps_the_result():
    lines = [
        "TASK [kafka : Wait for the Kafka listener] ****",
        "fatal: [kafka1]: FAILED! => ",
        "    changed: false",
        "    msg: Timeout when waiting for 10.77.0.11:9092",
        "",
        "PLAY RECAP ****",
    ]
    detail = provision.failure_detail(lines)
    assert "TASK [kafka : Wait for the Kafka listener]" in detail
    assert "msg: Timeout when waiting for 10.77.0.11:9092" in detail
    assert "PLAY RECAP" not in detail


def test_mitogen_strategy_is_used_when_installed(monkeypatch, tmp_path):
    package = tmp_path / "ansible_mitogen"
    (package / "plugins" / "strategy").mkdir(parents=True)
    spec = provision.importlib.util.spec_from_file_location(
        "ansible_mitogen", package / "__init__.py"
    )
    monkeypatch.setattr(provision.importlib.util, "find_spec", lambda name: spec)
    env = provision.strategy_env({})
    assert env == {
        "ANSIBLE_STRATEGY_PLUGINS": str(repo_root() / "ansible" / "plugins" / "strategy"),
        "ANSIBLE_STRATEGY": "kafkalab_linear",
    }
    assert provision.strategy_env({"KAFKALAB_MITOGEN": "0"}) == {}


def test_stock_strategy_without_mitogen(monkeypatch):
    monkeypatch.setattr(provision.importlib.util, "find_spec", lambda name: None)
    assert provision.strategy_env({}) == {}


def test_project_setup_installs_mitogen_and_its_strategy(monkeypatch):
    """pyproject lists mitogen, so the venv has it: kafkalab's strategy plugin is where
    strategy_env points Ansible."""
    monkeypatch.delenv("KAFKALAB_MITOGEN", raising=False)
    assert provision.mitogen_strategy_dir() is not None, "mitogen missing: make setup again"
    env = provision.strategy_env({})
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "kafkalab_linear.py").is_file()
    assert env["ANSIBLE_STRATEGY"] == "kafkalab_linear"
    assert "ANSIBLE_STRATEGY" not in provision.ansible_env()  # ad-hoc runs keep the stock one


PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Read which CPUs a task may use
      ansible.builtin.command: grep Cpus_allowed_list /proc/self/status
      register: allowed
      changed_when: false
    - name: Show them
      ansible.builtin.debug:
        msg: "allowed={{ allowed.stdout.split()[-1] }}"
"""


def task_cpus(tmp_path: Path, strategy: dict[str, str]) -> str:
    """The CPUs a command task may run on, under `strategy` (connection local)."""
    playbook = tmp_path / "cpus.yml"
    playbook.write_text(PLAY)
    env = {**provision.ansible_env(), **strategy, "ANSIBLE_LOCALHOST_WARNING": "0"}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    allowed = re.search(r"allowed=([0-9,-]+)", proc.stdout)
    assert allowed, proc.stdout[-2000:]
    return allowed[1]


def test_the_strategy_leaves_every_cpu_to_the_tasks(tmp_path):
    """Mitogen's own strategy pins what it runs (on 2 or 3 CPUs: workers and ssh on CPU 1,
    beside the machines' JVMs); kafkalab_linear runs the task through Mitogen as well, and
    the task may use every CPU this process may."""
    every = Path("/proc/self/status").read_text().split("Cpus_allowed_list:")[1].split()[0]
    assert task_cpus(tmp_path, provision.strategy_env({})) == every
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: Mitogen's own strategy has nothing to pin, no control case")
    mitogen = provision.mitogen_strategy_dir()
    assert mitogen is not None
    # the control: Mitogen's own linear strategy runs the same task pinned
    own = {"ANSIBLE_STRATEGY_PLUGINS": str(mitogen), "ANSIBLE_STRATEGY": "mitogen_linear"}
    assert task_cpus(tmp_path, own) != every


def load_strategy(monkeypatch: pytest.MonkeyPatch) -> Any:
    """kafkalab_linear loaded as Ansible loads it; what it replaces in Mitogen is put back
    after the test."""
    import importlib.util

    import ansible_mitogen.module_finder as finder
    import mitogen.master
    import mitogen.minify

    monkeypatch.setattr(finder, "compile", compile, raising=False)
    monkeypatch.setattr(mitogen.master, "compile", compile, raising=False)
    monkeypatch.setattr(mitogen.minify, "minimize_source", mitogen.minify.minimize_source)
    plugin = Path(provision.strategy_env({})["ANSIBLE_STRATEGY_PLUGINS"]) / "kafkalab_linear.py"
    spec = importlib.util.spec_from_file_location("kafkalab_linear_under_test", plugin)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = 'import os\n\n\ndef f():\n    """doc"""\n    # a comment\n    return os.sep\n'


def test_the_strategy_keeps_what_mitogen_compiles_and_minifies_for_the_next_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run's multiplexer is a new process: what kafkalab_linear compiled and minified is
    read back from the directory kafkalab names."""
    import builtins

    monkeypatch.setenv("KAFKALAB_CONTROLLER_CACHE", str(tmp_path / "controller"))
    plugin = load_strategy(monkeypatch)
    code = plugin.compile_once(SOURCE, "m.py", "exec")
    text = plugin.minimize_once(SOURCE)
    assert "a comment" not in text and "os.sep" in text
    assert len([p for p in (tmp_path / "controller").rglob("*") if p.is_file()]) == 2
    plugin = load_strategy(monkeypatch)  # the next run: nothing in memory

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("made again")

    monkeypatch.setattr(builtins, "compile", refuse)
    monkeypatch.setattr(plugin, "_minimize_source", refuse)
    assert plugin.compile_once(SOURCE, "m.py", "exec") == code
    assert plugin.minimize_once(SOURCE) == text
    with pytest.raises(AssertionError, match="made again"):  # another file's code: made
        plugin.compile_once(SOURCE, "other.py", "exec")


def test_a_cache_the_strategy_cannot_write_only_costs_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKALAB_CONTROLLER_CACHE", "/dev/null/not-a-dir")
    plugin = load_strategy(monkeypatch)
    assert plugin.compile_once(SOURCE, "m.py", "exec").co_filename == "m.py"
    assert "a comment" not in plugin.minimize_once(SOURCE)


def test_ansible_runs_with_a_controller_cache_in_kafkalabs_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KAFKALAB_CONTROLLER_CACHE", raising=False)
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path))
    assert provision.ansible_env()["KAFKALAB_CONTROLLER_CACHE"] == str(tmp_path / "controller")


def test_the_strategy_compiles_each_module_util_once_a_run(monkeypatch):
    """Mitogen scans each module a run uses for its module_utils; with kafkalab_linear loaded,
    a second module's scan compiles none of the files the first one compiled (command and
    stat share 46), where Mitogen alone compiles them all again."""
    import builtins

    import ansible_mitogen.module_finder as finder

    import ansible

    ansible_dir = Path(ansible.__file__).parent
    compiled: list[str] = []
    real_compile = builtins.compile

    def counting(source, filename, mode, *args, **kwargs):
        compiled.append(filename)
        return real_compile(source, filename, mode, *args, **kwargs)

    def scan(module: str) -> list[str]:
        compiled.clear()
        finder.scan(
            module_name=f"ansible.modules.{module}",
            module_path=str(ansible_dir / "modules" / f"{module}.py"),
            search_path=(str(ansible_dir / "module_utils"),),
        )
        return list(compiled)

    monkeypatch.setattr(builtins, "compile", counting)
    monkeypatch.setattr(finder, "compile", counting, raising=False)
    assert "ansible.module_utils.basic" in scan("command")
    assert "ansible.module_utils.basic" in scan("stat")  # the control: compiled again
    load_strategy(monkeypatch)
    first = scan("command")
    assert "ansible.module_utils.basic" in first
    assert scan("stat") == ["ansible.modules.stat"]


QUICK_EXIT_PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Say it
      ansible.builtin.debug:
        msg: "{{ 'made it' }}"
    - name: Fail when told
      ansible.builtin.fail:
        msg: told to fail
      when: fail | default(false) | bool
"""


@pytest.mark.parametrize(("extra", "code"), [([], 0), (["-e", "fail=true"], 2)])
def test_playbooks_run_through_a_quick_exit_with_ansibles_status(
    tmp_path: Path, extra: list[str], code: int
) -> None:
    """kafkalab runs ansible-playbook through ansible_playbook.py, which skips only the
    interpreter's teardown: the exit status, the output and the exit handlers' work (the
    log Ansible writes, the temporary files its exit handler removes) are ansible-playbook's."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(QUICK_EXIT_PLAY)
    env = {
        **provision.ansible_env(),
        **provision.strategy_env({}),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_LOG_PATH": str(tmp_path / "ansible.log"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local"),
        "KAFKALAB_CONTROLLER_CACHE": str(tmp_path / "controller"),
    }
    cmd = provision.ansible_playbook([str(playbook), *extra])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "made it" in proc.stdout
    assert "PLAY RECAP" in (tmp_path / "ansible.log").read_text()
    # Ansible's own exit handler removed its temporary directory (ansible-local-*)
    assert (tmp_path / "local").is_dir() and list((tmp_path / "local").iterdir()) == []


def test_a_torn_file_in_the_strategys_cache_is_made_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KAFKALAB_CONTROLLER_CACHE", str(tmp_path / "controller"))
    plugin = load_strategy(monkeypatch)
    text = plugin.minimize_once(SOURCE)
    (kept,) = [p for p in (tmp_path / "controller").rglob("*") if p.is_file()]
    kept.write_bytes(kept.read_bytes()[:10])  # a crash mid-write, a disk that filled up
    plugin = load_strategy(monkeypatch)
    made: list[str] = []
    real = plugin._minimize_source
    monkeypatch.setattr(plugin, "_minimize_source", lambda s: made.append(s) or real(s))
    assert plugin.minimize_once(SOURCE) == text
    assert made == [SOURCE]
