"""A user's own defaults for new chats: the sidebar's "Use these for new chats" keeps this chat's sampling and
system prompt, per user, in the history's database (history/tables.py), and a new chat starts with them.

Only what is the user's own taste is kept: the preset is the engine's, shared by every chat, and the switches
(costs, library) stay the app's. Turning the switch off forgets the kept values: new chats start with the
server's defaults again. Without a history there is nowhere to keep them, and the switch changes nothing.
"""

import json
import logging
from dataclasses import replace

from chainlit_door.server import data_layer

from engine.settings import CHAT_SAMPLING, Settings
from history import tables
from ui import sidebar
from engine.who import asking

log = logging.getLogger(__name__)
KEPT = (*CHAT_SAMPLING, "system_prompt")



async def follow(before: sidebar.ChatPreferences, after: sidebar.ChatPreferences) -> None:
    """After a settings change: keep the chat's values while its switch is on, forget them when it is turned off."""
    layer = data_layer()
    if layer is None:
        return
    if after.my_defaults:
        values = {"system_prompt": after.system_prompt} | {key: getattr(after.sampling, key) for key in CHAT_SAMPLING}
        await tables.keep_defaults(layer, asking().name, json.dumps(values))
    elif before.my_defaults:
        await tables.forget_defaults(layer, asking().name)


async def new_chat(prefs: sidebar.ChatPreferences, settings: Settings) -> sidebar.ChatPreferences:
    """A new chat's preferences: `prefs` with the user's kept values (each checked on its own, as a reopened chat's
    are), its switch on; `prefs` as they are when the user kept none or the database cannot say."""
    layer = data_layer()
    if layer is None:
        return prefs
    try:
        stored = await tables.user_defaults(layer, asking().name)
        values = json.loads(stored) if stored else None
    except Exception:  # a new chat opens with the server's defaults rather than not at all
        log.exception("reading the user's defaults for a new chat failed")
        return prefs
    if not isinstance(values, dict):
        return prefs
    kept = sidebar.each_valid({key: values[key] for key in KEPT if key in values}, prefs, settings)[0]
    return replace(kept, my_defaults=True)
