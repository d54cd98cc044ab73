"""Sign-in pieces that need no server: password hashes and the token secret (the server's side: test_history.py)."""

import os
import stat

import pytest

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
