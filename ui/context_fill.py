"""How much of the running preset's context a chat already takes, in sight before the next message: a line by the
message box (web/context_route.py, public/context-line.js) and the end of each reply's cost line.

Counted with the model's own tokens: the last reply's prompt and reply tokens (its stats, also stored with a
reopened chat's last reply) are what the chat takes now, and a draft in the message box is counted by the model's
tokenizer (the engine's `count_tokens`: no model run) when the page asks, at most twice a second while typing. The
room is the preset's context less what a reply may write (as engine/chat.py reserves it), read at each ask, so a
preset switch shows at once. The line warns when the next message will cut the oldest turns: the draft does not fit
beside the chat, or, with no draft, the chat is past 90% of the room (a question of ordinary length will not fit).
"""

from engine.reports import Stats
from ui.words import say

WARN_AT = 0.9  # of the room for the chat's turns: a question of ordinary length then cuts the oldest turns
TURN_TOKENS = 8  # what the chat template adds around a message


def used(stats: Stats | None) -> int:
    """The tokens the chat takes after the reply that cost `stats` (0: not known yet)."""
    return 0 if stats is None else stats.prompt_tokens + stats.generated_tokens


def room(context: int | None, max_tokens: int) -> int | None:
    """The tokens the chat's turns may take: the context less the reply's reserve (engine/chat.py's rule)."""
    return None if not context else context - min(max_tokens, context // 2)


def line(taken: int, context: int | None, max_tokens: int, lang: str | None = None,
         draft: int = 0) -> tuple[str, bool] | None:
    """("context 1,234 / 4,096 tokens", whether the next message will cut earlier turns), or None before the
    engine says its context; `draft`: the tokens of the message being written, shown apart."""
    space = room(context, max_tokens)
    if space is None:
        return None
    full = taken + draft + TURN_TOKENS > space if draft else taken >= WARN_AT * space
    said = say("context.fill_draft", lang, used=taken, draft=draft, context=context) if draft else \
        say("context.fill", lang, used=taken, context=context)
    return (f"{said} · {say('context.full', lang)}" if full else said), full
