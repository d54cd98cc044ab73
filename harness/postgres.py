"""A throwaway PostgreSQL server from Debian's binaries, in a temporary folder, on a free 127.0.0.1 port.

PostgreSQL refuses to run as root, so under root (CI) it runs as Debian's `postgres` user. Password-less
("trust") for connections from this machine only: it lives as long as one test module.
"""

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.server import free_port


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    def __init__(self):
        self.bin = postgres_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="chat-pg-"))  # not under pytest's root-only folder
        self.port = free_port()
        self.url = f"postgresql://chat@127.0.0.1:{self.port}/chats"

    def _run(self, *args: str) -> None:
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> "PostgresServer":
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        data = self.folder / "data"
        self._run(str(self.bin / "initdb"), "-D", str(data), "-U", "chat", "--auth=trust", "-E", "UTF8")
        self._run(str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(self.folder / "log"), "-w", "start",
                  "-o", f"-p {self.port} -h 127.0.0.1 -k {self.folder}")
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "chat", "chats")
        return self

    def query(self, sql: str) -> str:
        """Run SQL with psql; its unaligned output."""
        return subprocess.run(["psql", self.url, "-At", "-c", sql], check=True, capture_output=True,
                              text=True, timeout=60).stdout

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
