"""The words of a user's own API keys (the Keys chip) and of the tokens used (the Usage chip)."""

TEXTS = {
    "command.Keys": ("Keys", "密钥"),
    "command.Keys.tip": ("Your API keys: make, list and revoke them", "你的 API 密钥：新建、查看和撤销"),
    "command.Usage": ("Usage", "用量"),
    "command.Usage.tip": ("Tokens used per day, by chats and the API", "每天用掉的 token，含对话和 API"),

    "keys.no_history": ("API keys are kept in the chat history's database, which is off on this server "
                        "(CHAT_HISTORY=false): the API takes only the server's CHAT_API_KEY there.",
                        "API 密钥保存在对话历史的数据库中，而本服务器关闭了历史（CHAT_HISTORY=false）：这里的 API "
                        "只接受服务器的 CHAT_API_KEY。"),
    "keys.no_api": ("This server does not serve the OpenAI-compatible API (CHAT_API=false, or the model runs on "
                    "another vLLM server): a key of yours would open nothing here.",
                    "本服务器不提供 OpenAI 兼容 API（CHAT_API=false，或模型运行在另一台 vLLM 服务器上）：在这里"
                    "你的密钥打不开任何东西。"),
    "keys.how": ("Press **New key**, or send `new` and a name beside the **Keys** chip to name it (e.g. `new "
                 "laptop script`); a key's Revoke button (or `revoke` and its number or name) revokes it. A "
                 "program sends its key as `Authorization: Bearer <key>` (the `openai` client's `api_key`) to /v1 "
                 "on this server; it then runs as you: your library, your usage.",
                 "点 **新建密钥**，或在 **密钥** 按钮旁发送 `new`（或“新建”）加名称来命名（例如 `new laptop "
                 "script`）；点密钥的撤销按钮（或发送 `revoke` 加编号或名称）即可撤销。程序把密钥作为 "
                 "`Authorization: Bearer <key>`"
                 "（即 `openai` 客户端的 `api_key`）发给本服务器的 /v1，就以你的身份运行：用你的文档库，"
                 "计入你的用量。"),
    "keys.new_button": ("New key", "新建密钥"),
    "keys.new_tip": ("Make a key named \"key 1\", \"key 2\" ... (`new NAME` beside the chip names it)",
                     "新建名为“密钥 1”“密钥 2”……的密钥（在按钮旁发送 `new 名称` 可自己命名）"),
    "keys.default_name": ("key {n}", "密钥 {n}"),
    "keys.revoke_button": ("Revoke {n}: {name}", "撤销 {n}：{name}"),
    "keys.revoke_tip": ("Revoke {name}: every request with it is refused from now on",
                        "撤销 {name}：此后用它的请求都会被拒绝"),
    "keys.already_gone": ("That key is no longer one of yours (revoked already, perhaps in another tab): press "
                          "the Keys chip for the list as it is now.",
                          "这个密钥已不在你的密钥中（可能已在另一个标签页撤销）：点 **密钥** 按钮查看当前列表。"),
    "keys.none": ("You have no API keys. {how}", "你还没有 API 密钥。{how}"),
    "keys.list": ("Your API keys ({count}):\n\n{table}\n\n{how}", "你的 API 密钥（{count} 个）：\n\n{table}\n\n{how}"),
    "keys.head": ("| # | Name | Made (UTC) | Last used (UTC) |", "| # | 名称 | 新建时间 (UTC) | 最近使用 (UTC) |"),
    "keys.never": ("never", "从未"),
    "keys.made": ("Your new API key, named “{name}”:\n\n`{new_key}`\n\nCopy it now: it is shown only this once (the "
                  "server keeps only its hash). Revoke it with its button in the **Keys** chip's list.",
                  "你的新 API 密钥，名为“{name}”：\n\n`{new_key}`\n\n请现在复制：它只显示这一次"
                  "（服务器只保存它的哈希）。在 **密钥** 按钮列出的列表中点它的撤销按钮即可撤销。"),
    "keys.not_made": ("No key was made: {why}", "未新建密钥：{why}"),
    "keys.db_failed": ("No key was made: the history database failed ({error}); try again.",
                       "未新建密钥：历史数据库出错（{error}）；请重试。"),
    "keys.no_such": ("None of your keys is '{which}': send `revoke` and a key's number or name from the list (the "
                     "**Keys** chip alone lists them).",
                     "你的密钥中没有“{which}”：请发送 `revoke` 加列表中密钥的编号或名称（单独点击 **密钥** 按钮会"
                     "列出它们）。"),
    "keys.revoked": ("Revoked **{name}**: every request with it is refused from now on.",
                     "已撤销 **{name}**：从现在起，带着它的每个请求都会被拒绝。"),

    "usage.no_history": ("Usage is kept in the chat history's database, which is off on this server "
                         "(CHAT_HISTORY=false).",
                         "用量保存在对话历史的数据库中，而本服务器关闭了历史（CHAT_HISTORY=false）。"),
    "usage.none": ("No tokens used in the last {days} days{whose}.", "最近 {days} 天{whose}没有用掉 token。"),
    "usage.yours": ("Your usage in the last {days} days (UTC):\n\n{table}",
                    "你最近 {days} 天的用量（UTC）：\n\n{table}"),
    "usage.everyone": ("Everyone's usage in the last {days} days (UTC), as this server's operator:\n\n{table}",
                       "作为本服务器的管理员，所有人最近 {days} 天的用量（UTC）：\n\n{table}"),
    "usage.by_anyone": (" by anyone", "任何人都"),
    "usage.head": ("| Day | Source | Requests | Prompt tokens | Cached | Reply tokens |",
                   "| 日期 | 来源 | 请求 | 提示 token | 缓存 | 回复 token |"),
    "usage.head_users": ("| User | Day | Source | Requests | Prompt tokens | Cached | Reply tokens |",
                         "| 用户 | 日期 | 来源 | 请求 | 提示 token | 缓存 | 回复 token |"),
    "usage.chat": ("chat", "对话"),
    "usage.api": ("API", "API 调用"),
    "usage.total": ("**total**", "**合计**"),
}
