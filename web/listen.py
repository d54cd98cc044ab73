"""Where the server listens: the host and port `chainlit run` will use, whether that host is loopback (which
decides the sign-in, the guard's Host check and whether the API needs a key), and a port in use told clearly
before Chainlit binds it.
"""

import ipaddress
import os
import socket
import sys

from lifetime.runtime import RUNTIME


def chosen_port() -> tuple[str, int]:
    """The host and port `chainlit run` will use: --host/--port, else CHAINLIT_HOST/CHAINLIT_PORT (.env)."""
    args = sys.argv
    host = args[args.index("--host") + 1] if "--host" in args else os.environ.get("CHAINLIT_HOST", "127.0.0.1")
    port = args[args.index("--port") + 1] if "--port" in args else os.environ.get("CHAINLIT_PORT", "8000")
    return host, int(port)


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exit_if_port_taken() -> None:
    """Exit with a clear message when the port is taken; only the first load checks (after a `-w` reload the
    port is the app's own)."""
    if getattr(RUNTIME, "port_checked", False):
        return
    RUNTIME.port_checked = True
    host, port = chosen_port()
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            print(f"ERNIE Chat cannot start: port {port} is already in use on {host} (another server, or an "
                  f"older copy of this app?). Stop it, or choose another port: chainlit run app.py --port "
                  f"{port + 1} (or CHAINLIT_PORT in .env).", file=sys.stderr)
            raise SystemExit(1)
