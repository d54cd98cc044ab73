"""The words of what went wrong: a hook that failed, and the engine's errors.

The engine's errors (engine/errors.py) are written in English, where the log and the API read them too. Each one
is said here again, as a template of its English text: `words.error_text` finds the template that the error's text
fits, and fills the Chinese one with the values it found (tests/test_words.py makes each error and checks that its
text fits). An error whose text fits none (one raised with a text of its own: a setting from the environment, a
start that failed for a reason no class names) is shown as the engine wrote it.
"""

from engine.errors import OTHER_SOURCES

OTHER_SOURCES_ZH = ("Hugging Face 镜像站（HF_ENDPOINT=https://hf-mirror.com）、ModelScope（CHAT_MODEL_SOURCE="
                    "modelscope），或你下载过一次的文件夹（CHAT_MODEL=/path/to/the/folder，或用 CHAT_DOWNLOAD_DIR "
                    "指向它的缓存位置）。")
TO_CPU = ("`CHAT_VARIANT=cpu bash scripts/setup.sh`, then CHAT_PRESET=cpu.",
          "`CHAT_VARIANT=cpu bash scripts/setup.sh`，然后设置 CHAT_PRESET=cpu。")

TEXTS = {
    "failed": ("Something went wrong: {what} failed ({error}), so it was not done. Send it again; if this repeats, the "
               "server's log has the details.",
               "出错了：{what}失败（{error}），因此没有完成。请重新发送；如果反复出现，服务器日志里有详细信息。"),
    "doing.opening the chat": ("opening the chat", "打开对话"),
    "doing.reopening the chat": ("reopening the chat", "重新打开对话"),
    "doing.answering your message": ("answering your message", "回答你的消息"),
    "doing.starting the engine again": ("starting the engine again", "重新启动引擎"),
    "doing.continuing the reply": ("continuing the reply", "继续生成回复"),
    "doing.regenerating the reply": ("regenerating the reply", "重新生成回复"),
    "doing.changing the settings": ("changing the settings", "修改设置"),
    "doing.stopping the reply": ("stopping the reply", "停止回复"),

    "error.ContextTooLongError": (
        "Your message (with the system prompt) needs {prompt_tokens} tokens, but only {budget} fit (context "
        "{max_model_len} minus {max_tokens} for the reply). Shorten the message, lower 'max new tokens', or pick a "
        "preset with a longer context.",
        "你的消息（连同系统提示词）需要 {prompt_tokens} 个 token，但只放得下 {budget} 个（上下文 {max_model_len} "
        "减去留给回复的 {max_tokens}）。请缩短消息、调低“最大新 token 数”，或选择上下文更长的预设。"),
    "error.ReplyFillsContextError": (
        "This reply cannot go on: with its question it already takes {tokens} tokens, and the context holds "
        "{max_model_len}. Ask for the rest in a new message (the oldest turns then make room), or pick a preset with "
        "a longer context.",
        "这条回复无法继续：连同它的问题已占用 {tokens} 个 token，而上下文只能容纳 {max_model_len} 个。请在新消息里"
        "让模型接着写（最早的对话会让出空间），或选择上下文更长的预设。"),
    "error.UnknownPresetError": ("Unknown memory preset '{name}'. Choose one of: {valid}.",
                                 "未知的显存预设“{name}”。请从以下预设中选择：{valid}。"),
    "error.OutOfMemoryError": ("Not enough memory to start the '{preset}' preset ({detail}). Try the '{smaller}' "
                               "preset, or close other programs that use the GPU.",
                               "显存不足，无法启动“{preset}”预设（{detail}）。请试试“{smaller}”预设，或关闭其他"
                               "占用 GPU 的程序。"),
    "error.OutOfMemoryError.smallest": (
        "Not enough memory to start the '{preset}' preset ({detail}). Close other programs that use the GPU "
        "(browsers, games, other models) and try again, or run on the processor: " + TO_CPU[0],
        "显存不足，无法启动“{preset}”预设（{detail}）。请关闭其他占用 GPU 的程序（浏览器、游戏、其他模型）后重试，"
        "或改在处理器上运行：" + TO_CPU[1]),
    "error.ModelFolderMissingError": (
        "There is no model folder at '{model}' (CHAT_MODEL names a local folder when it is a path). Check the path "
        "(the folder holds config.json, the tokenizer and the weights), or set CHAT_MODEL to a hub id, e.g. "
        "CHAT_MODEL=baidu/ERNIE-4.5-0.3B-PT, to download the model.",
        "“{model}”处没有模型文件夹（CHAT_MODEL 是路径时，指的是本地文件夹）。请检查路径（文件夹里应有 config.json、"
        "分词器和权重），或把 CHAT_MODEL 设为模型库的 id（例如 CHAT_MODEL=baidu/ERNIE-4.5-0.3B-PT）来下载模型。"),
    "error.ModelNotFoundError": (
        "Model '{model}' could not be found or downloaded ({detail}). Check your network, or download through "
        "another way: " + OTHER_SOURCES + " To try the app offline: `.venv/bin/python scripts/make_tiny_model.py`, "
        "then CHAT_MODEL=models/tiny-ernie.",
        "找不到也无法下载模型“{model}”（{detail}）。请检查网络，或换一种方式下载：" + OTHER_SOURCES_ZH +
        "想离线试用本应用：运行 `.venv/bin/python scripts/make_tiny_model.py`，然后设置 "
        "CHAT_MODEL=models/tiny-ernie。"),
    "error.DownloadError": (
        "The download of '{model}' from {source} stopped at {done} of {total} MB ({detail}). Check your network, "
        "then press Try again: the download continues where it stopped. Other ways: " + OTHER_SOURCES,
        "从 {source} 下载“{model}”在 {done} / {total} MB 处中断（{detail}）。请检查网络，然后点“重试”：下载会从中断处"
        "继续。其他方式：" + OTHER_SOURCES_ZH),
    "error.DownloadError.unsized": (
        "The download of '{model}' from {source} stopped ({detail}). Check your network, then press Try again: the "
        "download continues where it stopped. Other ways: " + OTHER_SOURCES,
        "从 {source} 下载“{model}”中断了（{detail}）。请检查网络，然后点“重试”：下载会从中断处继续。其他方式："
        + OTHER_SOURCES_ZH),
    "error.GpuDriverError": (
        "The NVIDIA driver cannot run this build of vLLM ({detail}). Update the NVIDIA driver to version 580 or "
        "newer (vLLM's CUDA 13 build needs it), or run on the processor: " + TO_CPU[0],
        "NVIDIA 驱动无法运行这个版本的 vLLM（{detail}）。请把 NVIDIA 驱动升级到 580 或更高版本（vLLM 的 CUDA 13 版本"
        "需要它），或改在处理器上运行：" + TO_CPU[1]),
    "error.UnsupportedGpuError": (
        "This GPU is too old for vLLM's CUDA 13 build ({detail}); it needs compute capability 7.5 or newer. Run on "
        "the processor instead: " + TO_CPU[0],
        "这块 GPU 对 vLLM 的 CUDA 13 版本来说太旧了（{detail}）；它需要 7.5 或更高的计算能力。请改在处理器上运行："
        + TO_CPU[1]),
    "error.DamagedModelError": (
        "The files of model '{model}' are damaged or incomplete ({detail}). Download it again (delete the folder, or "
        "its entry in the Hugging Face cache, and restart), or set CHAT_MODEL to a good copy.",
        "模型“{model}”的文件已损坏或不完整（{detail}）。请重新下载（删除该文件夹，或它在 Hugging Face 缓存中的条目，"
        "然后重启），或把 CHAT_MODEL 指向一份完好的副本。"),
    "error.PresetSwitchError": ("Switching to the '{wanted}' preset failed: {reason} The '{kept}' preset keeps "
                                "running.", "切换到“{wanted}”预设失败：{reason} “{kept}”预设继续运行。"),
    "error.RemoteEngineError": (
        "The vLLM server at {url} cannot be used ({detail}). Check that it runs and that CHAT_ENGINE_URL points at "
        "it; the app keeps checking every few seconds, so send your message again once it is back.",
        "无法使用位于 {url} 的 vLLM 服务器（{detail}）。请确认它在运行，并且 CHAT_ENGINE_URL 指向它；本应用每隔几秒"
        "会再检查一次，它恢复后请重新发送消息。"),
    "error.EngineDiedError": ("The model engine stopped unexpectedly ({detail}). It restarts by itself: send your "
                              "message again.", "模型引擎意外停止（{detail}）。它会自行重启：请重新发送你的消息。"),
    "error.NoGpuError": ("The '{preset}' preset needs an NVIDIA GPU, but none is visible (NVML found no device). "
                         "Install the NVIDIA driver, or choose the 'cpu' preset (CHAT_PRESET=cpu) to run on the "
                         "processor.",
                         "“{preset}”预设需要 NVIDIA GPU，但没有检测到（NVML 未找到设备）。请安装 NVIDIA 驱动，或选择"
                         "“cpu”预设（CHAT_PRESET=cpu）在处理器上运行。"),
}
