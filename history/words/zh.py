"""The history's notices in Simplified Chinese."""

TEXTS = {
    "cut_off": "*已中断：生成这条回复时服务器停止了。*",  # ends a stored reply
    "not_saved": "这条消息没有保存：它带有另一个对话中某条消息的 id。请刷新页面后重新发送。",
    "failing.text": ("⚠️ 这个对话无法保存：历史数据库（{where}）存不下它的文字（“{reason}”）。对话可以继续；这里显示"
                     "的内容不会出现在历史中。"),
    "failing": ("⚠️ 这个对话无法保存：历史数据库（{where}）报错“{reason}”。对话可以继续；在此期间写下的对话轮次不会出"
                "现在历史中。请释放磁盘空间或修正数据库的权限，保存会自行恢复。"),

    # an import file the history will not take (history/exchange.py), after "未导入任何内容：<file>："
    "import.not_utf8": ("文件不是 UTF-8 文本（第 {position:,} 个字节无法按 UTF-8 读取）：请把它存为 UTF-8 编码的 "
                        "JSON 后重新导入"),
    "import.not_json": ("文件不是有效的 JSON，也不是 JSON Lines（第 {line} 行第 {column} 列：`{detail}`）："
                        "请重新导出对话，或在出错的位置修正文件"),
    "import.too_deep": ("文件的 JSON 嵌套太深，无法读取（数组或对象层层相套达数百层，而一个对话只需几层）："
                        "请重新导出对话，或修正文件"),
    "import.no_messages": ('文件中没有消息：它应是 `{{"role", "content"}}` 消息的列表，或在 `"messages"` 下放有这样一个'
                           '列表的对象'),
    "import.too_many": "文件有 {count:,} 条消息，超过了一次导入最多的 {most:,} 条：请拆成几个文件，或只保留最近的消息",
    "import.late_system": ("第 {number} 条消息是对话开始后的系统消息：只有第一条消息可以是系统提示词；请删除它，或改为"
                           "用户消息"),
    "import.reply_in_a_row": ("第 {number} 条消息是助手消息，却没有回答任何用户消息（连续第二条助手消息）：请把两条回复"
                              "合并，或删除一条"),
    "import.reply_first": ("第 {number} 条消息是助手消息，却没有回答任何用户消息：对话应以用户的消息开始；请在它前面加"
                           "上它回答的问题，或删除它"),
    "import.no_user": "文件只有系统提示词，没有用户消息：请加上对话的消息",
    "import.not_object": '第 {number} 条消息不是对象：每条都应是 `{{"role": ..., "content": ...}}`',
    "import.role": ("第 {number} 条消息的角色是 `{role}`，本对话不接受：只能导入 `system`、`user`、`assistant`"
                    "（工具调用和其他角色不行）；请删除它或修改它的角色"),
    "import.not_text_part": "第 {number} 条消息有一部分不是文本（图片、音频……）：只能导入文本；请删除那一部分",
    "import.text_not_string": ('第 {number} 条消息有一个文本部分的 `"text"` 不是字符串：请把每部分的文字写成'
                               '字符串，例如 `{{"type": "text", "text": "你好"}}`'),
    "import.no_content": '第 {number} 条消息没有文本内容：请给它一个 `"content"` 字符串',
    "import.too_long": ("第 {number} 条消息超过了上下文（{chars:,} 个字符；模型一次最多读 {tokens:,} 个 "
                        "token）：请缩短它，或选择上下文更长的预设"),
    # what an import left out, the chat then using the app's defaults
    "import.dropped.title": "它的标题（不是文本）",
    "import.dropped.sampling": "它的采样设置（不是由名称和值组成的对象）",
    # a document the library will not take (history/library.py), after "<file> "
    "library.full": ("无法加入：你的文档库已有 {count} 个文档，达到上限；请删除一个不再需要的文档（“文档库”命令，然后"
                     "“删除”）后再添加它"),
    "library.too_much_text": ("无法加入：加上它，文档库中的文字将超过 {mb} MB；请删除一个不再需要的文档，或只添加"
                              "这个文件中你需要的部分"),
    "library.no_text": "没有可供检索的文字",
    # an API key that cannot be made (history/keys.py)
    "keys.no_name": "密钥需要一个说明用途的名称，例如 `new laptop-script`（或 `新建 笔记本脚本`）。",
    "keys.name_too_long": "密钥名称最多 {most} 个字符；这个有 {size} 个。",
    "keys.unprintable": "密钥名称只能包含可打印的字符：请用文字命名，例如 `new laptop`（或 `新建 笔记本`）。",
    "keys.too_many": "你已有 {most} 个密钥，达到每位用户的上限：请撤销一个不再使用的密钥。",
    "keys.not_stored": "密钥无法保存：历史数据库没有保存它。请重试。",
    # an export's Markdown (history/exchange.as_markdown)
    "export.untitled": "对话",
    "export.model": "模型",
    "export.preset": "内存预设",
    "export.sampling": "采样",
    "export.system_prompt": "系统提示词",
    "export.you": "你",
}
