"""Every way in checks the user, each time, on a server beyond loopback (everyone signs in): a removed user's cookie,
open chat and API keys answer nothing at once; a name the app keeps for itself is no one's; a message of another
user's chat keeps its feedback; an operator lists and revokes anyone's keys (scripts/add_user.py).
"""

import asyncio
import json
import subprocess
import sys

import httpx
import pytest
import socketio

from harness.chat_client import ChatClient, SignInRefused
from harness.presets import APP_PRESET
from harness.server import ROOT, ChainlitServer
from harness.stored import SECRET, add_user
from web.users import NOT_YOURS, REMOVED

OPERATOR_KEY = "operator-key-for-the-each-way-in-tests-000"


def _script(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "scripts/add_user.py", *args], cwd=ROOT, env={**env},
                          capture_output=True, text=True, timeout=120, input="a-good-password\n")


@pytest.fixture(scope="module")
def server(engine_env, tmp_path_factory):
    import os

    folder = tmp_path_factory.mktemp("each-way-in")
    env = {**os.environ, **engine_env, **SECRET, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET),
           "CHAT_HISTORY_DB": str(folder / "chats.db"), "CHAT_API_KEY": OPERATOR_KEY}
    for name in ("alice", "bob", "carol"):
        add_user(env, name, f"{name}-password")
    started = ChainlitServer(env, folder / "chainlit.log", host="0.0.0.0").start()
    started.script_env = env
    yield started
    assert started.stop() == 0


def _key(env: dict, user: str, name: str) -> str:
    made = _script(env, user, "--key", name)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip().splitlines()[-1]


async def _models(server, key: str) -> int:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        return (await http.get("/v1/models", headers={"Authorization": f"Bearer {key}"})).status_code


async def test_a_removed_user_is_refused_at_once_by_cookie_open_chat_and_key(server):
    env = server.script_env
    key = _key(env, "carol", "laptop")
    assert await _models(server, key) == 200
    carol = await ChatClient(server.url, "carol", "carol-password").connect()
    async with await carol._http() as http:
        assert (await http.get("/user")).status_code == 200
    removed = _script(env, "carol", "--delete")
    assert removed.returncode == 0 and "Removed 'carol'" in removed.stdout, removed
    assert await _models(server, key) == 401, "her key answers no more"
    async with await carol._http() as http:
        response = await http.get("/user")
        assert response.status_code == 401 and REMOVED in response.text, "her cookie opens nothing"
    await carol.send("Am I still here?")
    for _ in range(600):
        if not carol.sio.connected:
            break
        await asyncio.sleep(0.1)
    assert REMOVED in carol.all_text() and not carol.sio.connected, "her open chat is told and closed"
    assert not carol.replies("ERNIE Chat"), "her message reached no model"
    again = ChatClient(server.url, "carol", "carol-password")
    with pytest.raises(SignInRefused):
        await again.connect()
    late = ChatClient(server.url)  # her old cookie, on a new socket
    late.token = carol.token
    with pytest.raises(socketio.exceptions.ConnectionError):
        await late.sio.connect(server.url, headers={"Cookie": f"access_token={carol.token}"},
                               socketio_path="/ws/socket.io", transports=["websocket"], wait_timeout=60,
                               auth={"clientType": "webapp", "sessionId": late.session_id, "threadId": "",
                                     "userEnv": "{}", "chatProfile": ""})


def test_no_key_is_made_for_no_user_and_an_operator_lists_and_revokes_anyones_keys(server):
    env = server.script_env
    nobody = _script(env, "nobody", "--key", "script")
    assert nobody.returncode != 0 and "There is no user 'nobody'" in nobody.stderr
    _key(env, "alice", "garden")
    listed = _script(env, "alice", "--keys")
    assert listed.returncode == 0 and "garden" in listed.stdout, listed
    key_id = listed.stdout.split()[0]
    revoked = _script(env, "alice", "--revoke", key_id)
    assert revoked.returncode == 0 and "Revoked" in revoked.stdout
    assert "garden" not in _script(env, "alice", "--keys").stdout


async def test_names_the_app_keeps_for_itself_are_no_ones(server):
    env = server.script_env
    for name in ("local", "api", "(CHAT_API_KEY)"):
        refused = _script(env, name, "--password-stdin")
        assert refused.returncode != 0 and "keeps for itself" in refused.stderr, (name, refused)
        assert _script(env, name, "--key", "k").returncode != 0


async def test_another_users_feedback_is_refused_and_hers_stays(server):
    alice = await ChatClient(server.url, "alice", "alice-password").connect()
    bob = await ChatClient(server.url, "bob", "bob-password").connect()
    try:
        reply = await alice.ask("Hello from alice")
        await alice.wait_idle()
        async with await alice._http() as http:
            mine = await http.put("/feedback", json={"sessionId": alice.session_id,
                                                     "feedback": {"forId": reply.id, "value": 1}})
        assert mine.status_code == 200, mine.text
        feedback_id = mine.json()["feedbackId"]
        async with await bob._http() as http:
            changed = await http.put("/feedback", json={"sessionId": bob.session_id,
                                                        "feedback": {"forId": reply.id, "value": 0,
                                                                     "comment": "bob was here"}})
            deleted = await http.request("DELETE", "/feedback", json={"feedbackId": feedback_id})
        assert changed.status_code == 403 and NOT_YOURS in changed.text
        assert deleted.status_code == 403 and NOT_YOURS in deleted.text
        async with await alice._http() as http:
            thread = (await http.get(f"/project/thread/{alice.thread_id}")).json()
        kept = next(step for step in thread["steps"] if step["id"] == reply.id)
        assert kept["feedback"]["value"] == 1 and not kept["feedback"].get("comment"), kept["feedback"]
    finally:
        await alice.close()
        await bob.close()
