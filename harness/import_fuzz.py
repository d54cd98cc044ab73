"""Import files for the fuzz of a chat's import (tests/test_import_checks.py, tests/test_bad_input_server.py): random
nesting, types, sizes and near misses of a well-formed chat, from a seeded `random.Random`."""

import json
import random

ROLES_SEEN = ("user", "assistant", "system", "tool", "developer", "")


def value(rng: random.Random, depth: int):
    kind = rng.choice(["str", "int", "float", "bool", "none", "list", "dict", "message", "huge"] if depth < 40
                      else ["str", "int", "none"])
    if kind == "str":
        return "".join(rng.choice("ab c\n\\\"{}[]<>!()*你\u200b") for _ in range(rng.randint(0, 30)))
    if kind == "int":
        return rng.choice([0, -1, 7, 2**63, 10**30])
    if kind == "float":
        return rng.choice([0.5, -1e308, 1e308, float("nan")])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "huge":
        return "z" * rng.choice([1, 20_000, 600_000])
    if kind == "message":
        return {"role": rng.choice(["user", "assistant", "system", "tool", 3, None]),
                "content": value(rng, depth + 1) if rng.random() < 0.5 else "text"}
    if kind == "list":
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    return {rng.choice(["messages", "title", "sampling", "role", "content", "type", "text", "temperature"]):
            value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def message(rng: random.Random, index: int) -> dict:
    """Most often a well-formed message of a chat that alternates (so that many files import), else a near miss."""
    role = ("user", "assistant")[index % 2] if rng.random() < 0.9 else rng.choice(ROLES_SEEN)
    text = value(rng, 5) if rng.random() < 0.1 else "".join(rng.choice("ab 你\n*[]") for _ in range(9))
    content = [{"type": "text", "text": text}] if rng.random() < 0.2 else text
    return {"role": role, "content": content}


def fuzzed_import(rng: random.Random) -> bytes:
    shape = rng.random()
    if shape < 0.1:
        return rng.choice([b"[", b"{"]) * rng.randint(1, 200_000)
    if shape < 0.2:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    if shape < 0.6:
        messages = [value(rng, 1) if rng.random() < 0.05 else message(rng, i) for i in range(rng.randint(0, 12))]
        head = {"title": value(rng, 1), "sampling": value(rng, 1)} if rng.random() < 0.5 else {}
        found = {**head, "messages": messages} if rng.random() < 0.7 else messages
    else:
        found = value(rng, 0)
    text = json.dumps(found, ensure_ascii=rng.random() < 0.5)
    if rng.random() < 0.2 and isinstance(found, list):
        text = "\n".join(json.dumps(item) for item in found)  # JSON Lines
    return text.encode()
