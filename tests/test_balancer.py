"""Two app processes behind a real load balancer (Debian's nginx, sticky sessions), sharing one `vllm serve` and one
PostgreSQL history, as docs/scaling.md tells a team to run them: chats stream through the balancer, each tab on
its own process; Stop aborts the server's request; a chat started on one process is reopened on the other; and
when a process is killed, its tab reconnects through the balancer to the other and goes on in its chat. Everyone
signs in with a password: requests through a proxy never pass for the local user."""

import asyncio
import json
import os
import signal
import threading
import time

import httpx
import pytest

from harness.chat_client import ChatClient, SignInRefused
from harness.nginx import NginxProxy, nginx_bin
from harness.postgres import PostgresServer, postgres_bin
from harness.server import ChainlitServer
from harness.replies import stats_of, stop_a_long_reply
from harness.stored import CUT_OFF, SECRET, add_user, step_texts
from ui.sessions import CUT_OFF_NOTICE
from ui.words import say
from harness.vllm_server import VllmServer, running_on

pytestmark = pytest.mark.skipif(nginx_bin() is None or postgres_bin() is None,
                                reason="needs Debian's nginx and postgresql (scripts/setup.sh --dev installs them)")
USER, PASSWORD = "ana", "a long password"
SOCKET = "/ws/socket.io/"


class Cluster:
    """The balancer's URL, its log, the two app processes behind it, the vLLM server and the database."""

    def __init__(self, proxy: NginxProxy, apps: list[ChainlitServer], vllm: VllmServer, database: PostgresServer):
        self.proxy, self.apps, self.vllm, self.database = proxy, apps, vllm, database

    def address(self, app: ChainlitServer) -> str:
        return f"127.0.0.1:{app.port}"

    async def served(self, key: str, uri: str, nth: int = 1, timeout: float = 60) -> list[str]:
        """The upstreams nginx tried, in order, for the `nth` finished request to `uri` with this tab's key (a
        socket's line is written when it closes)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = [line for line in self.proxy.routed() if line["tab"] == key and line["uri"] == uri]
            if len(lines) >= nth:
                return lines[nth - 1]["upstream"].split(", ")
            await asyncio.sleep(0.1)
        raise AssertionError(f"nginx logged no request to {uri} for tab {key}: {self.proxy.routed()[-5:]}")

    async def tab_on(self, app: ChainlitServer, thread_id: str = "") -> ChatClient:
        """A signed-in tab (not yet connected) whose session id the balancer sends to `app`."""
        for _ in range(100):
            tab = ChatClient(self.proxy.url, USER, PASSWORD, thread_id=thread_id)
            async with httpx.AsyncClient(base_url=self.proxy.url, timeout=120) as http:
                await http.get("/auth/config", headers={"Cookie": f"X-Chainlit-Session-id={tab.session_id}"})
            if (await self.served(tab.session_id, "/auth/config"))[-1] == self.address(app):
                return tab
        raise AssertionError(f"no session id in 100 went to {self.address(app)}: the balancer does not spread tabs")

    def stored_replies(self, thread_id: str) -> list[str]:
        return self._outputs(thread_id, "type = 'assistant_message' AND name = 'ERNIE Chat'")

    def asked(self, thread_id: str) -> list[str]:
        return self._outputs(thread_id, "type = 'user_message'")

    def _outputs(self, thread_id: str, which: str) -> list[str]:
        """The thread's stored messages of one kind, oldest first (as JSON: a reply spans lines)."""
        rows = self.database.query(f'SELECT json_agg(output ORDER BY "createdAt") FROM steps WHERE '
                                   f'"threadId" = \'{thread_id}\' AND {which}').strip()
        return json.loads(rows) if rows else []


