"""The words of what went wrong: a hook that failed, and the engine's errors (templates of engine/errors.py's English,
which `words.again` fits an error's text to), in English."""

from engine.errors import OTHER_SOURCES

TO_CPU = "`CHAT_VARIANT=cpu bash scripts/setup.sh`, then CHAT_PRESET=cpu."

TEXTS = {
    "failed": ("Something went wrong: {what} failed ({error}), so it was not done. Send it again; if this repeats, "
               "the server's log has the details."),
    "doing.opening the chat": "opening the chat",
    "doing.reopening the chat": "reopening the chat",
    "doing.answering your message": "answering your message",
    "doing.starting the engine again": "starting the engine again",
    "doing.continuing the reply": "continuing the reply",
    "doing.regenerating the reply": "regenerating the reply",
    "doing.changing the settings": "changing the settings",
    "doing.stopping the reply": "stopping the reply",

    "error.ContextTooLongError": ("Your message (with the system prompt) needs {prompt_tokens} tokens, but only "
                                  "{budget} fit (context {max_model_len} minus {max_tokens} for the reply). Shorten "
                                  "the message, lower 'max new tokens', or pick a preset with a longer context."),
    "error.ReplyFillsContextError": ("This reply cannot go on: with its question it already takes {tokens} tokens, "
                                     "and the context holds {max_model_len}. Ask for the rest in a new message (the "
                                     "oldest turns then make room), or pick a preset with a longer context."),
    "error.UnknownPresetError": "Unknown memory preset '{name}'. Choose one of: {valid}.",
    "error.OutOfMemoryError": ("Not enough memory to start the '{preset}' preset ({detail}). Try the '{smaller}' "
                               "preset, or close other programs that use the GPU."),
    "error.OutOfMemoryError.smallest": (
        "Not enough memory to start the '{preset}' preset ({detail}). Close other programs that "
        "use the GPU (browsers, games, other models) and try again, or run on the processor: " + TO_CPU),
    "error.ModelFolderMissingError": ("There is no model folder at '{model}' (CHAT_MODEL names a local folder when "
                                      "it is a path). Check the path (the folder holds config.json, the tokenizer "
                                      "and the weights), or set CHAT_MODEL to a hub id, e.g. "
                                      "CHAT_MODEL=baidu/ERNIE-4.5-0.3B-PT, to download the model."),
    "error.ModelNotFoundError": (
        "Model '{model}' could not be found or downloaded ({detail}). Check your network, or "
        "download through another way: " + OTHER_SOURCES +
        " To try the app offline: `.venv/bin/python scripts/make_tiny_model.py`, then "
        "CHAT_MODEL=models/tiny-ernie."),
    "error.DownloadError": (
        "The download of '{model}' from {source} stopped at {done} of {total} MB ({detail}). Check "
        "your network, then press Try again: the download continues where it stopped. Other ways: " + OTHER_SOURCES),
    "error.DownloadError.unsized": (
        "The download of '{model}' from {source} stopped ({detail}). Check your network, then "
        "press Try again: the download continues where it stopped. Other ways: " + OTHER_SOURCES),
    "error.GpuDriverError": (
        "The NVIDIA driver cannot run this build of vLLM ({detail}). Update the NVIDIA driver to "
        "version 580 or newer (vLLM's CUDA 13 build needs it), or run on the processor: " + TO_CPU),
    "error.UnsupportedGpuError": (
        "This GPU is too old for vLLM's CUDA 13 build ({detail}); it needs compute capability 7.5 "
        "or newer. Run on the processor instead: " + TO_CPU),
    "error.DamagedModelError": ("The files of model '{model}' are damaged or incomplete ({detail}). Download it "
                                "again (delete the folder, or its entry in the Hugging Face cache, and restart), or "
                                "set CHAT_MODEL to a good copy."),
    "error.PresetSwitchError": "Switching to the '{wanted}' preset failed: {reason} The '{kept}' preset keeps running.",
    "error.RemoteEngineError": ("The vLLM server at {url} cannot be used ({detail}). Check that it runs and that "
                                "CHAT_ENGINE_URL points at it; the app keeps checking every few seconds, so send "
                                "your message again once it is back."),
    "error.EngineDiedError": ("The model engine stopped unexpectedly ({detail}). It restarts by itself: send your "
                              "message again."),
    "error.NoGpuError": ("The '{preset}' preset needs an NVIDIA GPU, but none is visible (NVML found no device). "
                         "Install the NVIDIA driver, or choose the 'cpu' preset (CHAT_PRESET=cpu) to run on the "
                         "processor."),
}
