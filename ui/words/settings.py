"""The settings sidebar's words: its labels and descriptions, the memory presets, and why a change was refused."""

TEXTS = {
    "setting.preset": ("Memory preset", "显存预设"),
    "setting.preset.tip": ("Restarts the engine that every chat shares: replies pause for about 10 s on a GPU and "
                           "30-60 s on the processor. A preset that cannot run here is refused first.",
                           "会重启所有对话共用的引擎：在 GPU 上回复约暂停 10 秒，在处理器上约 30-60 秒。本机无法运行的"
                           "预设会先被拒绝。"),
    "setting.temperature": ("Temperature", "温度"),
    "setting.temperature.tip": ("0 always picks the likeliest word; higher is more varied.",
                                "0 总是选最可能的词；越高，回答越多样。"),
    "setting.top_p": ("Top p", "Top p（核采样）"),
    "setting.top_p.tip": ("Samples only from the likeliest words that together hold this much probability; 1 keeps "
                          "them all.", "只从合计概率达到该值的最可能的词中采样；1 表示全部保留。"),
    "setting.max_tokens": ("Max new tokens", "最大新 token 数"),
    "setting.max_tokens.tip": ("At most the context of the running preset.", "不超过当前预设的上下文长度。"),
    "setting.repetition_penalty": ("Repetition penalty", "重复惩罚"),
    "setting.repetition_penalty.tip": ("Above 1, words already in the chat are less likely to come again: a small "
                                       "model that repeats itself loops less at 1.1-1.3. 1 leaves them as they are.",
                                       "大于 1 时，对话中已出现的词更不容易再次出现：容易重复的小模型在 1.1-1.3 时"
                                       "更少打转。1 表示不做调整。"),
    "setting.system_prompt": ("System prompt", "系统提示词"),
    "setting.show_stats": ("Show what each reply cost", "显示每条回复的开销"),
    "setting.library": ("Answer from my library", "根据我的文档库回答"),
    "setting.library.tip": ("Each question is answered from the best passages of your documents (the Library "
                            "command adds them), with their sources. @name in a message picks documents for it.",
                            "每个问题都根据你文档中最相关的段落回答（用“文档库”命令添加文档），并注明出处。在消息里"
                            "写 @文档名 可指定要用的文档。"),
    "settings.reset_app": ("↺ The settings are back to the app's defaults (sampling and system prompt); the running "
                           "preset stays.", "↺ 设置已恢复为应用的默认值（采样和系统提示词）；当前运行的预设不变。"),
    "settings.reset_yours": ("↺ The settings are back to your own defaults for new chats (sampling and system "
                             "prompt); the running preset stays.",
                             "↺ 设置已恢复为你为新对话保存的默认值（采样和系统提示词）；当前运行的预设不变。"),
    "setting.my_defaults": ("Use these for new chats", "新对话使用这些设置"),
    "setting.my_defaults.tip": ("Your new chats start with this chat's sampling (temperature, top p, max new tokens, "
                                "repetition penalty) and system prompt, kept with your account. Off: new chats "
                                "start with the app's defaults.",
                                "你的新对话将使用本对话的采样设置（温度、Top p、最大新 token 数、重复惩罚）和系统提示词"
                                "（随账户保存）。关闭后，新对话使用应用的默认设置。"),

    # the presets as the sidebar lists them (a custom preset's purpose is the user's own, shown as written)
    "preset_label": ("{name}: {purpose}", "{name}：{purpose}"),
    "preset.auto": ("the largest that fits this device", "本机能容纳的最大预设"),
    "preset.2gb": ("The tightest cards (2.2 GiB free): 2k context, 16 chats at once",
                   "显存最紧的显卡（空闲 2.2 GiB）：2k 上下文，同时 16 个对话"),
    "preset.4gb": ("4 GB cards (3 GiB free): 4k context, 32 chats at once",
                   "4 GB 显卡（空闲 3 GiB）：4k 上下文，同时 32 个对话"),
    "preset.6gb": ("6 GB cards (5 GiB free): 8k context, 32 chats at once",
                   "6 GB 显卡（空闲 5 GiB）：8k 上下文，同时 32 个对话"),
    "preset.8gb": ("8 GB cards (7 GiB free): 16k context, 64 chats at once",
                   "8 GB 显卡（空闲 7 GiB）：16k 上下文，同时 64 个对话"),
    "preset.cpu": ("No GPU: runs on the processor, 4k context", "无 GPU：在处理器上运行，4k 上下文"),
    "preset.2gb-8bit": ("2 GB cards (1.8 GiB free): 2k context, 16 chats at once, 8-bit weights, 8-bit KV",
                        "2 GB 显卡（空闲 1.8 GiB）：2k 上下文，同时 16 个对话，8 位权重，8 位 KV"),
    "preset.cpu-8bit": ("No GPU, faster: the processor with 8-bit weights (int8), 4k context",
                        "无 GPU，更快：在处理器上用 8 位权重（int8）运行，4k 上下文"),

    # what the preset list says about this device
    "preset.auto_now": ("auto (now: {name})", "auto（当前：{name}）"),
    "preset.too_big": ("{name} (too big)", "{name}（放不下）"),
    "preset.no_gpu": ("GPU presets need an NVIDIA GPU: this machine has none, so only the processor's presets are "
                      "offered.", "GPU 预设需要 NVIDIA 显卡：本机没有，因此只列出处理器的预设。"),
    "preset.cpu_only": ("This server runs on the processor only (CHAT_DEVICE=cpu), so only the processor's presets "
                        "are offered.", "本服务器只在处理器上运行（CHAT_DEVICE=cpu），因此只列出处理器的预设。"),
    "preset.too_big.note": ("Presets marked too big need more memory than {gpu} has free ({free:.1f} GiB).",
                            "标为“放不下”的预设需要的显存超过 {gpu} 的空闲显存（{free:.1f} GiB）。"),

    # a change the sidebar refuses
    "settings.not_applied": ("Settings not applied: {why} The sidebar shows the settings in use again.",
                             "设置未生效：{why} 侧栏已恢复为当前使用的设置。"),
    "settings.oversized": ("the change was {mb:.1f} MB, more than the 1 MB one change can carry; the system prompt "
                           "takes at most {most:,} characters.",
                           "这次修改有 {mb:.1f} MB，超过了单次修改 1 MB 的上限；系统提示词最多 {most:,} 个字符。"),
    "settings.system_prompt": ("The system prompt must be text of at most {most:,} characters{size}.",
                               "系统提示词必须是不超过 {most:,} 个字符的文本{size}。"),
    "settings.system_prompt.size": (" (it has {size:,})", "（现在有 {size:,} 个）"),
    "settings.switches": ("'show stats' and 'library' must be on or off, and the preset one of: {valid}.",
                          "“显示开销”和“文档库”只能是开或关，预设必须是以下之一：{valid}。"),
}
