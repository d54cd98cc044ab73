"""The settings panel's Reset: back to the defaults, applied and said. Chainlit's own Reset only puts back the values
the panel had when it was opened (the ones in use), so public/settings-reset.js also asks the server
(web/settings_route.py), and here the chat's sampling and system prompt become its defaults again: the user's own
("Use these for new chats"), else the app's. The running preset stays (a switch restarts every chat's engine), as do
the switches of what the chat shows (the cost line, the library).
"""

from dataclasses import replace

import chainlit as cl

from history.writes import keep_settings
from ui import chat_state, my_defaults, sidebar
from ui.words import say


async def to_defaults(engine, layer) -> None:
    chat = await chat_state.current(engine)
    now = chat.prefs
    base = sidebar.defaults(engine.settings, now.preset)
    fresh = await my_defaults.new_chat(replace(base, show_stats=now.show_stats, library=now.library), engine.settings)
    chat.prefs = replace(fresh, preset=now.preset)
    keep_settings(layer, sidebar.values(chat.prefs))
    await chat_state.send_sidebar(engine, chat.prefs)
    whose = "settings.reset_yours" if chat.prefs.my_defaults else "settings.reset_app"
    await cl.Message(content=say(whose), author="system").send()
