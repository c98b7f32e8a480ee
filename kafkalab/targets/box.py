"""The Vagrant libvirt box: the base image recipe plus a kernel, laid on a bootable disk.

`images/box-libvirt.yml` extends `images/debian-base.yml`: one mmdebstrap run installs
both package lists and runs both customize lists (the base's first), so the VM and the
embedded machines share one recipe. The rootfs then becomes a disk without loop devices
or mounts: an MBR with one partition, an ext4 file system written by `mke2fs -d` at a
1 MiB offset, GRUB's boot.img in the MBR and a core.img (built inside the rootfs by
grub-mkimage, with an embedded script that boots /vmlinuz) in the sectors before the
partition. `qemu-img convert` makes it a compressed qcow2: the box's `box.img`.

Cached by the hash of both recipes and BOX_FORMAT in
`<cache>/boxes/<name>-<hash>/`: `box.img`, `metadata.json`, `Vagrantfile` and the
`<name>.box` file (a tar of those three) that `vagrant box add` takes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kafkalab.artifacts import cache as artifact_cache
from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root, repo_root
from kafkalab.targets import image

RECIPE = "images/box-libvirt.yml"
# Bump when the disk layout below changes: it is part of the cache key.
BOX_FORMAT = "1"
DEFAULT_BOX_NAME = "kafkalab/debian12"
PARTITION_START = 2048  # sectors of 512 bytes: the partition starts at 1 MiB
SECTOR = 512
HOST_TOOLS = {
    "mmdebstrap": "mmdebstrap",
    "mke2fs": "e2fsprogs",
    "sfdisk": "fdisk",
    "qemu-img": "qemu-utils",
}

# The box's own Vagrantfile: merged under the project's (which sets memory, driver,
# networks). Only what any VM from this box needs.
BOX_VAGRANTFILE = """\
# Vagrantfile shipped inside the kafkalab box (kafkalab/box.py writes it).
Vagrant.configure("2") do |config|
  config.vm.synced_folder ".", "/vagrant", disabled: true
  config.vm.provider :libvirt do |lv|
    lv.disk_bus = "virtio"
    lv.nic_model_type = "virtio"
  end
end
"""


@dataclass
class Box:
    """A built box in the cache."""

    name: str
    directory: Path

    @property
    def file(self) -> Path:
        return self.directory / f"{self.name}.box"

    @property
    def image(self) -> Path:
        return self.directory / "box.img"


def recipe_path() -> Path:
    return repo_root() / RECIPE


def load_recipe(recipe: Path | None = None) -> dict[str, Any]:
    """The box recipe merged with the recipe it extends (base packages and steps first)."""
    recipe = recipe or recipe_path()
    spec: dict[str, Any] = yaml.safe_load(recipe.read_text())
    parent_name = spec.get("extends")
    if not parent_name:
        return spec
    parent = load_recipe(recipe.parent / parent_name)
    merged = {**parent, **{k: v for k, v in spec.items() if k not in ("packages", "customize")}}
    merged.pop("extends", None)
    merged["packages"] = list(
        dict.fromkeys([*parent.get("packages", []), *spec.get("packages", [])])
    )
    merged["customize"] = [*parent.get("customize", []), *spec.get("customize", [])]
    return merged


def recipe_files(recipe: Path | None = None) -> list[Path]:
    """The recipe and every recipe it extends, the box's own first."""
    recipe = recipe or recipe_path()
    out = [recipe]
    parent = yaml.safe_load(recipe.read_text()).get("extends")
    if parent:
        out += recipe_files(recipe.parent / parent)
    return out


def box_hash(recipe: Path | None = None) -> str:
    digest = hashlib.sha256(BOX_FORMAT.encode())
    for path in recipe_files(recipe):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def box_dir(recipe: Path | None = None) -> Path:
    name = load_recipe(recipe).get("name", "kafkalab-debian12")
    return cache_root() / "boxes" / f"{name}-{box_hash(recipe)}"


def cached_box(recipe: Path | None = None) -> Box | None:
    directory = box_dir(recipe)
    if not (directory / "complete").exists():
        return None
    return Box(load_recipe(recipe).get("name", "kafkalab-debian12"), directory)


def metadata(disk_gb: int) -> dict[str, Any]:
    """vagrant-libvirt's box metadata (format v1: one qcow2 disk)."""
    return {"provider": "libvirt", "format": "qcow2", "virtual_size": disk_gb}


def missing_tools() -> list[str]:
    return sorted({pkg for tool, pkg in HOST_TOOLS.items() if shutil.which(tool) is None})


def build(
    progress: Callable[[str], None] = print,
    recipe: Path | None = None,
    force: bool = False,
) -> Box:
    """Return the cached box for this recipe, building it first when needed (~3 min)."""
    recipe = recipe or recipe_path()
    if not force and (box := cached_box(recipe)) is not None:
        return box
    with artifact_cache.cache_lock(box_dir(recipe), "the box", progress):
        if not force and (box := cached_box(recipe)) is not None:
            return box  # built while this one waited
        return _build(recipe, progress)


