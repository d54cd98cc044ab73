"""A message sent after a settings change waits until the change is applied (ui/settings_first.py), on Chainlit's
real socket handler table and sessions (fast; no server)."""

import asyncio

from chainlit.server import sio
from chainlit.session import WebsocketSession

from ui import settings_first


async def test_a_message_waits_for_the_settings_change_sent_before_it(monkeypatch):
    applied, release = [], asyncio.Event()

    async def chainlits_handler(sid, settings):  # Chainlit's task_start, then the app's hook, slow here
        await release.wait()
        applied.append(settings)

    monkeypatch.setitem(sio.handlers["/"], "chat_settings_change", chainlits_handler)
    settings_first.apply_settings_first()
    session = WebsocketSession(id="s", socket_id="sock", emit=lambda *a: None, emit_call=lambda *a: None,
                               user_env={}, client_type="webapp")
    try:
        change = asyncio.create_task(sio.handlers["/"]["chat_settings_change"]("sock", {"max_tokens": 16}))
        await asyncio.sleep(0)  # the change's task begins first, as the event came first
        message = asyncio.create_task(settings_first.applied(session))
        await asyncio.sleep(0.05)
        assert not message.done(), "the message must wait for the settings change under way"
        release.set()
        await asyncio.wait_for(message, 5)
        assert applied == [{"max_tokens": 16}], "and goes on once it is applied"
        await change
        await asyncio.wait_for(settings_first.applied(session), 1)  # nothing under way: at once
    finally:
        await session.delete()
