"""The reply's token ids turned into text, in our process, in as few calls as the engine's outputs allow.

vLLM can detokenize every token as it arrives (one call into the tokenizer per token per chat: a
quarter of the chat server's time at 32 chats on the H200). We ask it for token ids only and decode
each output it hands us: when the server keeps up that is one token per call, as before; when it
falls behind, vLLM merges a chat's pending tokens into one output and one call decodes them all.
The decoding itself is the tokenizer library's own incremental decoder, the one vLLM uses.
"""

from tokenizers.decoders import DecodeStream


class ReplyText:
    def __init__(self, tokenizer, prompt_ids: list[int]):
        self._tokenizer = tokenizer.backend_tokenizer  # the fast (Rust) tokenizer under transformers'
        # seeded with the prompt, so the first word of the reply is spaced as the model meant it
        self._stream = DecodeStream(ids=prompt_ids, skip_special_tokens=True)

    def add(self, token_ids) -> str:
        """The text the new tokens complete ("" while a character spans tokens still to come)."""
        if not token_ids:
            return ""
        try:
            return self._stream.step(self._tokenizer, list(token_ids)) or ""
        except Exception:  # a tokenizer that produced invalid UTF-8 on the way: go on from here
            self._stream = DecodeStream(skip_special_tokens=True)
            return self._stream.step(self._tokenizer, list(token_ids)) or ""
