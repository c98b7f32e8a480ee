import os
import shutil
import subprocess
import threading
import time

from kafkalab.targets import image


def test_recipe_is_debian_only_and_target_neutral():
    cmd = image.mmdebstrap_command(
        image.recipe_path(), image.rootfs(), "http://mirror.invalid/debian"
    )
    assert cmd[0] == "mmdebstrap"
    include = next(a for a in cmd if a.startswith("--include="))
    for pkg in ("systemd", "openssh-server", "openjdk-17-jre-headless", "python3", "sudo"):
        assert pkg in include.split("=", 1)[1].split(",")
    assert cmd[-3:] == ["bookworm", str(image.rootfs()), "http://mirror.invalid/debian"]
    hooks = " ".join(a for a in cmd if a.startswith("--customize-hook="))
    assert "useradd" in hooks and "vagrant" in hooks
    assert "rm -f /etc/ssh/ssh_host_" in hooks  # no shared host keys
    # one Ed25519 key made at first boot: ssh-keygen -A's RSA key took seconds of CPU
    assert "ssh-keygen -q -t ed25519" in hooks and "ssh-keygen -A" not in hooks
    assert "HostKey /etc/ssh/ssh_host_ed25519_key" in hooks


def test_cache_key_follows_the_recipe(tmp_path):
    recipe = tmp_path / "r.yml"
    recipe.write_text("suite: bookworm\npackages: [systemd]\n")
    first = image.recipe_hash(recipe)
    recipe.write_text("suite: bookworm\npackages: [systemd, sudo]\n")
    assert image.recipe_hash(recipe) != first
    assert image.image_dir(recipe).name == f"debian-base-{image.recipe_hash(recipe)}"


def test_two_builds_of_one_image_take_turns(tmp_path, monkeypatch):
    """A second `kafkalab fetch` while the image is built waits, then finds it built."""
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path / "cache"))
    recipe = tmp_path / "r.yml"
    recipe.write_text("suite: bookworm\npackages: [systemd]\n")
    monkeypatch.setattr(shutil, "which", lambda tool: f"/usr/bin/{tool}")
    started, gate, runs = threading.Event(), threading.Event(), []

    def mmdebstrap(cmd, **_kw):
        runs.append(cmd)
        started.set()
        assert gate.wait(10)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", mmdebstrap)
    said: dict[str, list[str]] = {"first": [], "second": []}
    roots: dict[str, object] = {}

    def fetch(name):
        roots[name] = image.ensure_image(said[name].append, recipe)

    first = threading.Thread(target=fetch, args=("first",))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=fetch, args=("second",))
    second.start()
    deadline = time.monotonic() + 10
    while not said["second"] and time.monotonic() < deadline:
        time.sleep(0.02)
    gate.set()
    first.join(10)
    second.join(10)
    assert len(runs) == 1
    assert roots["first"] == roots["second"] == image.rootfs(recipe)
    assert said["second"] == [
        f"another kafkalab (pid {os.getpid()}) is building the base image; waiting for it"
    ]
    assert image.is_built(recipe)
