"""Who is chatting, so each history belongs to someone: Chainlit's own sign-in, chosen by where the server listens.

On loopback nobody at this machine is asked: Chainlit's header sign-in gives such a visitor the one local user
("local"), who owns the history. A request through a reverse proxy is not from this machine (web/guard.py): it
signs in with a password, as everyone does on any other address. Passwords are checked against scrypt hashes in
the `chat_logins` table beside the history (history/schema.py) (Chainlit's users table keeps no passwords), added with
`python scripts/add_user.py NAME`. Sign-in tokens are signed with CHAINLIT_AUTH_SECRET: on loopback one is
made once and kept in the data folder; elsewhere it must be set, so a restart does not sign everyone out and
the secret is a decision, not an accident.
"""

import asyncio
import hashlib
import hmac
import os
import secrets
import sys
from pathlib import Path

from engine.who import LOCAL, RESERVED_NAMES
from history import tables
from ui.who import LOCAL_PROVIDER
from web.guard import forwarded

SECRET_HOWTO = "Make one with `chainlit create-secret` and put the CHAINLIT_AUTH_SECRET line it prints in .env."
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}  # about 50 ms and 16 MiB per check: slow for guessing, fine for a sign-in


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, **_SCRYPT)
    return f"scrypt${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    try:
        kind, salt, digest = stored.split("$")
        candidate = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt), **_SCRYPT)
    except ValueError:  # not a hash this module wrote
        return False
    return kind == "scrypt" and hmac.compare_digest(candidate.hex(), digest)


def ensure_secret(loopback: bool, data_dir: Path) -> None:
    """CHAINLIT_AUTH_SECRET for the sign-in tokens: kept in the data folder on loopback, required elsewhere."""
    if os.environ.get("CHAINLIT_AUTH_SECRET"):
        return
    if not loopback:
        print("ERNIE Chat cannot start: it listens beyond this machine, so everyone must sign in, and the sign-in "
              f"needs a secret to sign its tokens. {SECRET_HOWTO} Then add users with "
              "`python scripts/add_user.py NAME`.", file=sys.stderr)
        raise SystemExit(1)
    path = data_dir / "auth-secret"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(secrets.token_urlsafe(48))
    os.environ["CHAINLIT_AUTH_SECRET"] = path.read_text().strip()


def install(loopback: bool, layer, data_dir: Path) -> None:
    """The sign-in that fits: the local user on loopback, passwords elsewhere; none without a history."""
    import chainlit as cl
    from chainlit_door.server import config

    if layer is None:
        if not loopback:
            print("ERNIE Chat cannot start: it listens beyond this machine, so everyone must sign in, and the "
                  "sign-in keeps its users in the history database, which CHAT_HISTORY=false turns off. Remove "
                  "CHAT_HISTORY=false (or listen on 127.0.0.1 only).", file=sys.stderr)
            raise SystemExit(1)
        return
    ensure_secret(loopback, data_dir)

    @cl.password_auth_callback
    async def check_password(username: str, password: str):
        if username in RESERVED_NAMES:
            return None
        stored = await tables.password_hash(layer, username)
        if stored and await asyncio.to_thread(password_matches, password, stored):
            return cl.User(identifier=username, metadata={"provider": "password"})
        return None

    if not loopback:
        config().code.header_auth_callback = None
        return

    @cl.header_auth_callback
    async def local_user(headers):
        if forwarded(dict(headers.raw)):  # someone elsewhere, through a proxy here (web/guard.py answers first)
            return None
        return cl.User(identifier=LOCAL, metadata={"provider": LOCAL_PROVIDER})
