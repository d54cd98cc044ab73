"""A throwaway nginx from Debian's binary, in a temporary folder, on a free 127.0.0.1 port: a reverse proxy in front
of one app process, or a load balancer with sticky sessions in front of several.

Configured as the README's "Behind a reverse proxy" section and docs/scaling.md's balancer tell users to: it
passes the Host it was called by, says whom it forwards for, and carries the chat's WebSocket. As a balancer it
keeps each browser tab on one process (Chainlit keeps a chat's session in that process's memory) by hashing the
tab's session id: Chainlit's page posts it to `/set-session-cookie` before it opens its socket, which answers
with an `X-Chainlit-Session-id` cookie, and an upload names it in its URL (`?session_id=`). nginx's `$cookie_`
variables cannot name a cookie with dashes, hence the `map` over the Cookie header. A process that does not
answer is marked failed and the tab's next connection goes to another (`proxy_next_upstream`), where the app
continues the tab's chat from the shared history (ui/sessions.py). The access log names the tab's key and the
process that served each request.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.server import free_port

CONFIG = """
{user}
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log;
events {{ worker_connections 256; }}
http {{
    log_format routed '$request_method $uri $status tab=$chat_tab upstream=$upstream_addr';
    access_log {folder}/access.log routed;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    map $http_cookie $chainlit_session {{
        "~(?:^|;)\\s*X-Chainlit-Session-id=(?<session>[^;]+)" $session;
        default "";
    }}
    map $arg_session_id $chat_tab {{
        "" $chainlit_session;
        default $arg_session_id;
    }}
    upstream chat {{
        hash $chat_tab consistent;
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://chat;
            proxy_next_upstream error timeout;
            proxy_connect_timeout 5s;
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
SERVER = "        server 127.0.0.1:{port} max_fails=1 fail_timeout=10s;"
LOG_LINE = re.compile(r"^(?P<method>\S+) (?P<uri>\S+) (?P<status>\d+) tab=(?P<tab>\S*) upstream=(?P<upstream>.*)$")


def nginx_bin() -> str | None:
    return shutil.which("nginx") or (Path("/usr/sbin/nginx").exists() and "/usr/sbin/nginx") or None


class NginxProxy:
    def __init__(self, *upstream_ports: int):
        """One port: a reverse proxy in front of that app; several: a balancer with sticky sessions over them."""
        self.folder = Path(tempfile.mkdtemp(prefix="chat-nginx-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        user = "user root;" if os.geteuid() == 0 else ""  # its workers must reach this private folder
        servers = "\n".join(SERVER.format(port=port) for port in upstream_ports)
        (self.folder / "nginx.conf").write_text(CONFIG.format(user=user, folder=self.folder, port=self.port,
                                                              servers=servers))

    def _run(self, *args: str) -> None:
        subprocess.run([nginx_bin(), "-c", str(self.folder / "nginx.conf"), "-p", str(self.folder), "-e",
                        str(self.folder / "error.log"), *args], check=True, capture_output=True, timeout=60)

    def start(self) -> "NginxProxy":
        self._run()
        return self

    def routed(self) -> list[dict]:
        """The requests nginx has finished (a socket once it closed): method, uri, status, the tab's key and the
        upstreams tried, in order ("127.0.0.1:7860, 127.0.0.1:7861" when the first failed)."""
        log = self.folder / "access.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [match.groupdict() for match in map(LOG_LINE.match, lines) if match]

    def stop(self) -> None:
        self._run("-s", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