def _build(recipe: Path, progress: Callable[[str], None]) -> Box:
    if missing := missing_tools():
        raise KafkalabError(
            "building the box needs Debian packages that are missing: "
            f"{', '.join(missing)}; run scripts/setup-vm.sh (apt-get install {' '.join(missing)})"
        )
    spec = load_recipe(recipe)
    name = spec.get("name", "kafkalab-debian12")
    disk_gb = int(spec.get("disk_gb", 16))
    work = box_dir(recipe)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    log = work / "build.log"
    start = time.monotonic()
    mirror = os.environ.get("KAFKALAB_DEBIAN_MIRROR", image.DEFAULT_MIRROR)
    rootfs = work / "rootfs"
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as tmp:
        yaml.safe_dump(spec, tmp)
    try:
        progress(f"building the box rootfs from Debian packages ({mirror}), a few minutes…")
        _run(image.mmdebstrap_command(Path(tmp.name), rootfs, mirror), log, "mmdebstrap")
    finally:
        os.unlink(tmp.name)
    progress("laying the rootfs on a bootable disk (ext4 + GRUB in the MBR)")
    raw = work / "disk.raw"
    make_disk(rootfs, raw, disk_gb, log)
    progress("converting the disk to a compressed qcow2")
    _run(
        ["qemu-img", "convert", "-c", "-O", "qcow2", str(raw), str(work / "box.img")],
        log,
        "qemu-img",
    )
    raw.unlink()
    shutil.rmtree(rootfs)
    (work / "metadata.json").write_text(json.dumps(metadata(disk_gb)) + "\n")
    (work / "Vagrantfile").write_text(BOX_VAGRANTFILE)
    box = Box(name, work)
    with tarfile.open(box.file, "w") as tar:
        for member in ("metadata.json", "Vagrantfile", "box.img"):
            tar.add(work / member, arcname=member)
    (work / "complete").write_text(f"{box_hash(recipe)} {time.monotonic() - start:.0f}s\n")
    progress(f"box ready: {box.file} ({box.file.stat().st_size >> 20} MiB)")
    return box


def make_disk(rootfs: Path, raw: Path, disk_gb: int, log: Path) -> None:
    """An MBR disk image with the rootfs as its only (ext4, bootable) partition."""
    core = (rootfs / "boot/grub/kafkalab-core.img").read_bytes()
    boot = (rootfs / "boot/grub/kafkalab-boot.img").read_bytes()
    if len(core) > (PARTITION_START - 1) * SECTOR:
        raise KafkalabError(f"GRUB core image too large for the MBR gap ({len(core)} bytes)")
    size = disk_gb << 30
    with raw.open("wb") as f:
        f.truncate(size)
    layout = f"label: dos\nstart={PARTITION_START}, type=83, bootable\n"
    _run(["sfdisk", "--no-reread", "--no-tell-kernel", str(raw)], log, "sfdisk", stdin=layout)
    fs_kib = (size - PARTITION_START * SECTOR) // 1024
    _run(
        [
            "mke2fs",
            "-q",
            "-F",
            "-t",
            "ext4",
            "-L",
            "kafkalab-root",
            "-b",
            "4096",
            "-E",
            f"offset={PARTITION_START * SECTOR}",
            "-d",
            str(rootfs),
            str(raw),
            f"{fs_kib}k",
        ],
        log,
        "mke2fs",
    )
    with raw.open("r+b") as f:
        # boot.img's code only: bytes 440.. hold the disk signature and partition table.
        f.write(boot[:440])
        f.seek(SECTOR)  # boot.img loads core.img from sector 1 (its default kernel_sector)
        f.write(core)


def _run(cmd: list[str], log: Path, what: str, stdin: str | None = None) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, input=stdin, text=True)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-8:])
        raise KafkalabError(f"building the box failed in {what} (log: {log}):\n{tail}")


def add_command(box: Box, name: str = DEFAULT_BOX_NAME) -> list[str]:
    """`vagrant box add` for the built box (what a trainer runs once per machine)."""
    return ["vagrant", "box", "add", "--force", "--name", name, str(box.file)]


def add_once(built: Box, name: str, env: dict[str, str], log: Path) -> bool:
    """`vagrant box add` unless this built box was already added under `name` for this
    VAGRANT_HOME (a stamp beside the box remembers it). Re-adding rewrites the box's
    files, and vagrant-libvirt would then upload the image into libvirt again."""
    home = env.get("VAGRANT_HOME", str(Path.home() / ".vagrant.d"))
    stamp = built.directory / "added"
    key = f"{name} {home}"
    listed = subprocess.run(["vagrant", "box", "list"], env=env, capture_output=True, text=True)
    if stamp.exists() and key in stamp.read_text().splitlines() and name in listed.stdout:
        return False
    with log.open("a") as out:
        proc = subprocess.run(add_command(built, name), env=env, stdout=out, stderr=out)
    if proc.returncode != 0:
        raise KafkalabError(f"vagrant box add failed (log: {log})")
    with stamp.open("a") as f:
        f.write(key + "\n")
    return True
