"""Lab 07 (Spark streaming) as a learner meets it, on the streaming lab: start -> the check
fails -> solve (producer, job, kill, restart from the checkpoint, compare with the CSV)
-> the check passes -> reset -> the check fails again."""

import pytest

from tests.labs.helpers import start_check_solve_reset

pytestmark = [pytest.mark.cluster, pytest.mark.streaming]


def test_spark_streaming_lab(streaming_lab):
    start_check_solve_reset(streaming_lab, "07")
