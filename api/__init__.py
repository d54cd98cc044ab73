"""The OpenAI-compatible API on the chat server: vLLM's own serving app behind a gate. A client of engine/."""
