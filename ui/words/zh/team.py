"""The words of a user's own API keys (the Keys chip) and of the tokens used (the Usage chip), in Simplified Chinese."""

TEXTS = {
    "command.Keys": "密钥",
    "command.Keys.tip": "你的 API 密钥：新建、查看和撤销",
    "command.Usage": "用量",
    "command.Usage.tip": "每天用掉的 token，含对话和 API",

    # the words typed beside the Keys chip (understood in every language, whatever the chat's)
    "keys.new_word": "新建",
    "keys.revoke_word": "撤销",

    "keys.no_history": ("API 密钥保存在对话历史的数据库中，而本服务器关闭了历史（CHAT_HISTORY=false）：这里的 API "
                        "只接受服务器的 CHAT_API_KEY。"),
    "keys.no_api": ("本服务器不提供 OpenAI 兼容 API（CHAT_API=false，或模型运行在另一台 vLLM "
                    "服务器上）：在这里你的密钥打不开任何东西。"),
    "keys.how": ("点 **新建密钥**，或在 **密钥** 按钮旁发送 `new`（或“新建”）加名称来命名（例如 `new laptop "
                 "script`）；点密钥的撤销按钮（或发送 `revoke` 加编号或名称）即可撤销。程序把密钥作为 "
                 "`Authorization: Bearer <key>`（即 `openai` 客户端的 `api_key`）发给本服务器的 "
                 "/v1，就以你的身份运行：用你的文档库，计入你的用量。"),
    "keys.new_button": "新建密钥",
    "keys.new_tip": "新建名为“密钥 1”“密钥 2”……的密钥（在按钮旁发送 `new 名称` 可自己命名）",
    "keys.default_name": "密钥 {n}",
    "keys.revoke_button": "撤销 {n}：{name}",
    "keys.revoke_tip": "撤销 {name}：此后用它的请求都会被拒绝",
    "keys.already_gone": "这个密钥已不在你的密钥中（可能已在另一个标签页撤销）：点 **密钥** 按钮查看当前列表。",
    "keys.none": "你还没有 API 密钥。{how}",
    "keys.list": "你的 API 密钥（{count} 个）：\n\n{table}\n\n{how}",
    "keys.head": "| # | 名称 | 新建时间 (UTC) | 最近使用 (UTC) |",
    "keys.never": "从未",
    "keys.made": ("你的新 API 密钥，名为“{name}”：\n\n`{new_key}`\n\n请现在复制：它只显示这一次（服务器只保存它的哈希"
                  "）。在 **密钥** 按钮列出的列表中点它的撤销按钮即可撤销。"),
    "keys.not_made": "未新建密钥：{why}",
    "keys.db_failed": "未新建密钥：历史数据库出错（{error}）；请重试。",
    "keys.no_such": ("你的密钥中没有“{which}”：请发送 `revoke` 加列表中密钥的编号或名称（单独点击 **密钥** "
                     "按钮会列出它们）。"),
    "keys.revoked": "已撤销 **{name}**：从现在起，带着它的每个请求都会被拒绝。",

    "usage.no_history": "用量保存在对话历史的数据库中，而本服务器关闭了历史（CHAT_HISTORY=false）。",
    "usage.none": "最近 {days} 天{whose}没有用掉 token。",
    "usage.yours": "你最近 {days} 天的用量（UTC）：\n\n{table}",
    "usage.everyone": "作为本服务器的管理员，所有人最近 {days} 天的用量（UTC）：\n\n{table}",
    "usage.by_anyone": "任何人都",
    "usage.head": "| 日期 | 来源 | 请求 | 提示 token | 缓存 | 回复 token |",
    "usage.head_users": "| 用户 | 日期 | 来源 | 请求 | 提示 token | 缓存 | 回复 token |",
    "usage.chat": "对话",
    "usage.api": "API 调用",
    "usage.total": "**合计**",
}