@pytest.fixture(scope="module")
def cluster(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("balancer")
    vllm = VllmServer(str(tiny_model), folder / "serve.log")
    started: list[BaseException] = []

    def start_vllm():  # its minute of start-up overlaps the database's and the apps'
        try:
            vllm.start()
        except BaseException as error:
            started.append(error)

    starting = threading.Thread(target=start_vllm)
    starting.start()
    database = PostgresServer().start()
    apps, proxy = [], None
    try:
        env = {"CHAT_ENGINE_URL": vllm.url, "CHAT_DATABASE_URL": database.url, **SECRET}
        add_user(env, USER, PASSWORD)
        for name in ("a", "b"):  # the same secret: a token signed by one process is good on the other
            (folder / name).mkdir()
            apps.append(ChainlitServer(env, folder / name / "chainlit.log").launch())
        for app in apps:
            app.wait_answering(300)
        starting.join()
        if started:
            raise started[0]
        proxy = NginxProxy(*(app.port for app in apps)).start()
        yield Cluster(proxy, apps, vllm, database)
    finally:
        starting.join()
        if proxy is not None:
            proxy.stop()
        for app in apps:
            app.stop()
        vllm.stop()
        database.stop()


async def test_through_the_balancer_each_tab_streams_from_its_own_process_after_a_password(cluster):
    with pytest.raises(SignInRefused) as refused:  # no local user through a proxy
        await ChatClient(cluster.proxy.url).connect()
    assert refused.value.args[0] == 401 and "add_user.py" in refused.value.args[1]

    first, second = [await cluster.tab_on(app) for app in cluster.apps]
    for tab in (first, second):
        await tab.connect()
        await tab.change_settings({"max_tokens": 200})
    replies = await asyncio.gather(first.ask("Hello from the first tab"), second.ask("Hello from the second tab"))
    for reply in replies:
        assert stats_of(reply.content)["reply"] > 0 and reply.tokens, "the reply streams through the balancer"
    for tab in (first, second):
        await tab.close()
    served = [await cluster.served(tab.session_id, SOCKET) for tab in (first, second)]
    assert served == [[cluster.address(app)] for app in cluster.apps], "each tab's socket stays on its process"
    for tab, reply in zip((first, second), replies):  # the random test model writes NUL characters, not stored
        assert await wait_stored(cluster, tab, 1) == [reply.content.replace("\0", "")], "each reply stored whole"


async def test_stop_through_the_balancer_keeps_the_partial_reply_and_aborts_it_on_the_server(cluster):
    chat = await (await cluster.tab_on(cluster.apps[1])).connect()
    try:
        await chat.change_settings({"max_tokens": 8192})
        stopped = await stop_a_long_reply(chat, lambda: chat.send("Tell me a very long story."))
        assert stopped.content.split("*Stopped.*")[0], "the partial reply stays"
        for _ in range(100):  # the server's gauges follow its next engine step
            if running_on(cluster.vllm) == 0:
                break
            await asyncio.sleep(0.2)
        assert running_on(cluster.vllm) == 0, "the stopped request still runs on the vLLM server"
    finally:
        await chat.close()


async def wait_stored(cluster: Cluster, chat: ChatClient, replies: int, timeout: float = 60) -> list[str]:
    """The chat's replies once `replies` of them are stored whole. Chainlit writes a finished reply in a task of
    its own, and tells the tab its thread's id once it stored the thread: after the reply, on a busy database."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stored = cluster.stored_replies(chat.thread_id) if chat.thread_id else []
        if len(stored) == replies and not any(reply.endswith(CUT_OFF) for reply in stored):
            return stored
        await asyncio.sleep(0.2)
    if not chat.thread_id:
        raise AssertionError("the tab never learnt its chat's thread id (Chainlit's first_interaction)")
    raise AssertionError(f"the chat's {replies} replies were not stored in thread {chat.thread_id}: "
                         f"{cluster.stored_replies(chat.thread_id)}")


async def settled(read, expected, timeout: float = 60):
    """What `read()` returns once it returns `expected`, or after `timeout` (the database's writes run in tasks of
    their own: a message may be shown before it is stored)."""
    deadline = time.monotonic() + timeout
    while (value := read()) != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return value


async def test_a_chat_started_on_one_process_is_reopened_and_goes_on_on_the_other(cluster):
    one, other = cluster.apps
    started = await (await cluster.tab_on(one)).connect()
    await started.change_settings({"max_tokens": 16})
    first = await started.ask("What is a cache?")
    await started.close()
    await wait_stored(cluster, started, 1)

    reopened = await (await cluster.tab_on(other, thread_id=started.thread_id)).connect()
    assert step_texts(reopened.resumed) == [("user_message", "What is a cache?"),
                                            ("assistant_message", first.content.replace("\0", ""))]
    follow_up = stats_of((await reopened.ask("And a prefix cache?")).content)
    before = stats_of(first.content)
    assert follow_up["prompt"] > before["prompt"] + before["reply"], "the old turns are in the other process's prompt"
    await reopened.close()
    assert await cluster.served(started.session_id, SOCKET) == [cluster.address(one)]
    assert await cluster.served(reopened.session_id, SOCKET) == [cluster.address(other)]
    asked = ["What is a cache?", "And a prefix cache?"]
    assert await settled(lambda: cluster.asked(started.thread_id), asked) == asked, "one thread, not two"


async def test_a_killed_process_s_tab_reconnects_through_the_balancer_and_goes_on_in_its_chat(cluster):
    doomed, survivor = cluster.apps
    chat = await (await cluster.tab_on(doomed)).connect()
    await chat.change_settings({"max_tokens": 16})
    first = await chat.ask("What is a cache?")
    await wait_stored(cluster, chat, 1)
    await chat.change_settings({"max_tokens": 8192})
    await chat.send("Tell me everything you know.")
    await chat.wait_started()
    # Killed mid-reply once the streaming reply has been saved (once a second, marked as cut off); on a busy machine
    # the whole reply may end first, and then the kill comes between messages of an open chat.
    deadline, saved = time.monotonic() + 120, False
    while not chat.ended and not saved and time.monotonic() < deadline:
        saved = any(reply.endswith(CUT_OFF) for reply in cluster.stored_replies(chat.thread_id))
        await asyncio.sleep(0.05)
    cut_mid_reply = saved and not chat.ended
    os.killpg(doomed.proc.pid, signal.SIGKILL)
    for _ in range(600):
        if not chat.sio.connected:
            break
        await asyncio.sleep(0.1)
    assert not chat.sio.connected, "the tab of a killed process must see its connection drop"

    back = ChatClient(cluster.proxy.url, USER, PASSWORD)
    back.session_id = chat.session_id  # the open tab reconnects with its session and no thread id, as a browser
    await back.connect()
    await back.change_settings({"max_tokens": 16})
    reply = await back.ask("Go on")
    go_on, before = stats_of(reply.content), stats_of(first.content)
    # The chat's turns are in the prompt, or the oldest were left out, as the reply says: a long reply that ended
    # before the kill (a busy machine) is 8,192 tokens of the random model, longer than the context once tokenized
    # again. A survivor that started a new chat has neither.
    assert go_on["prompt"] > before["prompt"] + before["reply"] or "no longer fit the context" in reply.content, \
        f"the other process goes on with the chat's turns: {reply.content[-300:]!r}"
    await back.close()
    assert await cluster.served(chat.session_id, SOCKET) == [cluster.address(doomed)]
    assert (await cluster.served(back.session_id, SOCKET, nth=2))[-1] == cluster.address(survivor), \
        "the balancer sends the tab's new socket to the process that is alive"
    asked = ["What is a cache?", "Tell me everything you know.", "Go on"]
    assert await settled(lambda: cluster.asked(chat.thread_id), asked) == asked, "the tab went on in its own thread"
    stored = cluster.stored_replies(chat.thread_id)
    if cut_mid_reply:
        assert stored[1].endswith(CUT_OFF), f"the reply the kill cut says so in the history: {stored[1][-200:]!r}"
        assert say(CUT_OFF_NOTICE) in back.ever_shown, "the tab is told why the reply it shows stopped"
