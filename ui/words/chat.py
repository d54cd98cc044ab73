"""The chat's own words: the chips, the starters, a reply's notes and cost line, the engine's start and status."""

# the chips beside the message box, by their English names
COMMANDS = ("Status", "Export", "Import", "Library", "Keys", "Usage")

TEXTS = {
    # the chips: their names (shown on them) and what each does (their tooltip)
    "command.Status": ("Status", "状态"),
    "command.Export": ("Export", "导出"),
    "command.Import": ("Import", "导入"),
    "command.Library": ("Library", "文档库"),
    "command.Status.tip": ("Show the engine status", "查看引擎状态"),
    "command.Export.tip": ("Download this chat as Markdown and JSON", "把这个对话下载为 Markdown 和 JSON"),
    "command.Import.tip": ("Pick a chat's JSON file to make it a new chat", "选择对话的 JSON 文件，导入为新对话"),
    "command.Library.tip": ("Your documents: add, see and remove them", "你的文档库：添加、查看和删除文档"),

    # the starters on an empty chat: a label, and the message it sends
    "starter.kv": ("Explain KV caching", "讲讲 KV 缓存"),
    "starter.kv.ask": ("Explain in three sentences what a KV cache is.", "用三句话解释什么是 KV 缓存。"),
    "starter.python": ("Write Python", "写段 Python"),
    "starter.python.ask": ("Write a Python function that checks if a word is a palindrome.",
                           "写一个 Python 函数，判断一个单词是不是回文。"),
    "starter.hello": ("你好", "你好"),  # shows an English reader that the model speaks Chinese too
    "starter.hello.ask": ("用一句话介绍你自己。", "用一句话介绍你自己。"),
    "starter.day": ("Plan a day", "安排一天"),
    "starter.day.ask": ("Plan a relaxed Saturday in Beijing, in a short list.",
                        "用一个简短的清单，安排在北京悠闲度过的一个周六。"),

    # the tools under the latest reply
    "continue_reply": ("Continue", "继续"),
    "continue_reply.tip": ("Go on writing this reply from where it stopped", "从中断的地方接着写这条回复"),
    "regenerate_reply": ("Regenerate", "重新生成"),
    "regenerate_reply.tip": ("Another answer to the same question, in place of this one",
                             "对同一个问题重新回答，替换这条回复"),
    "tools.busy": ("A reply is still being written: wait for it to end, or press Stop, then try again.",
                   "还有一条回复正在生成：请等它结束，或点“停止”，然后再试。"),
    "tools.switching": ("The engine is starting or switching its memory preset: try again once the note above says "
                        "it is ready.", "引擎正在启动或切换显存预设：等上方提示显示已就绪后再试。"),
    "tools.not_latest": ("Only the chat's latest reply can be regenerated or continued: use the buttons under the "
                         "latest reply, or send a new message.",
                         "只有对话中最新的一条回复可以重新生成或继续：请使用最新回复下方的按钮，或发送一条新消息。"),
    "tools.not_regenerated": ("Not regenerated: {why} The reply above is kept as it was.",
                              "未重新生成：{why} 上面的回复保持原样。"),

    # a regenerated reply's earlier answers (ui/versions.py)
    "versions.counter": ("*{at} / {of}*", "*第 {at} / {of} 版*"),
    "reply_version_previous": ("◀ previous", "◀ 上一版"),
    "reply_version_previous.tip": ("Show answer {at} of {of}", "查看第 {at} 版回答（共 {of} 版）"),
    "reply_version_next": ("next ▶", "下一版 ▶"),
    "reply_version_next.tip": ("Show answer {at} of {of}", "查看第 {at} 版回答（共 {of} 版）"),
    "versions.gone": ("That answer is no longer kept: the reply has been replaced or its chat reopened.",
                      "那一版回答已不再保留：这条回复已被替换，或对话已重新打开。"),

    # a reply's notes and its cost line
    "reply.stopped": ("*Stopped.*", "*已停止。*"),
    "reply.busy": ("⏳ Every slot of the engine is busy; your reply starts as soon as one frees up.",
                   "⏳ 引擎的所有槽位都在忙，一有空位就开始生成你的回复。"),
    "reply.context_full": ("*The reply filled the context ({context} tokens with the chat so far): start a new chat, "
                           "or pick a preset with a longer context.*",
                           "*回复占满了上下文（连同之前的对话共 {context} 个 token）：请开始新对话，或选择上下文更长的"
                           "预设。*"),
    "reply.max_tokens": ("*The reply hit the 'max new tokens' limit ({max_tokens}).*",
                         "*回复达到了“最大新 token 数”的上限（{max_tokens}）。*"),
    "reply.dropped": ("*The {count} oldest messages no longer fit the context and were left out.*",
                      "*最早的 {count} 条消息已放不进上下文，未被使用。*"),
    "reply.cut": ("*{name}: {left_out:,} of {total:,} tokens were left out: the context holds {context:,} tokens with "
                  "the reply.*", "*{name}：{total:,} 个 token 中有 {left_out:,} 个未放入：上下文连同回复只能容纳 "
                  "{context:,} 个 token。*"),
    "cost.first_token": ("first token {ms:.0f} ms", "首 token {ms:.0f} ms"),
    "cost.rate": ("{rate:.0f} tok/s", "{rate:.0f} tok/s"),
    "cost.tokens": ("{prompt} prompt + {reply} reply tokens", "提示 {prompt} + 回复 {reply} token"),
    "cost.cached": ("{cached} cached", "缓存命中 {cached}"),
    "context.fill": ("context {used:,} / {context:,} tokens", "上下文 {used:,} / {context:,} token"),
    "context.full": ("the next message will drop the oldest turns", "下一条消息将舍弃最早的几轮对话"),
    "message.empty": ("Your message is empty: type something to ask.", "消息是空的：请输入你想问的内容。"),
    "message.oversized": ("Your message was {mb:.1f} MB, more than the 1 MB one message can carry, so it was not "
                          "sent to the model. Its text is still shown above to copy from: send it in parts, or "
                          "attach it as text files (1 MB each).",
                          "你的消息有 {mb:.1f} MB，超过了一条消息最多能带的 1 MB，所以没有发给模型。"
                          "它的文字仍显示在上面，可以复制：请分几次发送，或作为文本文件附加（每个 1 MB 以内）。"),

    # the engine's start, as a chat sees it
    "start.starting": ("Starting the model engine", "正在启动模型引擎"),
    "start.waking": ("Waking the model engine", "正在唤醒模型引擎"),
    "start.retry": ("Try again", "重试"),
    "progress": ("{mark} {title}: {stage} ({seconds:.0f} s)", "{mark} {title}：{stage}（{seconds:.0f} 秒）"),
    "stage.Waking the engine": ("Waking the engine", "正在唤醒引擎"),
    "stage.Checking the device and the model": ("Checking the device and the model", "正在检查设备和模型"),
    "stage.Warming up": ("Warming up", "正在预热"),
    "stage.Ready": ("Ready", "已就绪"),
    "stage.Checking the preset": ("Checking the preset", "正在检查预设"),
    "stage.Stopping the running engine": ("Stopping the running engine", "正在停止运行中的引擎"),
    "stage.loading": ("Loading {model} ({preset} preset)", "正在加载 {model}（{preset} 预设）"),
    "stage.already": ("'{name}' already runs", "“{name}”已在运行"),
    "stage.connecting": ("Connecting to the vLLM server at {url}", "正在连接位于 {url} 的 vLLM 服务器"),
    "stage.download_lookup": ("Downloading {model}: looking up its files", "正在下载 {model}：查找它的文件"),
    "stage.download": ("Downloading {model}: {done} of {total} ({percent}%)",
                       "正在下载 {model}：{done} / {total}（{percent}%）"),
    "stage.download_rate": ("Downloading {model}: {done} of {total} ({percent}%), {rate}, {left} left",
                            "正在下载 {model}：{done} / {total}（{percent}%），{rate}，还剩 {left}"),

    # a memory preset switch, in the chat that asked and in the others
    "switch.note": ("⏳ Switching the memory preset to '{name}'…", "⏳ 正在把显存预设切换为“{name}”…"),
    "switch.title": ("Switching to '{name}'", "切换到“{name}”"),
    "switch.others": ("🔁 Another chat is switching the memory preset to '{name}'; replies pause until it is ready.",
                      "🔁 另一个对话正在把显存预设切换为“{name}”；切换完成前回复会暂停。"),
    "switch.done": ("✅ The memory preset is now '{name}'.", "✅ 显存预设现在是“{name}”。"),
    "switch.failed": ("The preset switch failed; '{name}' is running.", "预设切换失败；正在运行的是“{name}”。"),

    # a chat whose reply was cut off by a server that stopped, or whose thread was deleted from another tab
    "session.cut_off": ("⚠️ The server that was writing this chat's last reply stopped, so that reply ends where it "
                        "was cut off (the history keeps it so). The chat goes on here: send your next message as "
                        "usual.", "⚠️ 正在生成这个对话最后一条回复的服务器停止了，因此那条回复停在中断处（历史中也这样"
                        "保存）。对话可以在这里继续：照常发送下一条消息即可。"),
    "session.deleted": ("🗑️ This chat was deleted, so its reply was stopped. What you write next starts a new chat.",
                        "🗑️ 这个对话已被删除，因此它的回复已停止。接下来输入的内容会开始一个新对话。"),

    # the status table (the Status chip)
    "status.title": ("**Engine status**", "**引擎状态**"),
    "status.head": ("| Engine | Now |", "| 引擎 | 当前 |"),
    "status.state": ("State", "状态"),
    "status.device": ("Device", "设备"),
    "status.preset": ("Preset", "预设"),
    "status.context": ("Context", "上下文"),
    "status.context_value": ("{tokens} tokens", "{tokens} token"),
    "status.memory": ("Memory used / the preset's size", "已用显存 / 预设所需"),
    "status.kv": ("KV cache in use", "KV 缓存占用"),
    "device.CPU ({cores} cores)": ("CPU ({cores} cores)", "CPU（{cores} 核）"),
    "status.requests": ("Requests running / queued", "运行中 / 排队中的请求"),
    "status.sequences": ("Sequences from chats / the API", "来自对话 / API 的序列"),
    "status.share": ("Each user's share / requests waiting for it", "每位用户的份额 / 等待份额的请求"),
    "status.asleep": (" since {clock} ({minutes} min ago); the next message wakes it",
                      "，自 {clock} 起（{minutes} 分钟前）；下一条消息会唤醒它"),
    "state.stopped": ("stopped", "已停止"),
    "state.starting": ("starting", "启动中"),
    "state.ready": ("ready", "就绪"),
    "state.switching": ("switching", "切换中"),
    "state.falling asleep": ("falling asleep", "正在休眠"),
    "state.asleep": ("asleep", "休眠中"),
    "state.waking": ("waking", "唤醒中"),
    "state.failed": ("failed", "失败"),
    "state.unreachable": ("unreachable", "无法连接"),
}
