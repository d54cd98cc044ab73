"""The words of what went wrong: a hook that failed, and the engine's errors (templates of engine/errors.py's English,
which `words.again` fits an error's text to), in Simplified Chinese."""

OTHER_SOURCES = ("Hugging Face 镜像站（HF_ENDPOINT=https://hf-mirror.com）、ModelScope（CHAT_MODEL_SOURCE="
                 "modelscope），或你下载过一次的文件夹（CHAT_MODEL=/path/to/the/folder，或用 CHAT_DOWNLOAD_DIR "
                 "指向它的缓存位置）。")
TO_CPU = "`CHAT_VARIANT=cpu bash scripts/setup.sh`，然后设置 CHAT_PRESET=cpu。"

TEXTS = {
    "failed": "出错了：{what}失败（{error}），因此没有完成。请重新发送；如果反复出现，服务器日志里有详细信息。",
    "doing.opening the chat": "打开对话",
    "doing.reopening the chat": "重新打开对话",
    "doing.answering your message": "回答你的消息",
    "doing.starting the engine again": "重新启动引擎",
    "doing.continuing the reply": "继续生成回复",
    "doing.regenerating the reply": "重新生成回复",
    "doing.changing the settings": "修改设置",
    "doing.stopping the reply": "停止回复",

    "error.ContextTooLongError": ("你的消息（连同系统提示词）需要 {prompt_tokens} 个 token，但只放得下 {budget} "
                                  "个（上下文 {max_model_len} 减去留给回复的 {max_tokens}）。请缩短消息、调低“最大新 "
                                  "token 数”，或选择上下文更长的预设。"),
    "error.ReplyFillsContextError": ("这条回复无法继续：连同它的问题已占用 {tokens} 个 token，而上下文只能容纳 "
                                     "{max_model_len} 个。请在新消息里让模型接着写（最早的对话会让出空间），或选择上"
                                     "下文更长的预设。"),
    "error.UnknownPresetError": "未知的显存预设“{name}”。请从以下预设中选择：{valid}。",
    "error.OutOfMemoryError": ("显存不足，无法启动“{preset}”预设（{detail}）。请试试“{smaller}”预设，或关闭其他占用 "
                               "GPU 的程序。"),
    "error.OutOfMemoryError.smallest": (
        "显存不足，无法启动“{preset}”预设（{detail}）。请关闭其他占用 GPU 的程序（浏览器、游戏、其他模型）"
        "后重试，或改在处理器上运行：" + TO_CPU),
    "error.ModelFolderMissingError": ("“{model}”处没有模型文件夹（CHAT_MODEL "
                                      "是路径时，指的是本地文件夹）。请检查路径（文件夹里应有 "
                                      "config.json、分词器和权重），或把 CHAT_MODEL 设为模型库的 id（例如 "
                                      "CHAT_MODEL=baidu/ERNIE-4.5-0.3B-PT）来下载模型。"),
    "error.ModelNotFoundError": (
        "找不到也无法下载模型“{model}”（{detail}）。请检查网络，或换一种方式下载：" + OTHER_SOURCES +
        "想离线试用本应用：运行 `.venv/bin/python scripts/make_tiny_model.py`，然后设置 "
        "CHAT_MODEL=models/tiny-ernie。"),
    "error.DownloadError": (
        "从 {source} 下载“{model}”在 {done} / {total} MB 处中断（{detail}）。请检查网络，然后点“重试”："
        "下载会从中断处继续。其他方式：" + OTHER_SOURCES),
    "error.DownloadError.unsized": (
        "从 {source} 下载“{model}”中断了（{detail}）。请检查网络，然后点“重试”：下载会从中断处继续。"
        "其他方式：" + OTHER_SOURCES),
    "error.GpuDriverError": (
        "NVIDIA 驱动无法运行这个版本的 vLLM（{detail}）。请把 NVIDIA 驱动升级到 580 或更高版本（vLLM 的 CUDA 13 "
        "版本需要它），或改在处理器上运行：" + TO_CPU),
    "error.UnsupportedGpuError": (
        "这块 GPU 对 vLLM 的 CUDA 13 版本来说太旧了（{detail}）；它需要 7.5 或更高的计算能力。"
        "请改在处理器上运行：" + TO_CPU),
    "error.DamagedModelError": ("模型“{model}”的文件已损坏或不完整（{detail}）。请重新下载（删除该文件夹，或它在 "
                                "Hugging Face 缓存中的条目，然后重启），或把 CHAT_MODEL 指向一份完好的副本。"),
    "error.PresetSwitchError": "切换到“{wanted}”预设失败：{reason} “{kept}”预设继续运行。",
    "error.RemoteEngineError": ("无法使用位于 {url} 的 vLLM 服务器（{detail}）。请确认它在运行，并且 CHAT_ENGINE_URL "
                                "指向它；本应用每隔几秒会再检查一次，它恢复后请重新发送消息。"),
    "error.EngineDiedError": "模型引擎意外停止（{detail}）。它会自行重启：请重新发送你的消息。",
    "error.NoGpuError": ("“{preset}”预设需要 NVIDIA GPU，但没有检测到（NVML 未找到设备）。请安装 NVIDIA "
                         "驱动，或选择“cpu”预设（CHAT_PRESET=cpu）在处理器上运行。"),
}
