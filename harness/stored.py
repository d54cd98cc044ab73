"""What the chat history holds, read back for the tests: a thread's steps (as Chainlit's API returns them and as the
SQLite file stores them), the notice of a reply cut off by a stopped server, the sign-in secret, and users added
through scripts/add_user.py as a user would add them.
"""

import os
import sqlite3
import subprocess
import sys

from harness.server import ROOT

CUT_OFF = "*Cut off: the server stopped while this reply was being written.*"
SECRET = {"CHAINLIT_AUTH_SECRET": "a-test-secret-for-the-sign-in-tokens-" + "s" * 20}


def step_texts(thread: dict) -> list[tuple[str, str]]:
    """(type, text) of the user's messages and the replies in a stored thread, in order."""
    return [(step["type"], step["output"]) for step in thread["steps"]
            if step["type"] == "user_message" or step.get("name") == "ERNIE Chat"]


def stored_steps(database, thread_id: str) -> list[str]:
    """The outputs of a thread's messages as the SQLite file holds them now."""
    with sqlite3.connect(database) as db:
        return [output for (output,) in db.execute(
            'SELECT output FROM steps WHERE "threadId" = ? AND type IN (?, ?, ?)',
            (thread_id, "user_message", "assistant_message", "system_message"))]


def add_user(env: dict, name: str, password: str) -> str:
    """Add (or re-password) user `name` through scripts/add_user.py, with the history database of `env`; its output."""
    done = subprocess.run([sys.executable, "scripts/add_user.py", name, "--password-stdin"], cwd=ROOT,
                          input=password + "\n", env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout
