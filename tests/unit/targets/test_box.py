"""The box recipe extends the base image recipe; the disk layout boots (MBR, GRUB, ext4)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
import yaml

from kafkalab.paths import repo_root
from kafkalab.targets import box, image


def test_box_recipe_extends_the_base() -> None:
    base = yaml.safe_load((repo_root() / image.RECIPE).read_text())
    merged = box.load_recipe()
    assert merged["suite"] == base["suite"]
    assert merged["packages"][: len(base["packages"])] == base["packages"]
    assert {"linux-image-amd64", "initramfs-tools", "grub-pc-bin"} <= set(merged["packages"])
    # fault isolate's nft, on the offline VM as on the embedded machines
    assert "nftables" in base["packages"] and "nftables" in merged["packages"]
    assert merged["customize"][: len(base["customize"])] == base["customize"]
    assert "extends" not in merged


def test_mmdebstrap_gets_both_recipes(tmp_path: Path) -> None:
    recipe = tmp_path / "merged.yml"
    recipe.write_text(yaml.safe_dump(box.load_recipe()))
    cmd = image.mmdebstrap_command(recipe, tmp_path / "rootfs", "http://deb.example/debian")
    include = next(a for a in cmd if a.startswith("--include="))
    assert "openjdk-17-jre-headless" in include and "linux-image-amd64" in include
    hooks = " ".join(a for a in cmd if a.startswith("--customize-hook="))
    assert "useradd" in hooks and "grub-mkimage" in hooks and "vagrant insecure public key" in hooks


def test_hash_follows_both_recipes(tmp_path: Path) -> None:
    (tmp_path / "base.yml").write_text("suite: bookworm\npackages: [a]\n")
    (tmp_path / "box.yml").write_text("extends: base.yml\npackages: [b]\n")
    first = box.box_hash(tmp_path / "box.yml")
    (tmp_path / "base.yml").write_text("suite: bookworm\npackages: [a, c]\n")
    second = box.box_hash(tmp_path / "box.yml")
    (tmp_path / "box.yml").write_text("extends: base.yml\npackages: [b, d]\n")
    assert len({first, second, box.box_hash(tmp_path / "box.yml")}) == 3
    assert box.load_recipe(tmp_path / "box.yml")["packages"] == ["a", "c", "b", "d"]


def test_cached_box_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path))
    directory = box.box_dir()
    directory.mkdir(parents=True)
    (directory / "complete").write_text("done\n")
    built = box.build(progress=lambda _m: pytest.fail("must not rebuild"))
    assert built.directory == directory
    assert built.file.name == "kafkalab-debian12.box"


def test_metadata_is_vagrant_libvirt_v1() -> None:
    assert box.metadata(16) == {"provider": "libvirt", "format": "qcow2", "virtual_size": 16}
    json.dumps(box.metadata(16))


def test_add_command() -> None:
    b = box.Box("kafkalab-debian12", Path("/c/boxes/x"))
    assert box.add_command(b) == [
        "vagrant",
        "box",
        "add",
        "--force",
        "--name",
        "kafkalab/debian12",
        "/c/boxes/x/kafkalab-debian12.box",
    ]


@pytest.mark.skipif(
    shutil.which("mke2fs") is None or shutil.which("sfdisk") is None,
    reason="e2fsprogs/fdisk missing",
)
def test_disk_layout(tmp_path: Path) -> None:
    """MBR with GRUB's boot code, core.img from sector 1, one bootable ext4 partition at 1 MiB."""
    rootfs = tmp_path / "rootfs"
    (rootfs / "boot/grub").mkdir(parents=True)
    (rootfs / "etc").mkdir()
    (rootfs / "etc/hostname").write_text("kafkalab\n")
    boot = bytes(range(256)) * 2
    core = b"CORE" * 8000
    (rootfs / "boot/grub/kafkalab-boot.img").write_bytes(boot)
    (rootfs / "boot/grub/kafkalab-core.img").write_bytes(core)
    raw = tmp_path / "disk.raw"
    box.make_disk(rootfs, raw, 1, tmp_path / "log")
    data = raw.open("rb").read(2 << 20)
    assert data[:440] == boot[:440]
    assert data[510:512] == b"\x55\xaa"
    status, ptype = data[446], data[446 + 4]
    start, sectors = struct.unpack("<II", data[446 + 8 : 446 + 16])
    assert (status, ptype, start) == (0x80, 0x83, box.PARTITION_START)
    assert start + sectors == (1 << 30) // box.SECTOR
    assert data[512 : 512 + len(core)] == core
    sb = data[box.PARTITION_START * box.SECTOR + 1024 :]
    assert sb[56:58] == b"\x53\xef"  # ext2/3/4 magic
    assert sb[120:136].rstrip(b"\0") == b"kafkalab-root"
