"""A throw-away PostgreSQL cluster run from the server binaries on this machine.

Used by the test-suite (a real server, listening on loopback TCP and on a unix
socket in its own directory) and by the demo for the "PostgreSQL over a unix
socket" target. The product's embedded default database uses the ``pgserver``
wheel instead (see :mod:`app.db`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

_SEARCH_DIRS = (
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/14/bin",
)


class PgClusterError(RuntimeError):
    """The cluster could not be created, started or stopped."""


def find_pg_bindir() -> Path:
    """Where ``initdb``/``pg_ctl``/``postgres`` are (Debian's first, then pgserver's)."""
    for d in _SEARCH_DIRS:
        if Path(d, "pg_ctl").exists():
            return Path(d)
    try:
        import pgserver

        bindir = Path(pgserver.__file__).parent / "pginstall" / "bin"
        if (bindir / "pg_ctl").exists():
            return bindir
    except ImportError:  # pragma: no cover - pgserver is a hard dependency
        pass
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    raise PgClusterError("no PostgreSQL server binaries found (install Debian's 'postgresql')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PgCluster:
    """One PostgreSQL cluster in ``datadir``; trust authentication on loopback only."""

    def __init__(self, datadir: Path, port: int | None = None, user: str = "postgres") -> None:
        self.datadir = Path(datadir)
        self.socket_dir = self.datadir / "sock"
        self.port = port or free_port()
        self.user = user
        self.bindir = find_pg_bindir()
        self._as_root = os.geteuid() == 0

    # -- connection strings -------------------------------------------------
    @property
    def host(self) -> str:
        return "127.0.0.1"

    def dsn(self, dbname: str = "postgres", *, unix: bool = False) -> str:
        """A libpq conninfo string (for psycopg)."""
        host = str(self.socket_dir) if unix else self.host
        return f"host={host} port={self.port} user={self.user} dbname={dbname}"

    def url(self, dbname: str = "postgres") -> str:
        """A SQLAlchemy URL over TCP (psycopg 3 driver)."""
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{dbname}"

    # -- lifecycle ----------------------------------------------------------
    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self._as_root:
            # PostgreSQL refuses to run as root: run its binaries as 'nobody'-like user.
            cmd = ["runuser", "-u", _service_user(), "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    def init(self) -> None:
        self.datadir.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        if self._as_root:
            user = _service_user()
            group = _service_group(user)
            shutil.chown(self.datadir, user, group)
            shutil.chown(self.socket_dir, user, group)
            _allow_traverse(self.datadir.parent)
        if (self.datadir / "pgdata" / "PG_VERSION").exists():
            return
        res = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.datadir / "pgdata"),
            "-U",
            self.user,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        if res.returncode != 0:
            raise PgClusterError(f"initdb failed: {res.stderr.strip() or res.stdout.strip()}")

    def start(self) -> None:
        opts = (
            f"-c port={self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.socket_dir} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        res = self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.datadir / "pgdata"),
            "-l",
            str(self.datadir / "server.log"),
            "-o",
            opts,
            "-w",
            "-t",
            "60",
            "start",
        )
        if res.returncode != 0:
            raise PgClusterError(
                f"pg_ctl start failed: {_last_fatal(self.datadir / 'server.log', res.stderr)} "
                f"(log: {self.datadir / 'server.log'})"
            )

    def stop(self, mode: str = "fast") -> None:
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.datadir / "pgdata"),
            "-m",
            mode,
            "-w",
            "stop",
        )

    def running_pid(self) -> int | None:
        """The pid of a live server already using this data directory (None: none)."""
        pidfile = self.datadir / "pgdata" / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().split("\n", 1)[0])
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def is_running(self) -> bool:
        res = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir / "pgdata"), "status")
        return res.returncode == 0

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'create database "{name}"')


def _last_fatal(log: Path, stderr: str) -> str:
    """One line saying why the server did not start: the log's last FATAL, or pg_ctl's."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    fatal = [ln.split("FATAL:", 1)[1].strip() for ln in lines if "FATAL:" in ln]
    if fatal:
        return fatal[-1]
    said = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return said[-1] if said else "no reason given"


def _allow_traverse(path: Path) -> None:
    """Let the unprivileged server account reach ``path`` (o+x on it and every ancestor)."""
    for p in [path, *path.parents]:
        mode = p.stat().st_mode
        if not mode & 0o001:
            p.chmod(mode | 0o001)


def _service_user() -> str:
    """The unprivileged account PostgreSQL runs as when we are root."""
    for name in ("postgres", "nobody"):
        try:
            import pwd

            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise PgClusterError("running as root and no 'postgres' or 'nobody' account exists")


def _service_group(user: str | None = None) -> str:
    """The primary group of ``user`` (default: the service account), read from the account
    itself, never assumed to share its name: ``nobody`` has ``nogroup`` on Debian."""
    import grp
    import pwd

    return grp.getgrgid(pwd.getpwnam(user or _service_user()).pw_gid).gr_name
