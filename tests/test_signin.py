"""Sign-in: password hashes and the token secret without a server (the server's side: test_history.py); and, on a
real server listening beyond this machine, the throttle of wrong passwords against an attacker who forges the
forwarding headers."""

import json
import os
import socket
import stat

import httpx
import psutil
import pytest

from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.stored import SECRET, add_user
from web.guard import MAX_ADDRESS_FAILURES, MAX_FAILURES

from web.signin import ensure_secret, hash_password, password_matches


def test_a_password_is_stored_as_a_salted_hash_and_checked():
    stored = hash_password("correct horse")
    assert "correct horse" not in stored and stored != hash_password("correct horse"), "salted"
    assert password_matches("correct horse", stored)
    assert not password_matches("correct horsf", stored)
    assert not password_matches("correct horse", "not-a-hash") and not password_matches("x", "scrypt$zz$00")


def test_on_loopback_the_secret_is_made_once_and_kept_private(tmp_path, monkeypatch):
    monkeypatch.delenv("CHAINLIT_AUTH_SECRET", raising=False)
    ensure_secret(True, tmp_path / "data")
    first = os.environ["CHAINLIT_AUTH_SECRET"]
    assert len(first) >= 32 and stat.S_IMODE((tmp_path / "data" / "auth-secret").stat().st_mode) == 0o600
    monkeypatch.delenv("CHAINLIT_AUTH_SECRET")
    ensure_secret(True, tmp_path / "data")
    assert os.environ["CHAINLIT_AUTH_SECRET"] == first, "a restart keeps everyone signed in"


def test_off_loopback_the_secret_must_be_set(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CHAINLIT_AUTH_SECRET", raising=False)
    with pytest.raises(SystemExit):
        ensure_secret(False, tmp_path)
    assert "chainlit create-secret" in capsys.readouterr().err and not (tmp_path / "auth-secret").exists()


def this_machines_address() -> str | None:
    """An address of this machine that is not loopback: a request to it comes from a 'foreign' address."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return address.address
    return None


@pytest.mark.skipif(this_machines_address() is None, reason="needs a network address besides loopback")
async def test_forged_forwarding_headers_do_not_dodge_the_throttle_nor_lock_the_real_user_out(engine_env, tmp_path):
    env = {**engine_env, **SECRET, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_API": "false",
           "CHAT_HISTORY_DB": str(tmp_path / "chats.db")}
    add_user(env, "alice", "alice-password")
    server = ChainlitServer(env, tmp_path / "server.log", host="0.0.0.0").start()
    attacker_url = f"http://{this_machines_address()}:{server.port}"  # not loopback: no proxy uvicorn trusts
    try:
        async with httpx.AsyncClient(base_url=attacker_url, timeout=httpx.Timeout(120, connect=60)) as attacker:
            async def guess(n: int, user: str) -> int:
                forged = {"X-Forwarded-For": f"198.51.100.{n}", "X-Real-IP": f"198.51.100.{n}"}
                form = {"username": user, "password": f"guess {n}"}
                return (await attacker.post("/login", data=form, headers=forged)).status_code

            at_alice = [await guess(n, "alice") for n in range(MAX_FAILURES + 1)]
            assert at_alice == [401] * MAX_FAILURES + [429], "a fresh forged address per guess changes nothing"
            names = [await guess(n, f"user{n}") for n in range(MAX_FAILURES + 1, MAX_ADDRESS_FAILURES + 2)]
            assert names == [401] * (MAX_ADDRESS_FAILURES - MAX_FAILURES) + [429], \
                "one sender trying many names is slowed too, whatever address it claims"
        async with httpx.AsyncClient(base_url=server.url, timeout=httpx.Timeout(120, connect=60)) as own:
            signed_in = await own.post("/login", data={"username": "alice", "password": "alice-password"})
            assert signed_in.status_code == 200, "from her own address alice signs in despite the guesses"
    finally:
        assert server.stop() == 0
