"""The words of the settings sidebar: its labels and descriptions, the memory presets, and why a change was refused, in
Simplified Chinese."""

TEXTS = {
    "setting.preset": "显存预设",
    "setting.preset.tip": ("会重启所有对话共用的引擎：在 GPU 上回复约暂停 10 秒，在处理器上约 30-60 "
                           "秒。本机无法运行的预设会先被拒绝。"),
    "setting.temperature": "温度",
    "setting.temperature.tip": "0 总是选最可能的词；越高，回答越多样。",
    "setting.top_p": "Top p（核采样）",
    "setting.top_p.tip": "只从合计概率达到该值的最可能的词中采样；1 表示全部保留。",
    "setting.max_tokens": "最大新 token 数",
    "setting.max_tokens.tip": "不超过当前预设的上下文长度。",
    "setting.repetition_penalty": "重复惩罚",
    "setting.repetition_penalty.tip": ("大于 1 时，对话中已出现的词更不容易再次出现：容易重复的小模型在 1.1-1.3 "
                                       "时更少打转。1 表示不做调整。"),
    "setting.system_prompt": "系统提示词",
    "setting.system_prompt.default": "你是一个乐于助人的助手。",
    "setting.show_stats": "显示每条回复的开销",
    "setting.library": "根据我的文档库回答",
    "setting.library.tip": ("每个问题都根据你文档中最相关的段落回答（用“文档库”命令添加文档），并注明出处。在消息里写"
                            " @文档名 可指定要用的文档。"),
    "settings.reset_app": "↺ 设置已恢复为应用的默认值（采样和系统提示词）；当前运行的预设不变。",
    "settings.reset_yours": "↺ 设置已恢复为你为新对话保存的默认值（采样和系统提示词）；当前运行的预设不变。",
    "setting.my_defaults": "新对话使用这些设置",
    "setting.my_defaults.tip": ("你的新对话将使用本对话的采样设置（温度、Top p、最大新 token "
                                "数、重复惩罚）和系统提示词（随账户保存）。关闭后，新对话使用应用的默认设置。"),

    # the presets as the sidebar lists them (a custom preset's purpose is the user's own, shown as written)
    "preset_label": "{name}：{purpose}",
    "preset.auto": "本机能容纳的最大预设",
    "preset.2gb": "显存最紧的显卡（空闲 2.2 GiB）：2k 上下文，同时 16 个对话",
    "preset.4gb": "4 GB 显卡（空闲 3 GiB）：4k 上下文，同时 32 个对话",
    "preset.6gb": "6 GB 显卡（空闲 5 GiB）：8k 上下文，同时 32 个对话",
    "preset.8gb": "8 GB 显卡（空闲 7 GiB）：16k 上下文，同时 64 个对话",
    "preset.cpu": "无 GPU：在处理器上运行，4k 上下文",
    "preset.2gb-8bit": "2 GB 显卡（空闲 1.8 GiB）：2k 上下文，同时 16 个对话，8 位权重，8 位 KV",
    "preset.cpu-8bit": "无 GPU，更快：在处理器上用 8 位权重（int8）运行，4k 上下文",

    # what the preset list says about this device
    "preset.auto_now": "auto（当前：{name}）",
    "preset.too_big": "{name}（放不下）",
    "preset.no_gpu": "GPU 预设需要 NVIDIA 显卡：本机没有，因此只列出处理器的预设。",
    "preset.cpu_only": "本服务器只在处理器上运行（CHAT_DEVICE=cpu），因此只列出处理器的预设。",
    "preset.too_big.note": "标为“放不下”的预设需要的显存超过 {gpu} 的空闲显存（{free:.1f} GiB）。",

    # a change the sidebar refuses
    "settings.not_applied": "设置未生效：{why} 侧栏已恢复为当前使用的设置。",
    "settings.oversized": "这次修改有 {mb:.1f} MB，超过了单次修改 1 MB 的上限；系统提示词最多 {most:,} 个字符。",
    "settings.system_prompt": "系统提示词必须是不超过 {most:,} 个字符的文本{size}。",
    "settings.system_prompt.size": "（现在有 {size:,} 个）",
    "settings.sampling": "{name}只能是 {low:g} 到 {high:g} 之间的数，收到的是 {value}。",
    "settings.switches": "“显示开销”和“文档库”只能是开或关，预设必须是以下之一：{valid}。",
}
