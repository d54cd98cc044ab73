"""Chat history to prompt tokens: the model's chat template, attachments, stop tokens and the context budget.

The prompt must leave room for the reply: it may use `max_model_len` minus the
reply reserve. When the history does not fit, the oldest turns go first (the
system prompt and the newest message always stay) and the caller learns how many
messages were dropped. A user message may carry attachments (`{"name", "text"}`),
each put before the user's words as a fenced block headed by its name. When the
newest message with its attachments does not fit on its own, the attachments'
text is cut (the typed words stay whole) and the caller learns how much of each
was left out. A newest message whose words cannot fit on their own is an error
naming both sizes.

With `continue_reply` the messages end with a partial assistant reply instead: the template's continuation of
that final message (no end of turn, no new "Assistant: "), so the model goes on from where the reply stopped.
The reply and its question are kept whole. When they do not fit beside the reply's reserve, the history goes
and the continuation gets the room the context has left (a user who pressed Continue asked for what fits, not
for the reserve); a reply that already fills the context is an error saying so.
"""

import re
from dataclasses import dataclass

from engine.errors import ContextTooLongError, ReplyFillsContextError
from engine.reports import Cut

END_OF_SENTENCE = "<|end_of_sentence|>"
ROLES = ("user", "assistant")
BACKTICKS = re.compile(r"`+")
LINE_END_WITHIN = 0.9  # a cut ends at a line's end when one lies in the last tenth of what fits


@dataclass(frozen=True)
class Prompt:
    token_ids: list[int]
    dropped_messages: int
    max_tokens: int  # the reply's limit: what was asked, capped by the room left
    cut: tuple[Cut, ...] = ()  # attachments of the newest message that were cut to fit
    messages: tuple[dict, ...] = ()  # the turns kept, as plain {"role", "content"}: what a server is sent


def stop_token_ids(tokenizer) -> list[int]:
    """ERNIE ends a turn with <|end_of_sentence|>; stop on it as well as on eos."""
    ids = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids(END_OF_SENTENCE)}
    return sorted(i for i in ids if isinstance(i, int) and i != tokenizer.unk_token_id)


def as_text(message: dict) -> str:
    """A message's content with its attachments before the words, each fenced by more backticks than it holds."""
    blocks = []
    for attached in message.get("attachments") or ():
        text = attached["text"]
        fence = "`" * max(3, 1 + max((len(run) for run in BACKTICKS.findall(text)), default=0))
        blocks.append(f"{attached['name']}\n{fence}\n{text}\n{fence}")
    return "\n\n".join([*blocks, message["content"]] if message["content"].strip() else blocks)


def plain(messages: list[dict]) -> list[dict]:
    """Messages as the chat template takes them: role and content, attachments written into the content."""
    return [{"role": m["role"], "content": as_text(m)} for m in messages]


def _render(tokenizer, system_prompt: str, messages: list[dict], continue_reply: bool = False) -> list[int]:
    turns = ([{"role": "system", "content": system_prompt}] if system_prompt.strip() else []) + messages
    text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=not continue_reply,
                                         continue_final_message=continue_reply)
    return tokenizer.encode(text, add_special_tokens=False)


def _turn_starts(messages: list[dict]) -> list[int]:
    """Where each user turn begins: history is only ever cut there."""
    return [i for i, m in enumerate(messages) if m["role"] == "user"]


def build_prompt(tokenizer, system_prompt: str, messages: list[dict],
                 max_model_len: int, max_tokens: int, continue_reply: bool = False) -> Prompt:
    """Render `messages` (oldest first, ending with the user's, or with the reply to continue) to fit the context."""
    return fit_prompt(lambda turns: _render(tokenizer, system_prompt, turns, continue_reply), messages,
                      max_model_len, max_tokens, continue_reply)


