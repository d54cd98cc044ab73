"""The errors a user can meet, each with what happened and what to do about it.

Everything the engine layer raises on purpose is a `ChatError`; the UI shows
`str(error)`, so each message names the cause, the value and the fix (in English;
ui/words/errors.py says each again in the chat's language).
"""


# Where else the weights can come from, for users who cannot reach the Hugging Face hub (or reach it slowly).
OTHER_SOURCES = ("a hub mirror (HF_ENDPOINT=https://hf-mirror.com), ModelScope (CHAT_MODEL_SOURCE=modelscope), "
                 "or a folder you downloaded once (CHAT_MODEL=/path/to/the/folder, or CHAT_DOWNLOAD_DIR to where "
                 "it is cached).")


class ChatError(Exception):
    """A problem the user can act on: `problem` says what happened, `fix` what to do."""

    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem} {fix}")
        self.problem = problem
        self.fix = fix


class SettingsError(ChatError):
    """A setting from the environment or `.env` breaks its rule."""


class UnknownPresetError(ChatError):
    def __init__(self, name: str, valid: list[str]):
        super().__init__(
            f"Unknown memory preset '{name}'.",
            f"Choose one of: {', '.join(valid)}.",
        )


class NoGpuError(ChatError):
    def __init__(self, preset: str):
        super().__init__(
            f"The '{preset}' preset needs an NVIDIA GPU, but none is visible (NVML found no device).",
            "Install the NVIDIA driver, or choose the 'cpu' preset (CHAT_PRESET=cpu) to run on the processor.",
        )


class OutOfMemoryError(ChatError):
    def __init__(self, preset: str, detail: str, smaller: str | None):
        fix = (f"Try the '{smaller}' preset, or close other programs that use the GPU."
               if smaller else "Close other programs that use the GPU (browsers, games, other models) and try "
               "again, or run on the processor: `CHAT_VARIANT=cpu bash scripts/setup.sh`, then CHAT_PRESET=cpu.")
        super().__init__(f"Not enough memory to start the '{preset}' preset ({detail}).", fix)


class ModelNotFoundError(ChatError):
    def __init__(self, model: str, detail: str):
        super().__init__(
            f"Model '{model}' could not be found or downloaded ({detail}).",
            f"Check your network, or download through another way: {OTHER_SOURCES} To try the app offline: "
            "`.venv/bin/python scripts/make_tiny_model.py`, then CHAT_MODEL=models/tiny-ernie.",
        )


class ModelFolderMissingError(ModelNotFoundError):
    """CHAT_MODEL names a local folder (a path) that is not there: nothing to download, so no network advice."""

    def __init__(self, model: str):
        ChatError.__init__(
            self,
            f"There is no model folder at '{model}' (CHAT_MODEL names a local folder when it is a path).",
            "Check the path (the folder holds config.json, the tokenizer and the weights), or set CHAT_MODEL to a "
            "hub id, e.g. CHAT_MODEL=baidu/ERNIE-4.5-0.3B-PT, to download the model.",
        )
        self.model = model


class DownloadError(ChatError):
    def __init__(self, model: str, source: str, detail: str, done: int, total: int):
        where = f" at {done / 1e6:,.1f} of {total / 1e6:,.1f} MB" if total else ""
        super().__init__(
            f"The download of '{model}' from {source} stopped{where} ({detail}).",
            f"Check your network, then press Try again: the download continues where it stopped. "
            f"Other ways: {OTHER_SOURCES}",
        )


class GpuDriverError(ChatError):
    def __init__(self, detail: str):
        super().__init__(
            f"The NVIDIA driver cannot run this build of vLLM ({detail}).",
            "Update the NVIDIA driver to version 580 or newer (vLLM's CUDA 13 build needs it), or run on the "
            "processor: `CHAT_VARIANT=cpu bash scripts/setup.sh`, then CHAT_PRESET=cpu.",
        )


class UnsupportedGpuError(ChatError):
    def __init__(self, detail: str):
        super().__init__(
            f"This GPU is too old for vLLM's CUDA 13 build ({detail}); it needs compute capability 7.5 or newer.",
            "Run on the processor instead: `CHAT_VARIANT=cpu bash scripts/setup.sh`, then CHAT_PRESET=cpu.",
        )


class DamagedModelError(ChatError):
    def __init__(self, model: str, detail: str):
        super().__init__(
            f"The files of model '{model}' are damaged or incomplete ({detail}).",
            "Download it again (delete the folder, or its entry in the Hugging Face cache, and restart), "
            "or set CHAT_MODEL to a good copy.",
        )


class ContextTooLongError(ChatError):
    def __init__(self, prompt_tokens: int, budget: int, max_model_len: int, max_tokens: int):
        super().__init__(
            f"Your message (with the system prompt) needs {prompt_tokens} tokens, but only {budget} fit "
            f"(context {max_model_len} minus {max_tokens} for the reply).",
            "Shorten the message, lower 'max new tokens', or pick a preset with a longer context.",
        )
        self.prompt_tokens = prompt_tokens
        self.budget = budget


class ReplyFillsContextError(ChatError):
    """A reply to continue that, with its question, already takes the whole context: nothing is left to write in."""

    def __init__(self, tokens: int, max_model_len: int):
        super().__init__(
            f"This reply cannot go on: with its question it already takes {tokens} tokens, and the context holds "
            f"{max_model_len}.",
            "Ask for the rest in a new message (the oldest turns then make room), or pick a preset with a longer "
            "context.",
        )
        self.tokens = tokens


class EngineStartError(ChatError):
    """The engine could not start for a reason none of the specific errors covers."""


class EngineDiedError(ChatError):
    def __init__(self, detail: str):
        super().__init__(
            f"The model engine stopped unexpectedly ({detail}).",
            "It restarts by itself: send your message again.",
        )


class PresetSwitchError(ChatError):
    def __init__(self, wanted: str, kept: str, cause: ChatError | Exception):
        reason = cause.problem if isinstance(cause, ChatError) else str(cause)
        super().__init__(
            f"Switching to the '{wanted}' preset failed: {reason}",
            f"The '{kept}' preset keeps running.",
        )
        self.cause = cause


class RemoteEngineError(ChatError):
    def __init__(self, url: str, detail: str):
        super().__init__(
            f"The vLLM server at {url} cannot be used ({detail}).",
            "Check that it runs and that CHAT_ENGINE_URL points at it; the app keeps checking every few seconds, "
            "so send your message again once it is back.",
        )
