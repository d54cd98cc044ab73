"""Everything that knows about vLLM, memory and prompts. Never imports chainlit."""
