"""The words of the chips, the starters, a reply's notes and cost line, the engine's start and status, in Simplified
Chinese."""

TEXTS = {
    # the chips: their names (shown on them) and what each does (their tooltip)
    "command.Status": "状态",
    "command.Export": "导出",
    "command.Import": "导入",
    "command.Library": "文档库",
    "command.Status.tip": "查看引擎状态",
    "command.Export.tip": "把这个对话下载为 Markdown 和 JSON",
    "command.Import.tip": "选择对话的 JSON 文件，导入为新对话",
    "command.Library.tip": "你的文档库：添加、查看和删除文档",

    # the starters on an empty chat: a label, and the message it sends
    "starter.kv": "讲讲 KV 缓存",
    "starter.kv.ask": "用三句话解释什么是 KV 缓存。",
    "starter.python": "写段 Python",
    "starter.python.ask": "写一个 Python 函数，判断一个单词是不是回文。",
    "starter.hello": "你好",  # shows an English reader that the model speaks Chinese too
    "starter.hello.ask": "用一句话介绍你自己。",
    "starter.day": "安排一天",
    "starter.day.ask": "用一个简短的清单，安排在北京悠闲度过的一个周六。",

    # the tools under the latest reply
    "continue_reply": "继续",
    "continue_reply.tip": "从中断的地方接着写这条回复",
    "regenerate_reply": "重新生成",
    "regenerate_reply.tip": "对同一个问题重新回答，替换这条回复",
    "tools.busy": "还有一条回复正在生成：请等它结束，或点“停止”，然后再试。",
    "tools.switching": "引擎正在启动或切换显存预设：等上方提示显示已就绪后再试。",
    "tools.not_latest": "只有对话中最新的一条回复可以重新生成或继续：请使用最新回复下方的按钮，或发送一条新消息。",
    "tools.earlier_version": ("只有回复的最新一版可以继续，而这条回复正显示第 {at} 版（共 {of} 版）："
                              "请点“下一版 ▶”直到显示第 {of} / {of} 版，再点“继续”。什么都没有改变。"),
    "tools.not_regenerated": "未重新生成：{why} 上面的回复保持原样。",

    # a regenerated reply's earlier answers (ui/versions.py)
    "versions.counter": "*第 {at} / {of} 版*",
    "reply_version_previous": "◀ 上一版",
    "reply_version_previous.tip": "查看第 {at} 版回答（共 {of} 版）",
    "reply_version_next": "下一版 ▶",
    "reply_version_next.tip": "查看第 {at} 版回答（共 {of} 版）",
    "versions.gone": "那一版回答已不再保留：这条回复已被替换，或对话已重新打开。",

    # an edited question's branches: the question as it was and the turns after it (ui/branches.py)
    "question_branch_previous": "◀ 问题 第 {at} / {of} 版",
    "question_branch_previous.tip": "查看上面问题的第 {to} 版（共 {of} 版）及其后的回复",
    "question_branch_next": "问题 第 {at} / {of} 版 ▶",
    "question_branch_next.tip": "查看上面问题的第 {to} 版（共 {of} 版）及其后的回复",
    "branches.gone": "问题的那一版已不在这里：对话此后已经改变。请使用它的回复下方的按钮。",
    "branches.kept": "这个问题被编辑过：它的早先版本都保留着。",
    "doing.showing another version of the question": "查看问题的另一版",

    # a reply's notes and its cost line
    "reply.stopped": "*已停止。*",
    "reply.busy": "⏳ 引擎的所有槽位都在忙，一有空位就开始生成你的回复。",
    "reply.context_full": ("*回复占满了上下文（连同之前的对话共 {context} 个 "
                           "token）：请开始新对话，或选择上下文更长的预设。*"),
    "reply.max_tokens": "*回复达到了“最大新 token 数”的上限（{max_tokens}）。*",
    "reply.dropped": "*最早的 {count} 条消息已放不进上下文，未被使用。*",
    "reply.cut": ("*{name}：{total:,} 个 token 中有 {left_out:,} 个未放入：上下文连同回复只能容纳 {context:,} 个 "
                  "token。*"),
    "cost.first_token": "首 token {ms:.0f} ms",
    "cost.rate": "{rate:.0f} tok/s",
    "cost.tokens": "提示 {prompt} + 回复 {reply} token",
    "cost.cached": "缓存命中 {cached}",
    "context.fill": "上下文 {used:,} / {context:,} token",
    "context.full": "下一条消息将舍弃最早的几轮对话",
    "context.fill_draft": "上下文 {used:,} + 你的消息 {draft:,} / {context:,} token",
    "message.empty": "消息是空的：请输入你想问的内容。",
    "message.oversized": ("你的消息有 {mb:.1f} MB，超过了一条消息最多能带的 1 "
                          "MB，所以没有发给模型。它的文字仍显示在上面，可以复制：请分几次发送，或作为文本文件附加（每"
                          "个 1 MB 以内）。"),

    # the engine's start, as a chat sees it
    "start.starting": "正在启动模型引擎",
    "start.waking": "正在唤醒模型引擎",
    "start.retry": "重试",
    "progress": "{mark} {title}：{stage}（{seconds:.0f} 秒）",
    "progress.notice": "{line}。{notice}。",  # what the engine's start tells beside its progress
    "notice.Serving {model} from {url}": "模型 {model} 由 {url} 的 vLLM 服务器提供",
    "stage.Waking the engine": "正在唤醒引擎",
    "stage.Checking the device and the model": "正在检查设备和模型",
    "stage.Warming up": "正在预热",
    "stage.Ready": "已就绪",
    "stage.Checking the preset": "正在检查预设",
    "stage.Stopping the running engine": "正在停止运行中的引擎",
    "stage.loading": "正在加载 {model}（{preset} 预设）",
    "stage.already": "“{name}”已在运行",
    "stage.connecting": "正在连接位于 {url} 的 vLLM 服务器",
    "stage.download_lookup": "正在下载 {model}：查找它的文件",
    "stage.download": "正在下载 {model}：{done} / {total}（{percent}%）",
    "stage.download_rate": "正在下载 {model}：{done} / {total}（{percent}%），{rate}，还剩 {left}",

    # a memory preset switch, in the chat that asked and in the others
    "switch.note": "⏳ 正在把显存预设切换为“{name}”…",
    "switch.title": "切换到“{name}”",
    "switch.others": "🔁 另一个对话正在把显存预设切换为“{name}”；切换完成前回复会暂停。",
    "switch.done": "✅ 显存预设现在是“{name}”。",
    "switch.failed": "预设切换失败；正在运行的是“{name}”。",

    # a chat whose reply was cut off by a server that stopped, or whose thread was deleted from another tab
    "session.cut_off": ("⚠️ 正在生成这个对话最后一条回复的服务器停止了，因此那条回复停在中断处（历史中也这样保存）。"
                        "对话可以在这里继续：照常发送下一条消息即可。"),
    "session.deleted": "🗑️ 这个对话已被删除，因此它的回复已停止。接下来输入的内容会开始一个新对话。",

    # the status table (the Status chip)
    "status.title": "**引擎状态**",
    "status.head": "| 引擎 | 当前 |",
    "status.state": "状态",
    "status.device": "设备",
    "status.preset": "预设",
    "status.context": "上下文",
    "status.context_value": "{tokens} token",
    "status.memory": "已用显存 / 预设所需",
    "status.kv": "KV 缓存占用",
    "device.CPU ({cores} cores)": "CPU（{cores} 核）",
    "device.not started": "未启动",
    "device.{gpus} × {name} (data parallel)": "{gpus} × {name}（数据并行）",
    "device.{gpus} × {name} (tensor parallel)": "{gpus} × {name}（张量并行）",
    "purpose.the vLLM server at {url}": "位于 {url} 的 vLLM 服务器",  # a remote engine's, in place of a preset's
    "status.requests": "运行中 / 排队中的请求",
    "status.sequences": "来自对话 / API 的序列",
    "status.share": "每位用户的份额 / 等待份额的请求",
    "status.asleep": "，自 {clock} 起（{minutes} 分钟前）；下一条消息会唤醒它",
    "state.stopped": "已停止",
    "state.starting": "启动中",
    "state.ready": "就绪",
    "state.switching": "切换中",
    "state.falling asleep": "正在休眠",
    "state.asleep": "休眠中",
    "state.waking": "唤醒中",
    "state.failed": "失败",
    "state.unreachable": "无法连接",
}
