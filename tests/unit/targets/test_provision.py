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
        "ANSIBLE_STRATEGY_PLUGINS": str(package / "plugins" / "strategy"),
        "ANSIBLE_STRATEGY": "mitogen_linear",
    }
    assert provision.strategy_env({"KAFKALAB_MITOGEN": "0"}) == {}


def test_stock_strategy_without_mitogen(monkeypatch):
    monkeypatch.setattr(provision.importlib.util, "find_spec", lambda name: None)
    assert provision.strategy_env({}) == {}


def test_project_setup_installs_mitogen_and_its_strategy(monkeypatch):
    """pyproject lists mitogen, so the venv has it: its linear strategy is where
    strategy_env points Ansible."""
    monkeypatch.delenv("KAFKALAB_MITOGEN", raising=False)
    strategies = provision.mitogen_strategy_dir()
    assert strategies is not None, "mitogen missing: pip install -e '.[dev]' again"
    assert (strategies / "mitogen_linear.py").is_file()
    assert provision.strategy_env({})["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert "ANSIBLE_STRATEGY" not in provision.ansible_env()  # ad-hoc runs keep the stock one
