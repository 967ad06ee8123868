"""executions.supervisor against real child processes (plain Python ones: fast, and the
same process-group mechanics as a Celery worker and its pool; the integration tests start
real workers through it)."""

from __future__ import annotations

import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from executions.supervisor import (
    QUIET,
    ProcessDied,
    Supervisor,
    environment,
    logged,
    members,
    worker_argv,
)
from tests.waiting import eventually, scaled

#: A main process with a "pool" child in its group; prints `ready` once both run.
POOL = textwrap.dedent(
    """
    import signal, subprocess, sys, time
    if sys.argv[1:] == ["stubborn"]:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print("pool", child.pid, "ready", flush=True)
    time.sleep(60)
    """
)


def pool(supervisor: Supervisor, name: str, *args: str):
    process = supervisor.start(name, [sys.executable, "-c", POOL, *args], ready=logged(" ready"))
    process.wait_ready(timeout=scaled(20))
    return process


def pool_pid(process) -> int:
    return int(process.log().splitlines()[-1].split()[1])


def gone(pid: int, what: str) -> None:
    """Until the process has exited (a zombie waiting for its parent counts)."""
    eventually(lambda: not Path(f"/proc/{pid}").exists() or "Z" in _state(pid), 5, what)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.fixture
def supervisor(tmp_path: Path):
    running = Supervisor(tmp_path / "logs")
    yield running
    running.stop(timeout=0)


def test_a_child_logs_to_its_file_with_its_command_line_first(supervisor) -> None:
    process = pool(supervisor, supervisor.numbered("worker"))
    assert process.log_path == supervisor.log_dir / "worker-1.log"
    lines = process.log().splitlines()
    assert lines[0].startswith("# ")
    assert sys.executable in lines[0]
    assert lines[-1].startswith("pool ")
    assert lines[-1].endswith(" ready")
    assert supervisor["worker-1"] is process


def test_kill_takes_the_whole_process_group_at_once(supervisor) -> None:
    process = pool(supervisor, "worker")
    child = pool_pid(process)
    assert members(process.pid) == {process.pid, child}
    supervisor.kill(process)
    assert process.returncode == -signal.SIGKILL
    gone(child, "the pool process outlived kill -9 of its group")
    assert supervisor.running == []


def test_stop_terminates_then_kills_a_child_that_ignores_sigterm(supervisor) -> None:
    polite, stubborn = pool(supervisor, "polite"), pool(supervisor, "stubborn", "stubborn")
    orphan = pool_pid(polite)  # SIGTERM goes to main processes only: this one is orphaned
    began = time.monotonic()
    supervisor.stop(timeout=1.0)
    # Killed once its 1 s was up (it ignores SIGTERM and would sleep 60 s more): stop
    # returned soon after, a bound in time that a slower machine gets more room on.
    assert time.monotonic() - began < scaled(8)
    assert polite.returncode == -signal.SIGTERM
    assert stubborn.returncode == -signal.SIGKILL
    gone(orphan, "a pool process outlived stop()")
    gone(pool_pid(stubborn), "a pool process outlived stop()")
    assert supervisor.running == []


def test_stop_by_name_leaves_the_others_running(supervisor) -> None:
    one, two = pool(supervisor, "one"), pool(supervisor, "two")
    supervisor.stop("one", "not-running")
    assert not one.alive()
    assert two.alive()
    assert supervisor.running == [two]


def test_a_child_that_dies_is_reported_with_its_log(supervisor) -> None:
    script = "import sys; print('bad settings'); sys.exit(3)"
    process = supervisor.start("web", [sys.executable, "-c", script], ready=logged("never"))
    with pytest.raises(ProcessDied, match="web exited with code 3") as raised:
        process.wait_ready(timeout=scaled(20))
    assert "bad settings" in raised.value.process.tail()
    with pytest.raises(ProcessDied):
        supervisor.check()
    assert supervisor.dead() == [process]
    assert supervisor.dead() == []
    assert supervisor.running == []


def test_a_child_not_ready_in_time_names_itself(supervisor) -> None:
    process = pool(supervisor, "slow")
    process.ready = logged("never printed")
    with pytest.raises(TimeoutError, match="slow not ready"):
        process.wait_ready(timeout=0.3)


def test_environment_makes_the_project_importable_and_drops_none() -> None:
    env = environment({"KEEP": "1", "DROP": "x"}, DROP=None, DATABASE_URL="sqlite:///x")
    assert env["KEEP"] == "1"
    assert "DROP" not in env
    assert env["DATABASE_URL"] == "sqlite:///x"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert Path(env["PYTHONPATH"], "executions", "supervisor.py").exists()


def test_worker_argv_is_the_one_command_line_every_caller_runs() -> None:
    argv = worker_argv(name="w1@%h", concurrency=3, loglevel="warning", extra=["-O", "fair"])
    assert argv[:6] == [sys.executable, "-m", "celery", "-A", "config", "worker"]
    assert argv[6:] == [
        "-Q", "orchestrator,nodes", "--concurrency", "3", "-l", "warning",
        "-n", "w1@%h", *QUIET, "-O", "fair",
    ]  # fmt: skip
