"""Who may talk to a loopback server: a rebound name, another site's page and a reverse proxy are refused the
local user and the API; the page, the socket and the API still work from localhost and 127.0.0.1; behind a real
nginx a chat needs a password and works after it. Real servers; the proxy is Debian's nginx."""

import json
import os
import socket
import subprocess
import sys

import httpx
import pytest
from openai import AsyncOpenAI

from harness.chat_client import ChatClient, SignInRefused
from harness.presets import APP_PRESET
from harness.nginx import NginxProxy, nginx_bin
from harness.server import ROOT, ChainlitServer
from web.guard import MAX_ADDRESS_FAILURES, MAX_FAILURES, FailedSignIns, host_name
from web.listen import is_loopback

REBOUND = "rebind.attacker.example"
ATTACKER = "http://attacker.example"
CHAT = {"model": "any", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
PROXY_KEY = "a-key-for-the-proxy-test"


def test_host_names_and_loopback():
    assert host_name("LocalHost:7860") == "localhost" and host_name("[::1]:7860") == "::1"
    assert host_name("127.0.0.1") == "127.0.0.1" and host_name("::1") == "::1"
    assert all(map(is_loopback, ["localhost", "127.0.0.1", "::1"]))
    assert not any(map(is_loopback, [REBOUND, "0.0.0.0", "localhost.attacker.example", ""]))


def test_an_app_already_serving_without_the_guard_is_refused_not_served(monkeypatch):
    from chainlit.server import app
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware

    from web import guard

    # Starlette builds its middleware once, at the first request: if Chainlit had served before the app's wiring
    # ran, the guard could never be put in front any more, and the app must not start without it
    monkeypatch.setattr(app, "middleware_stack", object())
    monkeypatch.setattr(app, "user_middleware", [Middleware(CORSMiddleware, allow_origins=[])])
    with pytest.raises(guard.GuardNotInstalled, match="before the app could put its guard"):
        guard.install(loopback=True, signin=False, settings=None, api_paths=())
    # a `-w` reload: the running app has the guard already (a class imported again is still the guard)
    reloaded = type("Guard", (), {"__module__": guard.__name__})
    monkeypatch.setattr(app, "user_middleware", [Middleware(reloaded), Middleware(CORSMiddleware, allow_origins=[])])
    guard.install(loopback=True, signin=False, settings=None, api_paths=())
    assert [entry.cls for entry in app.user_middleware] == [reloaded, CORSMiddleware], "left as it serves"


def test_failed_sign_ins_are_slowed_per_key_and_age_out():
    clock = [1000.0]
    failed = FailedSignIns(now=lambda: clock[0])
    bob_there, there = ("name", "bob", "10.0.0.1"), ("address", "10.0.0.1")
    limits = {bob_there: MAX_FAILURES, there: MAX_ADDRESS_FAILURES}
    for _ in range(MAX_FAILURES - 1):
        failed.add(limits)
    assert failed.wait_s(limits) == 0, "fewer failures than the limit still may try"
    clock[0] += 10
    failed.add(limits)
    assert 49 < failed.wait_s(limits) <= 50, "bob is slowed from that address"
    assert failed.wait_s({("name", "bob", "10.0.0.2"): MAX_FAILURES, ("address", "10.0.0.2"): MAX_ADDRESS_FAILURES}) \
        == 0, "bob from his own address is not"
    assert failed.wait_s({("name", "alice", "10.0.0.1"): MAX_FAILURES, there: MAX_ADDRESS_FAILURES}) == 0, \
        "nor another name from that address, below the address's own limit"
    clock[0] += 50.5
    assert failed.wait_s(limits) == 0 and len(failed.failures[bob_there]) == 1, "the oldest aged out"
    clock[0] += 60
    failed.wait_s({})
    assert not failed.failures, "keys without recent failures are forgotten"
    stamp = failed.add(["carol"])
    failed.undo(["carol"], stamp)
    assert failed.wait_s({"carol": 1}) == 0 and not failed.failures["carol"], "a sign-in that worked is no failure"


def cors_headers(response: httpx.Response) -> list[str]:
    return [name for name in response.headers if name.lower().startswith("access-control-allow")]


def websocket_status(port: int, host: str, origin: str | None = None) -> int:
    """The status line a browser's WebSocket to the chat's socket gets (101: opened)."""
    lines = ["GET /ws/socket.io/?EIO=4&transport=websocket HTTP/1.1", f"Host: {host}", "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
    if origin:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return int(sock.recv(1024).split(b" ", 2)[1])


async def test_a_rebound_name_another_sites_page_and_a_proxy_get_neither_the_local_user_nor_the_api(app_server):
    port = app_server.port
    async with httpx.AsyncClient(base_url=app_server.url, timeout=120) as http:
        local = await http.post("/auth/header")
        assert local.status_code == 200 and local.cookies.get("access_token")
        cookie = {"Cookie": f"access_token={local.cookies['access_token']}"}
        rebound = {"Host": f"{REBOUND}:{port}"}
        refused = [await http.post("/auth/header", headers=rebound),
                   await http.post("/project/threads", headers={**rebound, **cookie},
                                   json={"pagination": {"first": 20}, "filter": {}}),
                   await http.get("/v1/models", headers=rebound),
                   await http.post("/v1/chat/completions", headers=rebound, json=CHAT)]
        for response in refused:
            assert response.status_code == 403 and "set-cookie" not in response.headers, response.text
            assert REBOUND in response.json()["detail"] and "CHAT_ALLOWED_HOSTS" in response.json()["detail"]

        for path in ("/", "/auth/config", "/v1/models", "/metrics"):
            other = await http.get(path, headers={"Origin": ATTACKER})
            preflight = await http.options(path, headers={"Origin": ATTACKER, "Access-Control-Request-Method": "POST",
                                                          "Access-Control-Request-Headers": "authorization"})
            for response in (other, preflight):
                assert response.status_code == 403 and not cors_headers(response), (path, response.headers)
            assert "CHAT_ALLOWED_ORIGINS" in other.json()["detail"]
        own = await http.post("/auth/header", headers={"Origin": app_server.url})
        assert own.status_code == 200, "the app's own page sends its origin with every POST"

        for header in ({"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9"},
                       {"X-Real-IP": "203.0.113.9"}):
            signin = await http.post("/auth/header", headers=header)
            assert signin.status_code == 401 and "set-cookie" not in signin.headers
            assert "add_user.py" in signin.json()["detail"]
            for path in ("/v1/models", "/metrics"):  # never the local user's: a key is asked for
                api = await http.get(path, headers=header)
                assert api.status_code == 401 and "CHAT_API_KEY" in api.json()["error"]["message"], api.text

    assert websocket_status(port, f"{REBOUND}:{port}") == 403
    assert websocket_status(port, f"127.0.0.1:{port}", origin=ATTACKER) == 403
    assert websocket_status(port, f"127.0.0.1:{port}", origin=app_server.url) == 101
    assert websocket_status(port, f"localhost:{port}") == 101


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1"])
async def test_from_this_machine_the_page_the_chat_and_the_api_work_by_either_name(app_server, name):
    url = f"http://{name}:{app_server.port}"
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        page = await http.get("/")
        assert page.status_code == 200 and "<html" in page.text.lower()
    chat = await ChatClient(url).connect()
    try:
        reply = await chat.ask("Hello from this machine", timeout=300)
        assert reply.content.strip(), "the chat answers"
    finally:
        await chat.close()
    for key in ("unused-on-loopback", "another"):  # no key is set: any key, or none, is fine here
        client = AsyncOpenAI(base_url=f"{url}/v1", api_key=key, timeout=300)
        assert [model.id async for model in client.models.list()]


def add_user(database, name: str, password: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "add_user.py"), name, "--password-stdin"],
                   input=password + "\n", text=True, check=True, cwd=ROOT, timeout=120,
                   env={**os.environ, "CHAT_HISTORY_DB": str(database)})


