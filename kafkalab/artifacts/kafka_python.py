"""The kafka-python wheel the `kafka` role puts into the machines' `python3`.

The course pages use kafka-python (`from kafka import KafkaProducer`) on the machines, which
have no internet: the wheel travels through the artifact cache like Kafka's tarball.
`resolve_kafka_python` returns `<cache>/pypi/kafka_python-<version>-py2.py3-none-any.whl`,
checked against the SHA-256 PyPI publishes for it (pinned here, so a wheel a trainer copied
into the cache is checked the same way); when it is not there, one `pip download` from PyPI
fetches it first (checked before it is kept). Offline afterwards.

The version is the one pyproject.toml pins for the controller: 2.3.x speaks to every broker
from 0.8 to 4.0 (the old 2.0.2 fails against Kafka 4, which dropped the old protocol
versions), is pure Python and has no dependencies.
"""

from __future__ import annotations

from pathlib import Path

from kafkalab.artifacts import pypi
from kafkalab.artifacts.archive import file_digest
from kafkalab.artifacts.cache import Progress, cache_dir, cache_lock
from kafkalab.errors import KafkalabError

VERSION = "2.3.3"
# PyPI's SHA-256 of kafka_python-2.3.3-py2.py3-none-any.whl
SHA256 = "9ab1c473f0bc72c8db82ec77137f30691de42e68807a1933c3200b8771235ce1"
PIP_TIMEOUT = 300


def wheel_name(version: str = VERSION) -> str:
    return f"kafka_python-{version}-py2.py3-none-any.whl"


def wheel_path(cache: Path | None = None, version: str = VERSION) -> Path:
    """Where the wheel lives in the cache (beside the pyspark package pip fetches)."""
    return (cache or cache_dir()) / "pypi" / wheel_name(version)


def verify(wheel: Path) -> None:
    """The wheel against PyPI's SHA-256 (SHA256); a mismatch says what to do."""
    actual, expected = file_digest(wheel, "sha256"), SHA256
    if actual != expected:
        raise KafkalabError(
            f"{wheel} does not match PyPI's SHA-256 for it ({actual[:16]}..., expected"
            f" {expected[:16]}...): it is damaged or another build. Delete it; the next"
            " `kafkalab fetch` downloads it again"
        )


def resolve_kafka_python(cache: Path | None = None, progress: Progress | None = None) -> Path:
    """The checked wheel: from the cache, else downloaded from PyPI once."""
    target = wheel_path(cache)
    if target.exists():
        verify(target)
        return target
    with cache_lock(target, f"kafka-python {VERSION}", progress):
        if not target.exists():  # fetched while this one waited
            (progress or (lambda _msg: None))(f"downloading kafka-python {VERSION} from PyPI")
            download(target)
        verify(target)
    return target


def download(target: Path) -> None:
    """One `pip download` of the pinned wheel, checked before it is kept at `target`."""

    def check(got: Path) -> None:
        if got.name != target.name:
            raise pypi.DownloadFailed(f"pip fetched {got.name}, not {target.name}")
        verify(got)

    try:
        pypi.download(f"kafka-python=={VERSION}", target.parent, PIP_TIMEOUT, True, check)
    except pypi.DownloadFailed as exc:
        raise KafkalabError(_missing(target, str(exc))) from None


def _missing(target: Path, why: str) -> str:
    return (
        f"no kafka-python {VERSION} wheel: {why}. Put {target.name} (from"
        f" https://pypi.org/project/kafka-python/{VERSION}/#files) at {target}"
    )
