"""A chat as files and back: Markdown to read and JSON in the OpenAI messages format for any OpenAI-compatible
tool (the export), and such a JSON file, checked, as the turns and settings of a new chat (the import).

Plain data in and out (no Chainlit here): ui/chat_files.py sends the files and stores an import as a thread.
A user's turn is exported as the prompt held it: its attachments' text fenced before its words (engine.chat).
Every refusal of an import says what is wrong, where, and how to fix it (`ImportRefused`).
"""

import json
from dataclasses import dataclass, field

from engine.chat import as_text
from engine.settings import CHAT_SAMPLING

FORMAT = "ernie-chat/1"  # the app's own export; any {"messages": [...]} or bare list of messages imports too
MAX_MESSAGES = 1000  # more turns than a context holds many times over; each is a row written to the history
CHARS_PER_TOKEN = 4  # a message this many times the context in characters surely does not fit it
MODEL_CONTEXT = 131072  # ERNIE-4.5-0.3B's own, when no engine runs yet to say its preset's
ROLES = ("system", "user", "assistant")


class ImportRefused(ValueError):
    """An import file that cannot become a chat; the text says what and how to fix it."""


@dataclass
class Imported:
    turns: list[dict]  # {"role", "content"}: users and assistants alternating, starting with a user
    settings: dict = field(default_factory=dict)  # the sidebar's values it brings (system prompt, sampling)
    title: str = ""


def as_json(turns: list[dict], model: str, preset: str, sampling: dict, system_prompt: str, title: str) -> str:
    messages = ([{"role": "system", "content": system_prompt}] if system_prompt.strip() else []) + [
        {"role": t["role"], "content": as_text(t) if t["role"] == "user" else t["content"]} for t in turns]
    return json.dumps({"format": FORMAT, "title": title, "model": model, "preset": preset, "sampling": sampling,
                       "messages": messages}, ensure_ascii=False, indent=2)


def as_markdown(turns: list[dict], model: str, preset: str, sampling: dict, system_prompt: str, title: str) -> str:
    head = [f"# {title or 'Chat'}", "", f"- Model: `{model}`", f"- Memory preset: `{preset}`",
            "- Sampling: " + ", ".join(f"{key} {value}" for key, value in sampling.items() if value is not None)]
    if system_prompt.strip():
        head.append(f"- System prompt: {system_prompt.strip()}")
    body = [f"## {'You' if t['role'] == 'user' else 'ERNIE'}\n\n{as_text(t) if t['role'] == 'user' else t['content']}"
            for t in turns]
    return "\n\n".join(["\n".join(head), *body]) + "\n"


def parse(data: bytes, max_model_len: int) -> Imported:
    """A chat from an import file's bytes; raises ImportRefused."""
    try:
        found = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ImportRefused(f"the file is not valid JSON ({error}): export the chat again, or fix the file "
                            "where the error points") from None
    messages = found.get("messages") if isinstance(found, dict) else found
    if not isinstance(messages, list) or not messages:
        raise ImportRefused('it holds no messages: the file must be a list of {"role", "content"} messages, or an '
                            'object with such a list under "messages"')
    if len(messages) > MAX_MESSAGES:
        raise ImportRefused(f"it holds {len(messages):,} messages, more than the {MAX_MESSAGES:,} an import takes: "
                            "split it into several files, or keep its latest messages")
    imported = Imported([], title=str(found.get("title") or "")[:200] if isinstance(found, dict) else "")
    if isinstance(found, dict) and isinstance(found.get("sampling"), dict):
        imported.settings = {k: v for k, v in found["sampling"].items() if k in CHAT_SAMPLING}
    for number, message in enumerate(messages, 1):
        role, content = _checked(number, message, max_model_len)
        if role == "system":
            if number != 1:
                raise ImportRefused(f"message {number} is a system message after the chat began: only the first "
                                    "message may be the system prompt; remove it or make it a user message")
            imported.settings["system_prompt"] = content
            continue
        wanted = "assistant" if imported.turns and imported.turns[-1]["role"] == "user" else "user"
        if role != wanted:
            raise ImportRefused(f"message {number} is a second {role} message in a row: the chat must alternate "
                                "user and assistant messages, starting with a user's; join or remove them")
        imported.turns.append({"role": role, "content": content})
    if not imported.turns:
        raise ImportRefused("it holds a system prompt but no user message: add the chat's messages")
    return imported


def _checked(number: int, message, max_model_len: int) -> tuple[str, str]:
    """A message's role and text content, or ImportRefused naming it."""
    if not isinstance(message, dict):
        raise ImportRefused(f'message {number} is not an object: each must be {{"role": ..., "content": ...}}')
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        raise ImportRefused(f"message {number} has the role {json.dumps(role)}, which this chat does not take: "
                            f"only {', '.join(ROLES)} import (tool calls and other roles do not); remove it or "
                            "change its role")
    if isinstance(content, list):  # OpenAI's content parts: text only
        if any(not isinstance(part, dict) or part.get("type") != "text" for part in content):
            raise ImportRefused(f"message {number} has a part that is not text (an image, audio...): only text "
                                "imports; remove that part")
        content = "\n".join(str(part.get("text", "")) for part in content)
    if not isinstance(content, str):
        raise ImportRefused(f"message {number} has no text content: give it a \"content\" string")
    if len(content) > CHARS_PER_TOKEN * max_model_len:
        raise ImportRefused(f"message {number} is larger than the context ({len(content):,} characters; the model "
                            f"reads at most {max_model_len:,} tokens at once): shorten it, or pick a preset with a "
                            "longer context")
    return role, content
