"""One Vagrantfile for every lab folder: labs/NN-name/Vagrantfile is a link to
labs/Vagrantfile.lab (no copies to drift apart). What the links bring up is tested in
tests/unit/targets/test_vagrant.py."""

from __future__ import annotations

import os

import pytest

from kafkalab.paths import repo_root

pytestmark = pytest.mark.lint
LABS = repo_root() / "labs"


def test_every_lab_vagrantfile_links_to_the_shared_one() -> None:
    labs = sorted(p for p in LABS.iterdir() if (p / "lab.yml").exists())
    assert labs
    for lab in labs:
        path = lab / "Vagrantfile"
        assert path.is_symlink(), f"{path}: make it a link: ln -sf ../Vagrantfile.lab {path}"
        assert os.readlink(path) == "../Vagrantfile.lab", path
    assert (LABS / "Vagrantfile.lab").is_file()
