"""Chat history to prompt tokens: the model's chat template, stop tokens and the context budget.

The prompt must leave room for the reply: it may use `max_model_len` minus the
reply reserve. When the history does not fit, the oldest turns go first (the
system prompt and the newest message always stay) and the caller learns how many
messages were dropped. A newest message that cannot fit on its own is an error
naming both sizes.
"""

from dataclasses import dataclass

from engine.errors import ContextTooLongError

END_OF_SENTENCE = "<|end_of_sentence|>"
ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Prompt:
    token_ids: list[int]
    dropped_messages: int
    max_tokens: int  # the reply's limit: what was asked, capped by the room left


def stop_token_ids(tokenizer) -> list[int]:
    """ERNIE ends a turn with <|end_of_sentence|>; stop on it as well as on eos."""
    ids = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids(END_OF_SENTENCE)}
    return sorted(i for i in ids if isinstance(i, int) and i != tokenizer.unk_token_id)


def _render(tokenizer, system_prompt: str, messages: list[dict]) -> list[int]:
    turns = ([{"role": "system", "content": system_prompt}] if system_prompt.strip() else []) + messages
    text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    return tokenizer.encode(text, add_special_tokens=False)


def _turn_starts(messages: list[dict]) -> list[int]:
    """Where each user turn begins: history is only ever cut there."""
    return [i for i, m in enumerate(messages) if m["role"] == "user"]


def build_prompt(tokenizer, system_prompt: str, messages: list[dict],
                 max_model_len: int, max_tokens: int) -> Prompt:
    """Render `messages` (oldest first, ending with the user's) to fit the context."""
    return fit_prompt(lambda turns: _render(tokenizer, system_prompt, turns), messages, max_model_len, max_tokens)


def fit_prompt(render, messages: list[dict], max_model_len: int, max_tokens: int) -> Prompt:
    """The newest turns of `messages` that fit, with `render(turns) -> token ids` (a local tokenizer or a server's)."""
    if not messages or messages[-1]["role"] != "user":
        raise ValueError("the chat must end with a user message")
    if any(m["role"] not in ROLES for m in messages):
        raise ValueError(f"message roles must be one of {ROLES}")
    reserve = min(max_tokens, max_model_len // 2)
    budget = max_model_len - reserve
    starts = _turn_starts(messages)
    whole = render(messages)
    if len(whole) <= budget:  # the usual case, one render: a chat's whole history is rendered per message
        return Prompt(whole, 0, min(max_tokens, max_model_len - len(whole)))
    # Binary search for the earliest turn to keep: fewer turns never means more tokens.
    low, high = 1, len(starts) - 1
    best = None
    while low <= high:
        mid = (low + high) // 2
        ids = render(messages[starts[mid]:])
        if len(ids) <= budget:
            best, high = (mid, ids), mid - 1
        else:
            low = mid + 1
    if best is None:
        size = len(render(messages[starts[-1]:]))
        raise ContextTooLongError(size, budget, max_model_len, reserve)
    keep_from, ids = best
    room = max_model_len - len(ids)
    return Prompt(ids, starts[keep_from], min(max_tokens, room))
