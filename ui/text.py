"""The texts the chat shows: starter prompts, start-up progress, the cost of a reply, the engine status (their words
in the chat's language are ui/words/'s)."""

import re
import time

import chainlit as cl

from engine.reports import Progress, Stats, Status
from ui import context_fill
from ui.words import again, say, say_known

STARTER_KEYS = ("kv", "python", "hello", "day")
# The type of the tables the app shows (status, library, keys, usage): not a reply of the model, so Chainlit puts
# no thumbs up and down under them (it offers them on a run's latest assistant message)
TABLE = "system_message"
MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|<>~-])")  # what would make Markdown (links, images, emphasis, code, HTML)
IMAGE = re.compile(r"!(?=\[)")  # an image's start: "![alt](address)" is fetched by the browser as it shows it


def plain(text: str) -> str:
    """`text` shown as written, never as Markdown: an image in a title or a file's name would be fetched by the
    browser from wherever it points."""
    return MARKDOWN.sub(r"\\\1", " ".join(text.split()))


def no_images(text: str) -> str:
    """`text` as Markdown, but no image in it is fetched (where escaping all of it would change the words that
    Chainlit links to a message's elements, as in the sources line)."""
    return IMAGE.sub(r"\\!", text)


def starters(language: str | None = None) -> list[cl.Starter]:
    """The starters of an empty chat, in `language` (Chainlit asks for them over HTTP, outside any chat)."""
    return [cl.Starter(label=say(f"starter.{key}", language), message=say(f"starter.{key}.ask", language))
            for key in STARTER_KEYS]


ACTION_ICONS = {"continue_reply": "play", "regenerate_reply": "refresh-cw"}


def label(name: str, tooltip: bool = False) -> str:
    return say(f"{name}.tip" if tooltip else name)


def progress_line(title: str, progress: Progress, lang: str | None = None) -> str:
    stage = again("stage.", progress.stage, lang)
    line = say("progress", lang, mark="✅" if progress.done else "⏳", title=title, stage=stage,
               seconds=progress.elapsed_s)
    if not progress.notice:
        return line
    return say("progress.notice", lang, line=line, notice=again("notice.", progress.notice.rstrip("."), lang))


def stats_line(stats: Stats) -> str:
    parts = []
    if stats.ttft_s is not None:
        parts.append(say("cost.first_token", ms=stats.ttft_s * 1000))
    if stats.decode_tokens_per_s:
        parts.append(say("cost.rate", rate=stats.decode_tokens_per_s))
    parts.append(say("cost.tokens", prompt=stats.prompt_tokens, reply=stats.generated_tokens))
    parts.append(say("cost.cached", cached=stats.cached_tokens))
    if fill := context_fill.line(context_fill.used(stats), stats.max_model_len, stats.max_tokens):
        parts.append(fill[0])  # what the chat takes now: the next question's room
    return "*`" + " · ".join(parts) + "`*"  # public/style.css makes this shape small and quiet


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def close_code_fence(answer: str) -> str:
    """Close a code block the reply left open (a reply stopped mid-code), so the notes below it render as text.

    Markdown's rule: a fence is 3+ backticks or tildes; only a line of the same character, at least
    as long and with nothing after it, closes it.
    """
    open_fence = None
    for line in answer.split("\n"):
        found = FENCE.match(line)
        if not found:
            continue
        fence, rest = found.groups()
        if open_fence is None and not (fence[0] == "`" and "`" in rest):
            open_fence = fence
        elif open_fence and fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not rest.strip():
            open_fence = None
    return f"{answer}\n{open_fence}" if open_fence else answer


def notes(stats: Stats, stopped: bool) -> list[str]:
    """What the user should know about a reply beyond its text."""
    lines = []
    if stopped:
        lines.append(say("reply.stopped"))
    elif stats.finish_reason == "length" and stats.context_full:
        lines.append(say("reply.context_full", context=stats.max_model_len))
    elif stats.finish_reason == "length":
        lines.append(say("reply.max_tokens", max_tokens=stats.max_tokens))
    if stats.dropped_messages:
        lines.append(say("reply.dropped", count=stats.dropped_messages))
    for cut in stats.cut:
        lines.append(say("reply.cut", name=cut.name, left_out=cut.left_out_tokens, total=cut.total_tokens,
                         context=stats.max_model_len))
    return lines


def asleep_text(since: float | None, now: float | None = None) -> str:
    """" since 14:02 (12 min ago); the next message wakes it" for an engine asleep since `since`, else ""."""
    if since is None:
        return ""
    minutes = max(0, round(((now or time.time()) - since) / 60))
    return say("status.asleep", clock=time.strftime('%H:%M', time.localtime(since)), minutes=minutes)


def status_text(status: Status, starting: str | None = None) -> str:
    """The Status chip's table; `starting`: the start's progress line (ui/start_line.py), shown with the state."""
    def gib(value):
        return "–" if value is None else f"{value:.2f} GiB"

    kv = "–" if status.kv_cache_usage is None else f"{status.kv_cache_usage:.1%}"
    state = say_known(f"state.{status.state}", status.state)
    purpose = say_known(f"preset.{status.preset}", again("purpose.", status.purpose))
    context = say("status.context_value", tokens=status.max_model_len or "–")
    # a failed start says why, in place
    why = f" — {again('error.', status.problem)}".replace("|", "\\|") if status.problem else ""
    going = f" — {starting}".replace("|", "\\|") if starting else ""
    rows = [("state", f"{state}{asleep_text(status.asleep_since)}{why}{going}"),
            ("device", again("device.", status.device)),
            ("preset", f"{status.preset} — {purpose}"), ("context", context),
            ("memory", f"{gib(status.memory_used_gib)} / {gib(status.needs_gib)}"), ("kv", kv),
            ("requests", f"{status.requests_running} / {status.requests_waiting}"),
            ("sequences", f"{status.chat_requests} / {status.api_sequences}"),
            ("share", f"{status.user_share or '–'} / {status.waiting_for_share}")]
    return "\n".join([say("status.title"), "", say("status.head"), "|---|---|",
                      *(f"| {say('status.' + key)} | {value} |" for key, value in rows)])
