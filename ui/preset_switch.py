"""A memory preset switch asked from one chat's sidebar, as every chat sees it: a progress note in that chat,
a word to the others (the engine is theirs too) before it stops and once it runs, and the sidebar showing the
preset that runs afterwards, also when the switch failed and the previous preset came back. While one runs, the
engine's state is "switching" (ui/chat_tools.py refuses Regenerate and Continue meanwhile).
"""

from dataclasses import replace

import chainlit as cl

from engine.errors import ChatError
from ui import broadcast, chat_state, text

def _reporter(note: cl.Message, name: str):
    async def report(progress):
        note.content = text.progress_line(f"Switching to '{name}'", progress)
        await note.update()

    return report


async def switch_preset(engine, chat, name: str) -> None:
    note = cl.Message(content=f"⏳ Switching the memory preset to '{name}'…", author="system")
    await note.send()

    async def tell_others():
        await broadcast.broadcast(f"🔁 Another chat is switching the memory preset to '{name}'; replies pause until "
                                  "it is ready.")

    try:
        if await engine.switch_preset(name, _reporter(note, name), before_stop=tell_others):
            await broadcast.broadcast(f"✅ The memory preset is now '{name}'.")
    except ChatError as error:
        note.content = f"❌ {error}"
        await note.update()
        await broadcast.broadcast(f"The preset switch failed; '{engine.preset_name}' is running.")
    finally:  # the sidebar and this chat's preference show what runs, also after a failure
        chat.prefs = replace(chat.prefs, preset=engine.preset_name)
        await chat_state.send_sidebar(engine, chat.prefs)
