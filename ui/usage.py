"""The Usage chip: the tokens a user used per day (UTC), by chats and by the API, as history/usage.py keeps them.

Each user sees their own; an operator (named in CHAT_ADMINS, or the machine's owner: engine/who.py's `is_operator`)
sees everyone's, the operator's key's among them. The counts of the last second may not be in yet (they are written
once a second).
"""

import chainlit as cl

from engine import who
from history import usage
from ui.text import TABLE
from ui.words import say

DAYS = 7


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def _row(row: usage.Row, with_user: bool) -> str:
    source = say("usage.api") if row.source == "api" else say("usage.chat")
    cells = [_cell(row.user)] if with_user else []
    cells += [row.day, source, f"{row.requests:,}", f"{row.prompt_tokens:,}", f"{row.cached_tokens:,}",
              f"{row.reply_tokens:,}"]
    return "| " + " | ".join(cells) + " |"


def table(rows: list[usage.Row], with_user: bool) -> str:
    """Rows as a Markdown table, with a total line."""
    total = usage.Row("", "", "", *(sum(getattr(r, f) for r in rows) for f in usage.FIELDS))
    total_cells = ([say("usage.total"), "", ""] if with_user else [say("usage.total"), ""]) + \
        [f"{getattr(total, f):,}" for f in usage.FIELDS]
    head = say("usage.head_users" if with_user else "usage.head")
    rule = "|---" * (7 if with_user else 6) + "|"
    return "\n".join([head, rule, *(_row(r, with_user) for r in rows), "| " + " | ".join(total_cells) + " |"])


async def on_command(engine, layer) -> None:
    if layer is None:
        return await cl.ErrorMessage(content=say("usage.no_history"), author="system").send()
    asking = who.asking()
    everyone = asking.is_operator(engine.settings.admin_list)
    rows = await usage.read(layer, None if everyone else asking.name, DAYS)
    if not rows:
        text = say("usage.none", days=DAYS, whose=say("usage.by_anyone") if everyone else "")
    else:
        text = say("usage.everyone" if everyone else "usage.yours", days=DAYS, table=table(rows, everyone))
    await cl.Message(content=text, author="system", type=TABLE).send()