def fit_prompt(render, messages: list[dict], max_model_len: int, max_tokens: int,
               continue_reply: bool = False) -> Prompt:
    """The newest turns of `messages` that fit, with `render(turns) -> token ids` (a local tokenizer or a server's);
    `continue_reply`: the last message is a partial reply, kept whole with its question (nothing of them is cut)."""
    last = "assistant" if continue_reply else "user"
    if not messages or messages[-1]["role"] != last or (continue_reply and len(messages) < 2):
        raise ValueError(f"the chat must end with a{'' if continue_reply else ' user'} message"
                         f"{' and the reply to continue' if continue_reply else ''}")
    if any(m["role"] not in ROLES for m in messages):
        raise ValueError(f"message roles must be one of {ROLES}")
    reserve = min(max_tokens, max_model_len // 2)
    budget = max_model_len - reserve
    turns = plain(messages)
    whole = render(turns)
    if len(whole) <= budget:  # the usual case, one render: a chat's whole history is rendered per message
        return Prompt(whole, 0, min(max_tokens, max_model_len - len(whole)), messages=tuple(turns))
    attached = _Attached(render, messages[-1]) if messages[-1].get("attachments") and not continue_reply else None
    if attached is None or attached.alone <= budget:
        kept = _newest_that_fit(render, turns, budget)
        if kept is not None:
            start, ids = kept
            return Prompt(ids, start, min(max_tokens, max_model_len - len(ids)), messages=tuple(turns[start:]))
        if continue_reply:
            return _continue_in_what_is_left(render, turns, max_model_len, max_tokens)
        if attached is None:
            raise ContextTooLongError(len(render(turns[-1:])), budget, max_model_len, reserve)
    if attached.base > budget:
        raise ContextTooLongError(attached.base, budget, max_model_len, reserve)
    newest, ids, cut = attached.cut_to(budget)
    return Prompt(ids, len(messages) - 1, min(max_tokens, max_model_len - len(ids)), cut, (newest,))


def _continue_in_what_is_left(render, turns: list[dict], max_model_len: int, max_tokens: int) -> Prompt:
    """The reply to continue with its question alone, its limit what the context has left after them."""
    ids = render(turns[-2:])
    if len(ids) >= max_model_len:
        raise ReplyFillsContextError(len(ids), max_model_len)
    return Prompt(ids, len(turns) - 2, min(max_tokens, max_model_len - len(ids)), messages=tuple(turns[-2:]))


def _newest_that_fit(render, turns: list[dict], budget: int) -> tuple[int, list[int]] | None:
    """(index of the earliest turn kept, token ids) of the most turns that fit; None when not even the newest does.

    A binary search over where user turns begin: fewer turns never means more tokens."""
    starts = _turn_starts(turns)
    low, high = 1, len(starts) - 1
    best = None
    while low <= high:
        mid = (low + high) // 2
        ids = render(turns[starts[mid]:])
        if len(ids) <= budget:
            best, high = (starts[mid], ids), mid - 1
        else:
            low = mid + 1
    return best


class _Attached:
    """The newest message's attachments, measured by what each adds to the prompt: only `render` is asked
    (a server's tokenizer works too), once per attachment at its whole size."""

    def __init__(self, render, message: dict):
        self.render, self.message, self.files = render, message, message["attachments"]
        none = [""] * len(self.files)
        self.base = self.size(none)  # the words and each attachment's name, without any text
        self.totals = [self.size(self._with(none, i, f["text"])) - self.base for i, f in enumerate(self.files)]
        self.alone = self.base + sum(self.totals)  # the message's size with no history

    def turn(self, texts: list[str]) -> dict:
        attached = [{"name": f["name"], "text": t} for f, t in zip(self.files, texts)]
        return plain([{**self.message, "attachments": attached}])[0]

    def size(self, texts: list[str]) -> int:
        return len(self.render([self.turn(texts)]))

    @staticmethod
    def _with(texts: list[str], i: int, text: str) -> list[str]:
        return texts[:i] + [text] + texts[i + 1:]

    def cut_to(self, budget: int) -> tuple[dict, list[int], tuple[Cut, ...]]:
        """The message with its attachments cut to what fits beside its words: (plain turn, its token ids, cuts).

        Each attachment gets an equal share of the room; what a smaller one leaves goes to the others."""
        count = len(self.files)
        shares, room = [0] * count, budget - self.base
        for placed, i in enumerate(sorted(range(count), key=self.totals.__getitem__)):  # smallest first
            shares[i] = min(self.totals[i], room // (count - placed))
            room -= shares[i]
        texts, kept = [""] * count, [0] * count
        for i, f in enumerate(self.files):
            texts[i], kept[i] = self._prefix(i, f["text"], self.totals[i], shares[i])
        while (over := self.size(texts) - budget) > 0:  # the blocks' edges may tokenize apart: take from the largest
            i = max(range(count), key=kept.__getitem__)
            texts[i], kept[i] = self._prefix(i, texts[i], kept[i], kept[i] - over)
        newest = self.turn(texts)
        cut = tuple(Cut(i, f["name"], len(texts[i]), self.totals[i] - kept[i], self.totals[i])
                    for i, f in enumerate(self.files) if kept[i] < self.totals[i])
        return newest, self.render([newest]), cut

    def _prefix(self, i: int, text: str, tokens: int, share: int) -> tuple[str, int]:
        """The longest start of attachment `i`'s `text` (of `tokens`) found within `share` tokens, and its size.

        Tokens grow with characters almost in proportion: guess the length from the ratio, then shrink by it."""
        keep, used = len(text), tokens
        while used > share and keep > 0:
            keep = min(keep - 1, keep * max(share, 0) // used)
            line_end = text.rfind("\n", 0, keep)
            if line_end > keep * LINE_END_WITHIN:  # a cut at a line's end reads better (code, CSV)
                keep = line_end
            used = self.size(self._with([""] * len(self.files), i, text[:keep])) - self.base if keep > 0 else 0
        return text[:keep], used