@pytest.mark.skipif(nginx_bin() is None, reason="needs Debian's nginx (scripts/setup.sh --dev installs it)")
async def test_behind_nginx_a_chat_needs_a_password_and_works_after_it(engine_env, tmp_path):
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_HISTORY_DB": str(tmp_path / "chats.db"),
           "CHAT_API_KEY": PROXY_KEY, "CHAT_ALLOWED_HOSTS": "chat.example.test",
           "CHAT_ALLOWED_ORIGINS": "http://localhost:3000"}
    server = ChainlitServer(env, tmp_path / "server.log").start()
    proxy = NginxProxy(server.port).start()
    try:
        with pytest.raises(SignInRefused) as refused:
            await ChatClient(proxy.url).connect()
        assert refused.value.args[0] == 401 and "add_user.py" in refused.value.args[1]
        add_user(tmp_path / "chats.db", "ana", "a long password")
        chat = await ChatClient(proxy.url, user="ana", password="a long password").connect()
        try:
            reply = await chat.ask("Hello through the proxy", timeout=300)
            assert reply.content.strip(), "after the sign-in the chat answers through the proxy"
        finally:
            await chat.close()

        async with httpx.AsyncClient(base_url=proxy.url, timeout=120) as http:
            assert (await http.get("/v1/models")).status_code == 401, "through the proxy the API needs its key"
            keyed = await http.get("/v1/models", headers={"Authorization": f"Bearer {PROXY_KEY}"})
            assert keyed.status_code == 200, keyed.text
            assert (await http.get("/auth/config", headers={"Host": "chat.example.test"})).status_code == 200
            assert (await http.get("/auth/config", headers={"Host": REBOUND})).status_code == 403
            mine = await http.options("/v1/models", headers={"Origin": "http://localhost:3000",
                                                             "Access-Control-Request-Method": "POST"})
            assert mine.headers.get("access-control-allow-origin") == "http://localhost:3000"
            statuses = [(await http.post("/login", data={"username": "ana", "password": f"guess {i}"}))
                        for i in range(MAX_FAILURES + 1)]
        assert [s.status_code for s in statuses] == [401] * MAX_FAILURES + [429]
        assert int(statuses[-1].headers["retry-after"]) > 0 and "try again" in statuses[-1].json()["detail"]
    finally:
        proxy.stop()
        assert server.stop() == 0
