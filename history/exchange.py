"""A chat as files and back: Markdown to read and JSON in the OpenAI messages format for any OpenAI-compatible tool
(the export), and such a JSON file, checked, as the turns and settings of a new chat (the import).

An import is the app's export, an object with "messages", a bare list of messages, or JSON Lines of them (one
message per line). Plain data in and out (no Chainlit here): ui/chat_files.py sends the files, checks an import's
settings as the sidebar does and stores it as a thread. A user's turn is exported as the prompt held it: its
attachments' text fenced before its words (engine.chat). Every refusal of an import says what is wrong, where, and
how to fix it (`ImportRefused`).
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
    turns: list[dict]  # {"role", "content"}: starting with a user; each assistant's answers the user before it
    settings: dict = field(default_factory=dict)  # the sidebar's values it brings (system prompt, sampling)
    title: str = ""
    dropped: list[str] = field(default_factory=list)  # what the file held that was left out, said to the user


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
    """A chat from an import file's bytes (JSON, or JSON Lines of messages); raises ImportRefused."""
    found = _loaded(data)
    messages = found.get("messages") if isinstance(found, dict) else found
    if not isinstance(messages, list) or not messages:
        raise ImportRefused('it holds no messages: the file must be a list of {"role", "content"} messages, or an '
                            'object with such a list under "messages"')
    if len(messages) > MAX_MESSAGES:
        raise ImportRefused(f"it holds {len(messages):,} messages, more than the {MAX_MESSAGES:,} an import takes: "
                            "split it into several files, or keep its latest messages")
    imported = Imported([])
    if isinstance(found, dict):
        _take_head(found, imported)
    for number, message in enumerate(messages, 1):
        role, content = _checked(number, message, max_model_len)
        if role == "system":
            if number != 1:
                raise ImportRefused(f"message {number} is a system message after the chat began: only the first "
                                    "message may be the system prompt; remove it or make it a user message")
            imported.settings["system_prompt"] = content
            continue
        previous = imported.turns[-1]["role"] if imported.turns else None
        if role == "assistant" and previous != "user":  # a reply is stored as the answer to the question before it
            raise ImportRefused(f"message {number} is an assistant message that answers no user message" + (
                " (a second assistant message in a row): join the two replies or remove one" if previous else
                ": a chat begins with a user's message; add the question it answers before it, or remove it"))
        imported.turns.append({"role": role, "content": content})
    if not imported.turns:
        raise ImportRefused("it holds a system prompt but no user message: add the chat's messages")
    return imported


def _loaded(data: bytes):
    """The file's JSON; a file of one JSON value per line (JSON Lines, `.jsonl`) is read as a list of them."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ImportRefused(f"the file is not UTF-8 text ({error}): save it as UTF-8 JSON and import it again") \
            from None
    try:
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            if error.msg != "Extra data":
                raise
            try:
                return [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError:
                raise error from None
    except json.JSONDecodeError as error:
        raise ImportRefused(f"the file is not valid JSON nor JSON Lines ({error}): export the chat again, or fix "
                            "the file where the error points") from None
    except RecursionError:
        raise ImportRefused("the file's JSON is nested too deeply to read (arrays or objects inside each other "
                            "hundreds of levels down), where a chat needs a few: export the chat again, or fix "
                            "the file") from None


def _take_head(found: dict, imported: Imported) -> None:
    """The title and the sampling settings of the app's own export; what cannot be taken is said in `dropped`."""
    title = found.get("title")
    if isinstance(title, str):
        imported.title = " ".join(title.split())[:200]
    elif title is not None:
        imported.dropped.append("its title (not text)")
    sampling = found.get("sampling")
    if isinstance(sampling, dict):
        imported.settings = {k: v for k, v in sampling.items() if k in CHAT_SAMPLING}
    elif sampling is not None:
        imported.dropped.append("its sampling settings (not an object of names and values)")


def _checked(number: int, message, max_model_len: int) -> tuple[str, str]:
    """A message's role and text content, or ImportRefused naming it."""
    if not isinstance(message, dict):
        raise ImportRefused(f'message {number} is not an object: each must be {{"role": ..., "content": ...}}')
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        quoted = json.dumps(role, ensure_ascii=False)
        quoted = quoted if len(quoted) <= 40 else quoted[:40] + "…"  # a refusal quoting a huge value is unreadable
        raise ImportRefused(f"message {number} has the role {quoted}, which this chat does not take: "
                            f"only {', '.join(ROLES)} import (tool calls and other roles do not); remove it or "
                            "change its role")
    if isinstance(content, list):  # OpenAI's content parts: text only
        if any(not isinstance(part, dict) or part.get("type") != "text" for part in content):
            raise ImportRefused(f"message {number} has a part that is not text (an image, audio...): only text "
                                "imports; remove that part")
        if any(not isinstance(part.get("text"), str) for part in content):
            raise ImportRefused(f'message {number} has a text part whose "text" is not a string: give each part '
                                'its text as a string, e.g. {"type": "text", "text": "Hello"}')
        content = "\n".join(part["text"] for part in content)
    if not isinstance(content, str):
        raise ImportRefused(f"message {number} has no text content: give it a \"content\" string")
    if len(content) > CHARS_PER_TOKEN * max_model_len:
        raise ImportRefused(f"message {number} is larger than the context ({len(content):,} characters; the model "
                            f"reads at most {max_model_len:,} tokens at once): shorten it, or pick a preset with a "
                            "longer context")
    return role, content
