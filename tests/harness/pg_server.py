"""A throw-away PostgreSQL server (Debian's binaries) for tests and ``benchmarks/bench_votes.py``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PG_BIN = Path(os.environ.get("PREFLAB_PG_BIN", "/usr/lib/postgresql/15/bin"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available() -> bool:
    return (PG_BIN / "initdb").exists() and (PG_BIN / "pg_ctl").exists()


@contextmanager
def temporary_postgres(max_connections: int = 120) -> Iterator[str]:
    """Start PostgreSQL in a temp dir (as the ``postgres`` user when running as root: initdb refuses
    root), unix socket in that dir, on a free port; yield a ``postgresql+psycopg`` URL; stop and delete."""
    root = Path(tempfile.mkdtemp(prefix="preflab-pg-"))
    data, port = root / "data", free_port()
    as_pg: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        as_pg = ["runuser", "-u", "postgres", "--"]

    def run(*cmd: str) -> None:
        subprocess.run([*as_pg, *cmd], check=True, capture_output=True, text=True)

    run(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
    opts = f"-p {port} -k {root} -c listen_addresses='' -c max_connections={max_connections}"
    run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start")
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={root}&port={port}"
    finally:
        run(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
