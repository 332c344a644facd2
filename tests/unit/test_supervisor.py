"""The worker supervisor (issue 13 part 2): its backoff, and that it restarts a child that exits
non-zero, ends with one that exits 0, and stops its child when asked."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from memwarden.ops.supervisor import RestartPolicy, Supervisor, next_delay

P = RestartPolicy(first_s=1.0, max_s=8.0, reset_after_s=60.0)


def test_backoff_doubles_up_to_the_cap_and_starts_over_after_a_healthy_run() -> None:
    delays, delay = [], None
    for _ in range(6):
        delay = next_delay(P, delay, ran_s=2.0)
        delays.append(delay)
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert next_delay(P, 8.0, ran_s=60.0) == 1.0  # ran long enough: healthy again


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "child.py"
    path.write_text(body)
    return [sys.executable, str(path)]


def test_a_child_that_exits_non_zero_is_restarted_until_one_exits_zero(tmp_path: Path) -> None:
    counter = tmp_path / "runs"
    argv = _script(tmp_path, f"""
import pathlib, sys
p = pathlib.Path({str(counter)!r})
n = int(p.read_text()) + 1 if p.exists() else 1
p.write_text(str(n))
sys.exit(0 if n == 3 else 1)
""")
    s = Supervisor(argv, policy=RestartPolicy(first_s=0.05, max_s=0.1))
    assert s.run() == 0
    assert counter.read_text() == "3" and s.restarts == 2


def test_stop_ends_the_child_and_the_supervisor_without_a_restart(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    argv = _script(tmp_path, f"""
import pathlib, time
p = pathlib.Path({str(marker)!r})
p.write_text(p.read_text() + "x" if p.exists() else "x")
time.sleep(60)
""")
    s = Supervisor(argv, policy=RestartPolicy(first_s=0.05), stop_timeout_s=5.0)
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(s.run()))
    t.start()
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    s.stop()
    t.join(20)
    assert not t.is_alive() and result == [0]
    assert marker.read_text() == "x" and s.restarts == 0  # stopped, not restarted


def test_a_running_child_the_probe_finds_stalled_is_replaced_by_a_fresh_one(tmp_path: Path) -> None:
    """A child that never exits but that the liveness probe reports stalled is stopped and started again,
    like one that exited non-zero; the probe is not asked during the grace period."""
    marker = tmp_path / "started"
    argv = _script(tmp_path, f"""
import pathlib, time
p = pathlib.Path({str(marker)!r})
p.write_text(p.read_text() + "x" if p.exists() else "x")
time.sleep(60)
""")
    asked: list[float] = []
    begun = time.monotonic()

    def probe() -> str | None:
        asked.append(time.monotonic() - begun)
        return "the gate is stalled" if len(asked) == 1 else None

    s = Supervisor(argv, policy=RestartPolicy(first_s=0.05), stop_timeout_s=5.0, probe=probe, probe_every_s=0.2,
                   probe_grace_s=1.0)
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(s.run()))
    t.start()
    deadline = time.monotonic() + 30
    while (not marker.exists() or marker.read_text() != "xx") and time.monotonic() < deadline:
        time.sleep(0.05)
    s.stop()
    t.join(20)
    assert not t.is_alive() and result == [0]
    assert marker.read_text() == "xx" and s.restarts == 1 and s.stalls == 1  # one stall, one fresh child
    assert asked and asked[0] >= 1.0  # not before the grace period
