"""A headless Chainlit client over socket.io: what a browser tab sends and receives, as Python.

Used by the end-to-end tests and by the benchmark's app-path measurement.
"""

import asyncio
import time
import uuid
from dataclasses import dataclass, field

import httpx
import socketio


@dataclass
class Shown:
    """One message as the user sees it."""

    id: str
    author: str
    type: str
    content: str = ""
    tokens: list[tuple[float, str]] = field(default_factory=list)  # (arrival time, batch of text)
    first_at: float = field(default_factory=time.monotonic)  # when the message first appeared
    last_at: float = field(default_factory=time.monotonic)  # when it last changed (its final form, once ended)


class SignInRefused(Exception):
    """The server answered the sign-in with an error (status, body)."""


class ChatClient:
    def __init__(self, url: str, user: str | None = None, password: str | None = None, thread_id: str = ""):
        """Signs in as the server asks: with `user`/`password` when given, else as the loopback's local user.

        `thread_id` reopens that chat from the history, as clicking it in the sidebar does.
        """
        self.url, self.user, self.password, self.thread_id = url, user, password, thread_id
        self.session_id = str(uuid.uuid4())  # Chainlit's session: a reconnect with it restores the chat
        self.token: str | None = None  # the sign-in's token, sent as the browser's cookie
        self.resumed: dict | None = None  # the stored thread the server sent back on a resume
        self.resume_error: str | None = None
        self.sio = socketio.AsyncClient(reconnection=False)
        self.messages: dict[str, Shown] = {}
        self.ever_shown: list[str] = []  # every content shown, also of messages removed later
        self.settings_widgets: list[dict] = []
        self.settings_received = 0  # how often the server sent the sidebar
        self._started, self._ended, self._ready = asyncio.Event(), asyncio.Event(), asyncio.Event()
        for name in ("new_message", "update_message"):
            self.sio.on(name, self._on_message)
        self.sio.on("stream_start", self._on_stream_start)
        self.sio.on("stream_token", self._on_token)
        self.sio.on("delete_message", lambda step: self.messages.pop(step["id"], None))
        self.sio.on("task_start", lambda *_: (self._started.set(), self._ended.clear()))
        self.sio.on("task_end", self._on_task_end)
        self.sio.on("chat_settings", self._on_settings)
        self.actions: list[dict] = []  # buttons the server attached to messages
        self.sio.on("action", self.actions.append)
        self.sio.on("remove_action", self._on_remove_action)
        self.elements: list[dict] = []  # files and other elements the server sent with messages
        self.sio.on("element", self.elements.append)
        self.sio.on("first_interaction", self._on_first_interaction)
        self.asked_once = False  # whether this tab sent a message: the server then owes it its thread's id
        self._thread_known = asyncio.Event()
        self._resume_answered = asyncio.Event()
        self.sio.on("resume_thread", lambda thread: self._answered_resume(thread, None))
        self.sio.on("resume_thread_error", lambda error: self._answered_resume(None, error))

    def _on_remove_action(self, action: dict) -> None:
        """As the browser does: the first button with the removed one's id goes."""
        for shown in self.actions:
            if shown.get("id") == action.get("id"):
                self.actions.remove(shown)
                return

    def _on_first_interaction(self, data: dict) -> None:
        self.thread_id = data["thread_id"]
        self._thread_known.set()

    def _answered_resume(self, thread: dict | None, error: str | None) -> None:
        self.resumed, self.resume_error = thread, error
        self._resume_answered.set()

    async def sign_in(self) -> str | None:
        """The sign-in token, as the browser's login page gets it; None when the server asks nobody to sign in."""
        async with httpx.AsyncClient(base_url=self.url, timeout=httpx.Timeout(300, connect=60)) as http:
            if self.password is not None:
                response = await http.post("/login", data={"username": self.user, "password": self.password})
            else:
                response = await http.post("/auth/header")
                if response.status_code == 400:  # no sign-in on this server (history off)
                    return None
        if response.status_code != 200:
            raise SignInRefused(response.status_code, response.text)
        return response.cookies.get("access_token")

    async def _session_cookie(self) -> str:
        async with httpx.AsyncClient(base_url=self.url, timeout=httpx.Timeout(300, connect=60)) as http:
            response = await http.post("/set-session-cookie", json={"session_id": self.session_id})
        response.raise_for_status()
        return response.cookies["X-Chainlit-Session-id"]

    async def connect(self, timeout: float = 30, wait_ready: bool = True) -> "ChatClient":
        """Sign in and open the chat; `wait_ready=False` returns at once, as a user who types before the chat
        has opened (its sidebar not yet there)."""
        token = self.token = await self.sign_in()
        cookies = [f"access_token={token}"] if token else []
        # as Chainlit's page does before it opens the socket: a balancer in front keeps the tab on one process by it
        cookies.append(f"X-Chainlit-Session-id={await self._session_cookie()}")
        headers = {"Cookie": "; ".join(cookies)}
        auth = {"clientType": "webapp", "sessionId": self.session_id, "threadId": self.thread_id,
                "userEnv": "{}", "chatProfile": ""}
        # wait_timeout: python-socketio gives the server 1 s to accept the connection by default, and then fails
        # with "Unexpected connection error"; a server busy with many chats (sign-in, its database) can take longer
        await self.sio.connect(self.url, headers=headers, socketio_path="/ws/socket.io", auth=auth,
                               transports=["websocket"], wait_timeout=60)
        await self.sio.emit("connection_successful")
        if not wait_ready:
            return self
        await asyncio.wait_for(self._ready.wait(), timeout)
        if not self.thread_id:  # the chat's opening is a task of its own: its end must not pass for a reply's
            await asyncio.wait_for(self._ended.wait(), timeout)
        if self.thread_id:
            await asyncio.wait_for(self._resume_answered.wait(), timeout)
        return self

    async def wait_opened(self, timeout: float = 300) -> None:
        """The chat has opened: its sidebar came."""
        await asyncio.wait_for(self._ready.wait(), timeout)

    async def close(self, thread_within_s: float = 60) -> None:
        """Close the tab. One that sent a message is closed once it knows its chat's thread id, as the page's
        address shows it: Chainlit sends the id after it stored the thread, which on a busy database comes after a
        short reply, and the chat is found again (reopened, looked up in the database) by that id."""
        if self.asked_once and not self.thread_id and self.sio.connected:
            try:
                await asyncio.wait_for(self._thread_known.wait(), thread_within_s)
            except asyncio.TimeoutError:
                pass  # closed without it: a test that needs the id says so where it reads it
        await self.sio.disconnect()

    def _on_message(self, step: dict) -> Shown:
        shown = self.messages.setdefault(step["id"], Shown(step["id"], step.get("name", ""), step.get("type", "")))
        shown.content = step.get("output", shown.content) or ""
        shown.last_at = time.monotonic()
        self.ever_shown.append(shown.content)
        return shown

    def _on_stream_start(self, step: dict) -> None:
        """Chainlit sends a message's first streamed text with the message itself, the rest as stream tokens."""
        shown = self._on_message(step)
        if shown.content:
            shown.tokens.append((shown.last_at, shown.content))

    def _on_token(self, data: dict) -> None:
        shown = self.messages.setdefault(data["id"], Shown(data["id"], "", "assistant_message"))
        shown.content = data["token"] if data.get("isSequence") else shown.content + data["token"]
        shown.last_at = time.monotonic()
        shown.tokens.append((shown.last_at, data["token"]))

    def _on_task_end(self, *_) -> None:
        if self._started.is_set():  # on connect a lone task_end comes before any task_start
            self._ended.set()

    def _on_settings(self, widgets) -> None:
        self.settings_widgets = widgets
        self.settings_received += 1
        self._ready.set()

    async def upload(self, name: str, data: bytes, mime: str, headers: dict | None = None) -> httpx.Response:
        """Post a file to this chat's session, as the browser's paperclip does (its id then goes with `send`)."""
        cookies = {"access_token": self.token} if self.token else {}
        timeout = httpx.Timeout(300, connect=60)
        async with httpx.AsyncClient(base_url=self.url, cookies=cookies, timeout=timeout) as http:
            return await http.post("/project/file", params={"session_id": self.session_id}, headers=headers,
                                   files={"file": (name, data, mime)})

    async def _http(self) -> httpx.AsyncClient:
        cookies = {"access_token": self.token} if self.token else {}
        return httpx.AsyncClient(base_url=self.url, cookies=cookies, timeout=httpx.Timeout(300, connect=60))

    def action(self, name: str) -> dict | None:
        """The latest button of that name the server attached (and has not taken back)."""
        return next((a for a in reversed(self.actions) if a["name"] == name), None)

    async def click(self, action: dict) -> httpx.Response:
        """Press an action's button, as the browser does; returns once its callback has ended."""
        self._started.clear()
        self._ended.clear()
        async with await self._http() as http:
            return await http.post("/project/action", json={"sessionId": self.session_id, "action": action})

    async def download(self, element: dict) -> bytes:
        """A file element's bytes, as the browser fetches them."""
        async with await self._http() as http:
            response = await http.get(f"/project/file/{element['chainlitKey']}",
                                      params={"session_id": self.session_id})
        response.raise_for_status()
        return response.content

    async def send(self, text: str, command: str | None = None, files: list[str] = (),
                   message_id: str | None = None) -> str:
        """Send a user message (with the ids of files uploaded); returns its id. Use `wait_reply` for the answer.
        `message_id`: the id the message carries (a browser makes a new one; a forged client may not)."""
        self._started.clear()
        self._ended.clear()
        message_id = message_id or str(uuid.uuid4())
        step = {"id": message_id, "threadId": "", "createdAt": "", "output": text, "name": "User",
                "type": "user_message", "command": command}
        self.messages[message_id] = Shown(message_id, "User", "user_message", text)
        self.asked_once = True
        await self.sio.emit("client_message", {"message": step, "fileReferences": [{"id": f} for f in files]})
        return message_id

    @property
    def ended(self) -> bool:
        """The server has ended the task it started for the last message (its reply is whole)."""
        return self._ended.is_set()

    async def wait_started(self, timeout: float = 300) -> None:
        """The server has started working on the last message."""
        await asyncio.wait_for(self._started.wait(), timeout)

    async def wait_idle(self, timeout: float = 300) -> None:
        await self.wait_started(timeout)
        await asyncio.wait_for(self._ended.wait(), timeout)

    async def ask(self, text: str, timeout: float = 300) -> Shown:
        """Send a message and return the last assistant message once the task ended."""
        await self.send(text)
        await self.wait_idle(timeout)
        return self.replies()[-1]

    async def streaming_reply(self, before: set[str], timeout: float = 300) -> Shown:
        """The model's new reply (its id not in `before`) once its first text is shown; fails after `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = [m for m in self.replies("ERNIE Chat") if m.id not in before and m.tokens]
            if shown:
                return shown[-1]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no reply showed any text within {timeout:.0f} s")

    def replies(self, author: str | None = None) -> list[Shown]:
        return [m for m in self.messages.values() if m.type in ("assistant_message", "system_message")
                and (author is None or m.author == author)]

    def all_text(self) -> str:
        return "\n".join(m.content for m in self.messages.values())

    async def edit(self, message_id: str, text: str) -> None:
        """Edit an earlier user message: Chainlit reruns the chat from it."""
        self._started.clear()
        self._ended.clear()
        self.messages[message_id].content = text
        await self.sio.emit("edit_message", {"message": {"id": message_id, "output": text}})

    async def stop(self) -> None:
        await self.sio.emit("stop")

    async def change_settings(self, values: dict, timeout: float = 300) -> None:
        """Send sidebar values and wait until the server has handled them (a preset switch included)."""
        self._started.clear()
        self._ended.clear()
        await self.sio.emit("chat_settings_change", values)
        await self.wait_idle(timeout)
