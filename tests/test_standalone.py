"""`./lab cluster`'s bookkeeping without starting a cluster (the CI pass starts a real one in
`tests/test_faults.py`): only the recorded JVMs are ever signalled, and a missing record is said."""

from __future__ import annotations

import subprocess

from pipelines import standalone


def test_stop_leaves_a_process_that_is_no_longer_the_recorded_jvm(tmp_path):
    """A recorded pid now running something else (a reused pid) is not signalled."""
    other = subprocess.Popen(["sleep", "60"])
    try:
        record = standalone.Process("master", other.pid, standalone.MASTER_CLASS, 7077, 8080)
        standalone._save(standalone.Cluster(str(tmp_path), [record]))
        assert not record.alive()
        assert standalone.stop(tmp_path) == []
        assert other.poll() is None  # still running
        assert standalone.load(tmp_path) is None  # the record is gone
    finally:
        other.kill()
        other.wait()


def test_status_and_url_without_a_cluster(tmp_path, capsys):
    assert "no cluster recorded" in standalone.status(tmp_path)
    assert standalone.main(["--folder", str(tmp_path), "url"]) == 1
    assert "no cluster is running" in capsys.readouterr().err
    assert standalone.main(["--folder", str(tmp_path), "kill-worker", "1"]) == 1
