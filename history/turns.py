"""A stored chat back into the prompt's turns: each answered question (with its attachments) and its reply."""

import json


def turns_from(thread: dict, attached: dict[str, list[dict]]) -> list[dict]:
    """The prompt's turns from a stored thread: each answered user message (with its attachments, by message id,
    from `attachments.stored`) and its reply's plain text."""
    steps = thread.get("steps") or []
    asked = {step["id"]: step for step in steps if step.get("type") == "user_message"}
    turns = []
    for step in steps:
        meta = step.get("metadata") or {}
        if isinstance(meta, str):
            meta = json.loads(meta or "{}")
        question = asked.get(meta.get("for", ""))
        if step.get("type") == "assistant_message" and "answer" in meta and question is not None:
            turn = {"id": question["id"], "role": "user", "content": question.get("output") or ""}
            if question["id"] in attached:
                turn["attachments"] = attached[question["id"]]
            turns += [turn, {"role": "assistant", "content": meta["answer"]}]
    return turns
