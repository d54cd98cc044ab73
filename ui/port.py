"""Checking, before Chainlit binds its port, that the port is free, so the user gets a clear message."""

import ipaddress
import os
import socket
import sys
import types

# Survives `-w` re-imports: only the first import checks (after that the port is the app's own).
_STATE = sys.modules.setdefault("ernie_chat_port_check", types.ModuleType("ernie_chat_port_check"))


def chosen_port() -> tuple[str, int]:
    """The host and port `chainlit run` will use: --host/--port, else CHAINLIT_HOST/CHAINLIT_PORT (.env)."""
    args = sys.argv
    host = args[args.index("--host") + 1] if "--host" in args else os.environ.get("CHAINLIT_HOST", "127.0.0.1")
    port = args[args.index("--port") + 1] if "--port" in args else os.environ.get("CHAINLIT_PORT", "8000")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exit_if_port_taken() -> None:
    if getattr(_STATE, "checked", False):
        return
    _STATE.checked = True
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
