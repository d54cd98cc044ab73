"""The words of the user's files: the library, attachments, and a chat's export and import, in Simplified Chinese."""

TEXTS = {
    # the library (the Library chip, and a question answered from it)
    "library.no_history": ("文档库保存在对话历史的数据库中，而本服务器关闭了历史（CHAT_HISTORY=false）：请开启并重启"
                           "，才能保存文档。"),
    "library.how": ("点 **添加文档**（文本、代码、Markdown、CSV、JSON 或 PDF），或附上文件后点 "
                    "**文档库**。在设置中打开 *根据我的文档库回答*，或在消息里写 @文档名，即可根据这些文档回答。"),
    "library.add_button": "添加文档",
    "library.add_tip": "选择要加入文档库的文件",
    "library.ask": "把要加入文档库的文件拖到这里，或点按钮选择。",
    "library.nothing_found": "文档库中没有与这条消息匹配的内容：本次回答未使用文档库。",
    "library.no_room": ("文档库的段落与这条消息一起放不进上下文：本次回答未使用它们（缩短消息或调低“最大新 token "
                        "数”可以为它们留出空间）。"),
    "library.sources": "*来自你的文档库{note}：{count}，约 {tokens} 个 token — {places}*",
    "library.note": "（{note}）",
    "library.passages_one": "{count} 个段落",
    "library.passages_many": "{count} 个段落",
    "library.place": "[{number}] {document}，第 {position} 段",  # a source: its number, document and place
    "library.opening": "{documents} 中没有与你其他词语匹配的内容，因此回复依据的是文档开头",
    "library.unknown_one": "*{names} 不是你文档库中的文档名，因此保留为消息的一部分。*",
    "library.unknown_many": "*{names} 都不是你文档库中的文档名，因此保留为消息的一部分。*",
    "library.added": "已加入你的文档库：{added}。",
    "library.added_one": "**{name}**（{size}，{count}）",
    "library.replaced_one": "**{name}**（{size}，{count}），替换了同名的旧版本",
    "library.not_added": "未加入：{problems} 请附上{accepted}。",
    "library.turn_on": "在设置中打开 *根据我的文档库回答*，即可据此回答。",
    "library.db_failed": "{name} 未加入：历史数据库出错（{error}）；该文件的内容均未保存，请重试。",
    "library.no_such": ("你的文档库中没有“{which}”：请发送 `remove` "
                        "加列表中文档的编号或名称（“文档库”命令会列出它们）。"),
    "library.buttons": "按文档的按钮即可将其从文档库删除。",
    "library.remove_button": "删除 {n}：{name}",
    "library.remove_tip": "从文档库删除 {name} 及其段落",
    "library.remove_word": "删除",  # typed beside the Library chip, in any language
    "library.already_gone": "该文档已不在你的文档库中：请用“文档库”命令重新列出。",
    "library.remove_sure": ("要从文档库删除 **{name}** 吗？之后的提问将不再用到它的段落，删除后无法恢复"
                            "（需要时请重新添加该文件）。点按钮即删除；什么都不做则保留它。"),
    "library.remove_sure_button": "确定删除 {name}",
    "library.removed": "已从你的文档库删除 **{name}**。",
    "library.empty": "你的文档库是空的。{how}",
    "library.list": "你的文档库（{count} 个文档）：\n\n{table}\n\n{how}",
    "library.head": "| # | 文档 | 大小 | 加入时间 (UTC) | 段落 |",

    # a file that could not be read
    "file.unreadable": "{name} 无法读取（{error}）。",
    "file.refused": "{name} {why}。",
    "file.too_many": "附上了 {count} 个文件，但一条消息最多只能带 {most} 个。",
    "file.not_sent": "你的消息没有发给模型：{problems} 请附上{accepted}，然后重新发送。",
    "file.accepted": "文本文件（{extensions} 或其他任何文本类型）{pdf}，最多 {files} 个，每个不超过 {mb} MB",
    "file.accepted_pdf": "以及含文字的 PDF",

    "file.binary": "不是文本文件（含有二进制数据）",
    "file.encoding": "不是文本文件（字节不属于任何已知的文本编码）",
    "file.empty": "是空文件（0 字节）；请附上含有文字的文件",
    "file.too_long": "的文字超过 {size}；请只附上你需要的部分",
    "pdf.slow": ("读取耗时过长：超过 {total:g} 秒{where}，刻意构造的慢 PDF 或特别大的 PDF "
                 "会这样；其内容均未使用。请把它的文字存成 .txt 文件附上，或只附上所需页面的 PDF"),
    "pdf.slow_page": "（仅第 {page} 页就超过了 {page_s:g} 秒）",
    "pdf.too_long": "的文字超过 {size}（读到第 {page} 页时）；请只附上你需要的部分",
    "pdf.locked": "设有密码；请附上没有密码的副本",
    "pdf.damaged": "无法作为 PDF 读取（{error}）",
    "pdf.no_text": "是没有文字的 PDF（扫描件？）；这个模型只能读文字",
    "message.not_text": ("*你的消息含有不是文本的字符（孤立的 UTF-16 代理项，粘贴出错或某些客户端会发出）：每个都已替"
                         "换为 �，模型读到的和历史中保存的都是如此；消息的其余部分保持原样。*"),

    # a chat's export and import
    "export.nothing": "这个对话还没有可导出的问答：请先提问，再导出。",
    "export.done": ("⬇️ 这个对话（{count} 条消息）：供阅读的 Markdown，以及 OpenAI 消息格式的 "
                    "JSON（可用“导入”命令再导入）。"),
    "export.all": "导出我的全部对话",
    "export.all.tip": "历史中的每个对话，各为 Markdown 和 JSON，打包为一个 zip 文件",
    "export.all.done": ("⬇️ 你的全部对话（{count} 个），各为供阅读的 Markdown 和 OpenAI 消息格式的 JSON，打包为一个 "
                        "zip 文件（每个 JSON 都可用“导入”命令再导入）。"),
    "export.all.nothing": "你的历史中还没有含问答的对话：没有可导出的内容。",
    "export.all.no_history": ("导出全部对话需要对话历史，而本服务器关闭了历史（CHAT_HISTORY=false）：只能用“导出”命令"
                              "导出当前对话。"),
    "doing.exporting all your chats": "导出你的全部对话",
    "import.no_history": "导入需要对话历史，而本服务器关闭了历史（CHAT_HISTORY=false）：请开启并重启，然后重新导入。",
    "import.ask": ("把对话的 JSON 文件拖到这里（本应用导出的文件，或 OpenAI "
                   "消息列表），或点按钮选择：它会成为一个新对话。"),
    "file.no_time": ("未读取：同一条消息中前面的文件已用完一条消息的全部文件可用的 {total:g} "
                     "秒读取时间。请单独发送它，或改为附上它的文字"),
    "file.ask_lost": "上传框收到了回应，但没有随之到达的文件（上传可能失败了）：请再点一次并重新选择文件。",
    "file.ask_gave_up": "{minutes} 分钟内没有收到文件，上传框已关闭：准备好文件后再点一次。",
    "import.attach_one": ("请在“导入”命令上附上一个对话的 JSON 文件（本应用导出的文件，或 OpenAI "
                          "消息列表），然后重新发送。"),
    "import.file_refused": "{name}：{why}。",  # why: the history's words (history/words/, `import.` keys)
    "import.setting_left_out": "{name}（{why}）",  # a setting of an import the sidebar refused
    "import.refused": "未导入任何内容：{why}",
    "import.not_json": "{name} 不是 JSON 文件。{attach}",
    "import.too_large": "{name} 超过了 {mb} MB：只保留对话中最近的消息，再重新导入。",
    "import.title": "{title}（导入）",
    "import.done": ("✅ 已将 {count} 条消息导入为新对话“{title}”：[打开它](/thread/{thread})，或在历史列表中找到它。"
                    "对话会从最后一条消息接着进行。"),
    "import.left_out": "\n\n以下内容未导入，对话改用本应用的默认值：{dropped}。打开对话后可在设置侧栏中修改。",
}
