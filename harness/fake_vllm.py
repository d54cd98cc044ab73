"""A `vllm serve` imitated in memory, for the remote backend's fast tests: an `httpx.MockTransport` answering the
routes engine/remote.py uses (/v1/models, a streamed /v1/chat/completions with its usage, /metrics, /tokenize),
in the shapes vLLM sends them. The slow tier runs the same tests against a real `vllm serve`.
"""

import asyncio
import json

import httpx

MODEL = "fake/ernie"


class FakeVllm:
    """`transport` goes to RemoteEngine; `reply_tokens` words per reply, one every `token_s` seconds."""

    def __init__(self, reply_tokens: int = 5, token_s: float = 0.0, max_model_len: int = 4096):
        self.reply_tokens, self.token_s, self.max_model_len = reply_tokens, token_s, max_model_len
        self.requests: list[dict] = []  # the bodies of the chat completions asked
        self.running = 0
        self.closed_early = 0  # streams the client closed before their end (an abort)
        self.transport = httpx.MockTransport(self._answer)

    async def _answer(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [
                {"id": MODEL, "object": "model", "max_model_len": self.max_model_len}]})
        if path == "/metrics":
            return httpx.Response(200, text=f"# TYPE vllm:num_requests_running gauge\n"
                                            f'vllm:num_requests_running{{model_name="{MODEL}"}} {self.running}\n')
        if path == "/tokenize":
            body = json.loads(request.content)
            words = len(body["prompt"].split()) if "prompt" in body else \
                sum(len(m["content"].split()) + 4 for m in body["messages"])
            return httpx.Response(200, json={"tokens": list(range(words)), "count": words})
        if path == "/v1/chat/completions":
            body = json.loads(request.content)
            self.requests.append(body)
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=self._events(body))
        return httpx.Response(404, json={"detail": "Not Found"})

    async def _events(self, body: dict):
        """The server-sent events of one streamed reply, as vLLM writes them."""
        tokens = min(self.reply_tokens, body.get("max_tokens") or self.reply_tokens)
        prompt = sum(len(m["content"].split()) + 4 for m in body["messages"])
        self.running += 1
        finished = False
        try:
            for n in range(tokens):
                await asyncio.sleep(self.token_s)
                last = n == tokens - 1
                reason = ("length" if tokens == body.get("max_tokens") else "stop") if last else None
                yield _event({"choices": [{"index": 0, "delta": {"content": f" word{n}"}, "finish_reason": reason}]})
            yield _event({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": tokens,
                                                   "total_tokens": prompt + tokens}})
            yield b"data: [DONE]\n\n"
            finished = True
        finally:
            self.running -= 1
            self.closed_early += not finished


def _event(chunk: dict) -> bytes:
    return f"data: {json.dumps({'id': 'chatcmpl-1', 'object': 'chat.completion.chunk', **chunk})}\n\n".encode()
