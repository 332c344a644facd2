"""``memwarden stack down --workers`` (:func:`memwarden.ops.stack.stop_workers`): the README says "stop the worker"
before ``state digest`` or a rebuild, and until the twenty-fifth session only ``stack down`` did it, with the broker
and the database (newcomer trial). It stops every process of ours with a pid file but Kafka and PostgreSQL. No
broker, no database: processes of this test stand in for them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memwarden.ops import pidfiles
from memwarden.ops.stack import stop_workers
from memwarden.settings import Settings


def test_workers_stop_and_the_services_keep_running(tmp_path: Path) -> None:
    s = Settings(data_dir=str(tmp_path))
    procs = {name: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
             for name in ("worker-mw-8600", "supervisor-mw-8600", "kafka")}
    try:
        for name, p in procs.items():
            pidfiles.write_pidfile(s, name, p.pid)
        assert stop_workers(s) == ["supervisor-mw-8600", "worker-mw-8600"]
        for name in ("worker-mw-8600", "supervisor-mw-8600"):
            assert procs[name].wait(timeout=30) is not None
            assert not pidfiles.pidfile_path(s, name).exists()
        assert procs["kafka"].poll() is None and pidfiles.pidfile_path(s, "kafka").exists()
        assert stop_workers(s) == []
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
