"""The learner's progress per lab, kept in the cluster's state dir next to the cluster it
belongs to: <state>/labs/state.json (not started, in progress, passed) and a work dir per
lab (<state>/labs/NN-name/) where its scripts note things."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafkalab.labs.definition import Lab
from kafkalab.paths import state_dir

STATES = ("not started", "in progress", "passed")


class Progress:
    """Per-lab state in <state>/labs/state.json: not started, in progress, passed."""

    def __init__(self, state: Path | None = None) -> None:
        self.root = (state or state_dir()) / "labs"
        self.file = self.root / "state.json"

    def _all(self) -> dict[str, dict[str, Any]]:
        if not self.file.exists():
            return {}
        data: dict[str, dict[str, Any]] = json.loads(self.file.read_text())
        return data

    def get(self, lab: Lab) -> dict[str, Any]:
        return self._all().get(lab.slug, {"state": "not started"})

    def state(self, lab: Lab) -> str:
        return str(self.get(lab)["state"])

    def workdir(self, lab: Lab) -> Path:
        return self.root / lab.slug

    def set(self, lab: Lab, state: str, **extra: Any) -> None:
        assert state in STATES
        data = self._all()
        entry = {**data.get(lab.slug, {}), **extra, "state": state}
        entry["since" if state == "in progress" else "passed_at"] = datetime.now(UTC).isoformat(
            timespec="seconds"
        )
        data[lab.slug] = entry
        self.root.mkdir(parents=True, exist_ok=True)
        self.file.write_text(json.dumps(data, indent=2) + "\n")
