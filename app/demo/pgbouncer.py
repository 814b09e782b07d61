"""Running Debian's pgbouncer in front of a local PostgreSQL (demo and tests).

One process per pool mode (``session`` / ``transaction``), listening on loopback,
trust authentication, forwarding every database name to the given server.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from app.demo.pgcluster import free_port


def find_pgbouncer() -> str | None:
    return shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )


class PgBouncerError(RuntimeError):
    pass


class PgBouncer:
    """One pgbouncer process in ``pool_mode`` in front of ``server_host:server_port``."""

    def __init__(
        self,
        workdir: Path,
        pool_mode: str,
        server_host: str,
        server_port: int,
        user: str,
        port: int | None = None,
    ) -> None:
        binary = find_pgbouncer()
        if binary is None:
            raise PgBouncerError("pgbouncer is not installed (Debian package 'pgbouncer')")
        self.binary = binary
        self.workdir = workdir / pool_mode
        self.pool_mode = pool_mode
        self.server = (server_host, server_port)
        self.user = user
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={self.user} dbname={dbname}"

    def start(self, timeout_s: float = 15) -> None:
        d = self.workdir
        d.mkdir(parents=True, exist_ok=True)
        (d / "users.txt").write_text(f'"{self.user}" ""\n')
        ini = d / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"* = host={self.server[0]} port={self.server[1]}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {d / 'users.txt'}\n"
            f"pool_mode = {self.pool_mode}\n"
            "default_pool_size = 20\n"
            "max_client_conn = 200\n"
            f"logfile = {d / 'pgbouncer.log'}\n"
            f"pidfile = {d / 'pgbouncer.pid'}\n"
            "server_reset_query = DISCARD ALL\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
        )
        cmd = [self.binary, str(ini)]
        if os.geteuid() == 0:  # pgbouncer refuses to run as root
            shutil.chown(d, "postgres", "postgres")
            for f in d.iterdir():
                shutil.chown(f, "postgres", "postgres")
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise PgBouncerError(f"pgbouncer ({self.pool_mode}) exited: {err.strip()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise PgBouncerError(f"pgbouncer ({self.pool_mode}) did not listen on {self.port}")

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr:
            proc.stderr.close()
        self.proc = None
