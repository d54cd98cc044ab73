"""A memory preset switch asked from one chat's sidebar, as every chat sees it: a progress note in that chat,
a word to the others (the engine is theirs too) before it stops and once it runs, and the sidebar showing the
preset that runs afterwards, also when the switch failed and the previous preset came back. While one runs, the
engine's state is "switching" (ui/chat_tools.py refuses Regenerate and Continue meanwhile).
"""

from dataclasses import replace

import chainlit as cl

from engine.errors import ChatError
from ui import broadcast, chat_state, text
from ui.words import error_text, say

def _reporter(note: cl.Message, name: str):
    async def report(progress):
        note.content = text.progress_line(say("switch.title", name=name), progress)
        await note.update()

    return report


async def switch_preset(engine, chat, name: str) -> None:
    note = cl.Message(content=say("switch.note", name=name), author="system")
    await note.send()

    async def tell_others():
        await broadcast.broadcast("switch.others", name=name)

    try:
        if await engine.switch_preset(name, _reporter(note, name), before_stop=tell_others):
            await broadcast.broadcast("switch.done", name=name)
    except ChatError as error:
        note.content = f"❌ {error_text(error)}"
        await note.update()
        await broadcast.broadcast("switch.failed", name=engine.preset_name)
    finally:  # the sidebar and this chat's preference show what runs, also after a failure
        chat.prefs = replace(chat.prefs, preset=engine.preset_name)
        await chat_state.send_sidebar(engine, chat.prefs)
