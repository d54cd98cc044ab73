"""A throwaway nginx reverse proxy from Debian's binary, in a temporary folder, on a free 127.0.0.1 port.

Configured as the README's "Behind a reverse proxy" section tells users to: it passes the Host it was called
by, says whom it forwards for, and carries the chat's WebSocket.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from server import free_port

CONFIG = """
{user}
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


def nginx_bin() -> str | None:
    return shutil.which("nginx") or (Path("/usr/sbin/nginx").exists() and "/usr/sbin/nginx") or None


class NginxProxy:
    def __init__(self, upstream_port: int):
        self.folder = Path(tempfile.mkdtemp(prefix="chat-nginx-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        user = "user root;" if os.geteuid() == 0 else ""  # its workers must reach this private folder
        (self.folder / "nginx.conf").write_text(CONFIG.format(user=user, folder=self.folder, port=self.port,
                                                              upstream=upstream_port))

    def _run(self, *args: str) -> None:
        subprocess.run([nginx_bin(), "-c", str(self.folder / "nginx.conf"), "-p", str(self.folder), "-e",
                        str(self.folder / "error.log"), *args], check=True, capture_output=True, timeout=60)

    def start(self) -> "NginxProxy":
        self._run()
        return self

    def stop(self) -> None:
        self._run("-s", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
