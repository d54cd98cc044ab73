"""A chat as files and back: Markdown to read and JSON in the OpenAI messages format for any OpenAI-compatible tool
(the export), and such a JSON file, checked, as the turns and settings of a new chat (the import).

An import is the app's export, an object with "messages", a bare list of messages, or JSON Lines of them (one
message per line). Plain data in and out (no Chainlit here): ui/chat_files.py sends the files, checks an import's
settings as the sidebar does and stores it as a thread. A user's turn is exported as the prompt held it: its
attachments' text fenced before its words (engine.chat). Every refusal of an import says what is wrong, where, and
how to fix it (`ImportRefused`). Every chat of a user goes out as one zip archive of those same two files per chat
(`as_zip`).
"""

import io
import json
import zipfile
from dataclasses import dataclass, field

from engine.chat import as_text
from engine.settings import CHAT_SAMPLING
from history.words import Refusal, Said, say

FORMAT = "ernie-chat/1"  # the app's own export; any {"messages": [...]} or bare list of messages imports too
MAX_MESSAGES = 1000  # more turns than a context holds many times over; each is a row written to the history
CHARS_PER_TOKEN = 4  # a message this many times the context in characters surely does not fit it
MODEL_CONTEXT = 131072  # ERNIE-4.5-0.3B's own, when no engine runs yet to say its preset's
ROLES = ("system", "user", "assistant")


class ImportRefused(Refusal):
    """An import file that cannot become a chat; the text says what and how to fix it, in English as `str()` and in
    the chat's language by `in_language` (history/words/'s `import.` keys)."""


@dataclass
class Imported:
    turns: list[dict]  # {"role", "content"}: starting with a user; each assistant's answers the user before it
    settings: dict = field(default_factory=dict)  # the sidebar's values it brings (system prompt, sampling)
    title: str = ""
    dropped: list[Said] = field(default_factory=list)  # what the file held that was left out, said to the user


def as_json(turns: list[dict], model: str, preset: str, sampling: dict, system_prompt: str, title: str) -> str:
    messages = ([{"role": "system", "content": system_prompt}] if system_prompt.strip() else []) + [
        {"role": t["role"], "content": as_text(t) if t["role"] == "user" else t["content"]} for t in turns]
    return json.dumps({"format": FORMAT, "title": title, "model": model, "preset": preset, "sampling": sampling,
                       "messages": messages}, ensure_ascii=False, indent=2)


def as_markdown(turns: list[dict], model: str, preset: str, sampling: dict, system_prompt: str, title: str,
                lang: str | None = None) -> str:
    """The chat for reading, its headings in the language `lang` names (the chat's; English by default)."""
    def word(key: str) -> str:
        return say(f"export.{key}", lang)

    head = [f"# {title or word('untitled')}", "", f"- {word('model')}: `{model}`", f"- {word('preset')}: `{preset}`",
            f"- {word('sampling')}: " + ", ".join(f"{key} {value}" for key, value in sampling.items()
                                                  if value is not None)]
    if system_prompt.strip():
        head.append(f"- {word('system_prompt')}: {system_prompt.strip()}")
    body = [f"## {word('you') if t['role'] == 'user' else 'ERNIE'}\n\n"
            f"{as_text(t) if t['role'] == 'user' else t['content']}" for t in turns]
    return "\n\n".join(["\n".join(head), *body]) + "\n"


def as_zip(chats: list[tuple[str, str, str]]) -> bytes:
    """A zip archive of chats, each `(stem, markdown, json)` as `<stem>.md` and `<stem>.json`; two chats of one name
    get a number after it ("Kettle-2"), so no file is written over another."""
    taken: set[str] = set()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for stem, markdown, data in chats:
            unique, number = stem, 1
            while unique.lower() in taken:  # a case-blind file system would still write one over the other
                number += 1
                unique = f"{stem}-{number}"
            taken.add(unique.lower())
            archive.writestr(f"{unique}.md", markdown)
            archive.writestr(f"{unique}.json", data)
    return buffer.getvalue()


def parse(data: bytes, max_model_len: int) -> Imported:
    """A chat from an import file's bytes (JSON, or JSON Lines of messages); raises ImportRefused."""
    found = _loaded(data)
    messages = found.get("messages") if isinstance(found, dict) else found
    if not isinstance(messages, list) or not messages:
        raise ImportRefused("import.no_messages")
    if len(messages) > MAX_MESSAGES:
        raise ImportRefused("import.too_many", count=len(messages), most=MAX_MESSAGES)
    imported = Imported([])
    if isinstance(found, dict):
        _take_head(found, imported)
    for number, message in enumerate(messages, 1):
        role, content = _checked(number, message, max_model_len)
        if role == "system":
            if number != 1:
                raise ImportRefused("import.late_system", number=number)
            imported.settings["system_prompt"] = content
            continue
        previous = imported.turns[-1]["role"] if imported.turns else None
        if role == "assistant" and previous != "user":  # a reply is stored as the answer to the question before it
            raise ImportRefused("import.reply_in_a_row" if previous else "import.reply_first", number=number)
        imported.turns.append({"role": role, "content": content})
    if not imported.turns:
        raise ImportRefused("import.no_user")
    return imported


def _loaded(data: bytes):
    """The file's JSON; a file of one JSON value per line (JSON Lines, `.jsonl`) is read as a list of them."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ImportRefused("import.not_utf8", position=error.start + 1) from None
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
        raise ImportRefused("import.not_json", detail=error.msg, line=error.lineno, column=error.colno) from None
    except RecursionError:
        raise ImportRefused("import.too_deep") from None


def _take_head(found: dict, imported: Imported) -> None:
    """The title and the sampling settings of the app's own export; what cannot be taken is said in `dropped`."""
    title = found.get("title")
    if isinstance(title, str):
        imported.title = " ".join(title.split())[:200]
    elif title is not None:
        imported.dropped.append(Said("import.dropped.title"))
    sampling = found.get("sampling")
    if isinstance(sampling, dict):
        imported.settings = {k: v for k, v in sampling.items() if k in CHAT_SAMPLING}
    elif sampling is not None:
        imported.dropped.append(Said("import.dropped.sampling"))


def _checked(number: int, message, max_model_len: int) -> tuple[str, str]:
    """A message's role and text content, or ImportRefused naming it."""
    if not isinstance(message, dict):
        raise ImportRefused("import.not_object", number=number)
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        quoted = json.dumps(role, ensure_ascii=False)
        quoted = quoted if len(quoted) <= 40 else quoted[:40] + "…"  # a refusal quoting a huge value is unreadable
        raise ImportRefused("import.role", number=number, role=quoted)
    if isinstance(content, list):  # OpenAI's content parts: text only
        if any(not isinstance(part, dict) or part.get("type") != "text" for part in content):
            raise ImportRefused("import.not_text_part", number=number)
        if any(not isinstance(part.get("text"), str) for part in content):
            raise ImportRefused("import.text_not_string", number=number)
        content = "\n".join(part["text"] for part in content)
    if not isinstance(content, str):
        raise ImportRefused("import.no_content", number=number)
    if len(content) > CHARS_PER_TOKEN * max_model_len:
        raise ImportRefused("import.too_long", number=number, chars=len(content), tokens=max_model_len)
    return role, content
