"""A stored chat back into the prompt's turns: each answered question (with its attachments) and its reply, and an
imported question that its file held no answer to (ui/chat_files.py marks it), where the file had it."""

import json


def _meta(step: dict) -> dict:
    meta = step.get("metadata") or {}
    return json.loads(meta or "{}") if isinstance(meta, str) else meta


def turns_from(thread: dict, attached: dict[str, list[dict]]) -> list[dict]:
    """The prompt's turns from a stored thread: each answered user message (with its attachments, by message id,
    from `attachments.stored`) and its reply's plain text. A question asked here that got no reply (refused, or
    stopped before a word) stays out, as it was out of the chat's prompt; an imported one stays in."""
    steps = thread.get("steps") or []
    asked = {step["id"]: step for step in steps if step.get("type") == "user_message"}
    answered = {_meta(step).get("for") for step in steps if step.get("type") == "assistant_message"
                and "answer" in _meta(step)}
    turns = []
    for step in steps:
        meta = _meta(step)
        question = asked.get(meta.get("for", ""))
        if step.get("type") == "user_message" and meta.get("imported") and step["id"] not in answered:
            turns.append(_question(step, attached))
        if step.get("type") == "assistant_message" and "answer" in meta and question is not None:
            turns += [_question(question, attached), {"role": "assistant", "content": meta["answer"]}]
    return turns


def _question(step: dict, attached: dict[str, list[dict]]) -> dict:
    turn = {"id": step["id"], "role": "user", "content": step.get("output") or ""}
    if step["id"] in attached:
        turn["attachments"] = attached[step["id"]]
    return turn
