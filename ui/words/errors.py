"""The words of what went wrong: a hook that failed, and the engine's errors that a chat meets while chatting.

The engine's errors (engine/errors.py) are written in English, where the log and the API read them too; those a
chat meets in the course of chatting are said again here in the chat's language, keyed by their class and filled
from the values each keeps. The others (a start that failed: a download, the driver, memory) stay in English:
their details are the engine's and the tools' own words.
"""

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
    "error.EngineDiedError": ("The model engine stopped unexpectedly ({detail}). It restarts by itself: send your "
                              "message again.", "模型引擎意外停止（{detail}）。它会自行重启：请重新发送你的消息。"),
    "error.NoGpuError": ("The '{preset}' preset needs an NVIDIA GPU, but none is visible (NVML found no device). "
                         "Install the NVIDIA driver, or choose the 'cpu' preset (CHAT_PRESET=cpu) to run on the "
                         "processor.",
                         "“{preset}”预设需要 NVIDIA GPU，但没有检测到（NVML 未找到设备）。请安装 NVIDIA 驱动，或选择"
                         "“cpu”预设（CHAT_PRESET=cpu）在处理器上运行。"),
}
