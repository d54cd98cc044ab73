"""The texts the chat shows: starter prompts, start-up progress, the cost of a reply, the engine status."""

import re
import time

import chainlit as cl

from engine.reports import Progress, Stats, Status

STARTERS = [
    cl.Starter(label="Explain KV caching", message="Explain in three sentences what a KV cache is."),
    cl.Starter(label="Write Python", message="Write a Python function that checks if a word is a palindrome."),
    cl.Starter(label="你好", message="用一句话介绍你自己。"),
    cl.Starter(label="Plan a day", message="Plan a relaxed Saturday in Beijing, in a short list."),
]


# The chat's tools, by the language the browser asks for (Chainlit's own texts come from .chainlit/translations)
WORDS = {
    "continue_reply": ("Continue", "继续"),
    "continue_reply.tip": ("Go on writing this reply from where it stopped", "从中断的地方接着写这条回复"),
    "regenerate_reply": ("Regenerate", "重新生成"),
    "regenerate_reply.tip": ("Another answer to the same question, in place of this one",
                             "对同一个问题重新回答，替换这条回复"),
    "Export": ("Download this chat as Markdown and JSON", "把这个对话下载为 Markdown 和 JSON"),
    "Import": ("Attach a chat's JSON file to make it a new chat", "附上对话的 JSON 文件，导入为新对话"),
    "Library": ("Your documents: attach files to add them, or see and remove them",
                "你的文档库：附上文件即可加入，也可查看或删除"),
}
ACTION_ICONS = {"continue_reply": "play", "regenerate_reply": "refresh-cw"}


def chinese() -> bool:
    """Whether this chat's browser asks for Chinese (Chainlit reads its Accept-Language)."""
    try:
        return (cl.context.session.language or "").lower().startswith("zh")
    except Exception:  # outside a chat
        return False


def label(name: str, tooltip: bool = False) -> str:
    english, chinese_words = WORDS[f"{name}.tip" if tooltip else name]
    return chinese_words if chinese() else english


def progress_line(title: str, progress: Progress) -> str:
    mark = "✅" if progress.done else "⏳"
    line = f"{mark} {title}: {progress.stage} ({progress.elapsed_s:.0f} s)"
    return f"{line}. {progress.notice}." if progress.notice else line


def stats_line(stats: Stats) -> str:
    parts = []
    if stats.ttft_s is not None:
        parts.append(f"first token {stats.ttft_s * 1000:.0f} ms")
    if stats.decode_tokens_per_s:
        parts.append(f"{stats.decode_tokens_per_s:.0f} tok/s")
    parts.append(f"{stats.prompt_tokens} prompt + {stats.generated_tokens} reply tokens")
    parts.append(f"{stats.cached_tokens} cached")
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
        lines.append("*Stopped.*")
    elif stats.finish_reason == "length" and stats.context_full:
        lines.append(f"*The reply filled the context ({stats.max_model_len} tokens with the chat so far): start a "
                     "new chat, or pick a preset with a longer context.*")
    elif stats.finish_reason == "length":
        lines.append(f"*The reply hit the 'max new tokens' limit ({stats.max_tokens}).*")
    if stats.dropped_messages:
        lines.append(f"*The {stats.dropped_messages} oldest messages no longer fit the context and were left out.*")
    for cut in stats.cut:
        lines.append(f"*{cut.name}: {cut.left_out_tokens:,} of {cut.total_tokens:,} tokens were left out: the context "
                     f"holds {stats.max_model_len:,} tokens with the reply.*")
    return lines


def asleep_text(since: float | None, now: float | None = None) -> str:
    """" since 14:02 (12 min ago); the next message wakes it" for an engine asleep since `since`, else ""."""
    if since is None:
        return ""
    minutes = max(0, round(((now or time.time()) - since) / 60))
    return f" since {time.strftime('%H:%M', time.localtime(since))} ({minutes} min ago); the next message wakes it"


def status_text(status: Status) -> str:
    def gib(value):
        return "–" if value is None else f"{value:.2f} GiB"

    kv = "–" if status.kv_cache_usage is None else f"{status.kv_cache_usage:.1%}"
    return "\n".join([
        "**Engine status**", "",
        "| Engine | Now |", "|---|---|",
        f"| State | {status.state}{asleep_text(status.asleep_since)} |",
        f"| Device | {status.device} |",
        f"| Preset | {status.preset} — {status.purpose} |",
        f"| Context | {status.max_model_len or '–'} tokens |",
        f"| Memory used / the preset's size | {gib(status.memory_used_gib)} / {gib(status.needs_gib)} |",
        f"| KV cache in use | {kv} |",
        f"| Requests running / queued | {status.requests_running} / {status.requests_waiting} |",
        f"| Sequences from chats / the API | {status.chat_requests} / {status.api_sequences} |",
    ])
