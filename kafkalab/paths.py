"""Where kafkalab keeps things: the repo, the shared cache, the lab state."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The checkout kafkalab runs from (holds ansible/, images/, labs/)."""
    return Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """Artifacts and images shared by every lab; a trainer may pre-fill it."""
    env = os.environ.get("KAFKALAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kafkalab"


def state_dir() -> Path:
    """One lab's machines, ssh key and generated inventory."""
    env = os.environ.get("KAFKALAB_STATE")
    return Path(env).expanduser().resolve() if env else repo_root() / ".kafkalab"


def package_data() -> Path:
    """kafkalab/data: launcher templates, the Maven POM, the shipped scenarios."""
    return Path(__file__).resolve().parent / "data"
