"""The words of the user's files: the library, attachments, and a chat's export and import."""

TEXTS = {
    # the library (the Library chip, and a question answered from it)
    "library.no_history": ("The library is kept in the chat history's database, which is off on this server "
                           "(CHAT_HISTORY=false): turn it on and restart to keep documents.",
                           "文档库保存在对话历史的数据库中，而本服务器关闭了历史（CHAT_HISTORY=false）：请开启并重启，"
                           "才能保存文档。"),
    "library.how": ("Press **Add documents** (text, code, Markdown, CSV, JSON or PDF), or attach files and press "
                    "the **Library** chip. Turn on *Answer from my library* in the settings, or write @name in a "
                    "message to answer it from those documents.",
                    "点 **添加文档**（文本、代码、Markdown、CSV、JSON 或 PDF），或附上文件后点 **文档库**。"
                    "在设置中打开 *根据我的文档库回答*，或在消息里写 @文档名，即可根据这些文档回答。"),
    "library.add_button": ("Add documents", "添加文档"),
    "library.add_tip": ("Pick files to add to your library", "选择要加入文档库的文件"),
    "library.ask": ("Drop the files to add to your library here, or press the button to pick them.",
                    "把要加入文档库的文件拖到这里，或点按钮选择。"),
    "library.nothing_found": ("Nothing in your library matched this message: it was answered without the library.",
                              "文档库中没有与这条消息匹配的内容：本次回答未使用文档库。"),
    "library.no_room": ("Your library's passages did not fit the context beside this message: it was answered "
                        "without them (a shorter message or a lower 'max new tokens' leaves them room).",
                        "文档库的段落与这条消息一起放不进上下文：本次回答未使用它们（缩短消息或调低“最大新 token 数”"
                        "可以为它们留出空间）。"),
    "library.sources": ("*From your library{note}: {count}, about {tokens} tokens — {places}*",
                        "*来自你的文档库{note}：{count}，约 {tokens} 个 token — {places}*"),
    "library.note": (" ({note})", "（{note}）"),
    "library.passages_one": ("{count} passage", "{count} 个段落"),
    "library.passages_many": ("{count} passages", "{count} 个段落"),
    "library.opening": ("nothing in {documents} matched your other words, so the reply draws on its start",
                        "{documents} 中没有与你其他词语匹配的内容，因此回复依据的是文档开头"),
    "library.unknown_one": ("*{names} names no document in your library, so it stayed part of your message.*",
                            "*{names} 不是你文档库中的文档名，因此保留为消息的一部分。*"),
    "library.unknown_many": ("*{names} name no document in your library, so they stayed part of your message.*",
                             "*{names} 都不是你文档库中的文档名，因此保留为消息的一部分。*"),
    "library.added": ("Added to your library: {added}.", "已加入你的文档库：{added}。"),
    "library.added_one": ("**{name}** ({size}, {count})", "**{name}**（{size}，{count}）"),
    "library.replaced_one": ("**{name}** ({size}, {count}) in place of the earlier copy of that name",
                             "**{name}**（{size}，{count}），替换了同名的旧版本"),
    "library.not_added": ("Not added: {problems} Attach {accepted}.", "未加入：{problems} 请附上{accepted}。"),
    "library.turn_on": ("Turn on *Answer from my library* in the settings to answer from it.",
                        "在设置中打开 *根据我的文档库回答*，即可据此回答。"),
    "library.db_failed": ("{name} was not added: the history database failed ({error}); nothing of it was kept, try "
                          "again.", "{name} 未加入：历史数据库出错（{error}）；该文件的内容均未保存，请重试。"),
    "library.no_such": ("No document in your library is '{which}': send `remove` and a document's number or name "
                        "from the list (the Library command lists them).",
                        "你的文档库中没有“{which}”：请发送 `remove` 加列表中文档的编号或名称（“文档库”命令会列出"
                        "它们）。"),
    "library.buttons": ("Press a document's button to remove it from your library.",
                        "按文档的按钮即可将其从文档库删除。"),
    "library.remove_button": ("Remove {n}: {name}", "删除 {n}：{name}"),
    "library.remove_tip": ("Remove {name} and its passages from your library", "从文档库删除 {name} 及其段落"),
    "library.already_gone": ("That document is no longer in your library: list it again with the Library command.",
                             "该文档已不在你的文档库中：请用“文档库”命令重新列出。"),
    "library.removed": ("Removed **{name}** from your library.", "已从你的文档库删除 **{name}**。"),
    "library.empty": ("Your library is empty. {how}", "你的文档库是空的。{how}"),
    "library.list": ("Documents in your library: {count}\n\n{table}\n\n{how}",
                     "你的文档库（{count} 个文档）：\n\n{table}\n\n{how}"),
    "library.head": ("| # | Document | Size | Added (UTC) | Passages |", "| # | 文档 | 大小 | 加入时间 (UTC) | 段落 |"),

    # a file that could not be read
    "file.unreadable": ("{name} could not be read ({error}).", "{name} 无法读取（{error}）。"),
    "file.refused": ("{name} {why}.", "{name} {why}。"),
    "file.too_many": ("{count} files are attached, but at most {most} go with one message.",
                      "附上了 {count} 个文件，但一条消息最多只能带 {most} 个。"),
    "file.not_sent": ("Your message was not sent to the model: {problems} Attach {accepted}, and send it again.",
                      "你的消息没有发给模型：{problems} 请附上{accepted}，然后重新发送。"),
    "file.accepted": ("text files ({extensions}, or any other text type){pdf}, at most {files} files of {mb} MB each",
                      "文本文件（{extensions} 或其他任何文本类型）{pdf}，最多 {files} 个，每个不超过 {mb} MB"),
    "file.accepted_pdf": (" and PDFs with text", "以及含文字的 PDF"),

    "file.binary": ("is not a text file (it holds binary data)", "不是文本文件（含有二进制数据）"),
    "file.encoding": ("is not a text file (its bytes are no known text encoding)",
                      "不是文本文件（字节不属于任何已知的文本编码）"),
    "file.empty": ("is empty (0 bytes); attach a file with text in it", "是空文件（0 字节）；请附上含有文字的文件"),
    "file.too_long": ("holds more than {size} of text; attach the part you need",
                      "的文字超过 {size}；请只附上你需要的部分"),
    "pdf.slow": ("took too long to read: more than {total:g} s{where}, as a PDF built to be slow or a very large one "
                 "does; nothing of it was used. Attach its text as a .txt file, or a PDF of the pages you need",
                 "读取耗时过长：超过 {total:g} 秒{where}，刻意构造的慢 PDF 或特别大的 PDF 会这样；其内容均未使用。"
                 "请把它的文字存成 .txt 文件附上，或只附上所需页面的 PDF"),
    "pdf.slow_page": (" (page {page} alone took more than {page_s:g} s)", "（仅第 {page} 页就超过了 {page_s:g} 秒）"),
    "pdf.too_long": ("holds more than {size} of text (seen by page {page}); attach the part you need",
                     "的文字超过 {size}（读到第 {page} 页时）；请只附上你需要的部分"),
    "pdf.locked": ("is locked with a password; attach a copy without one", "设有密码；请附上没有密码的副本"),
    "pdf.damaged": ("could not be read as a PDF ({error})", "无法作为 PDF 读取（{error}）"),
    "pdf.no_text": ("is a PDF without text (a scan?); this model reads text only",
                    "是没有文字的 PDF（扫描件？）；这个模型只能读文字"),
    "message.not_text": ("*Your message held characters that are not text (lone UTF-16 surrogates, which a broken "
                         "paste or a client can send): each was replaced by �, in what the model read and in the "
                         "history; the rest of the message is as you wrote it.*",
                         "*你的消息含有不是文本的字符（孤立的 UTF-16 代理项，粘贴出错或某些客户端会发出）：每个都已"
                         "替换为 �，模型读到的和历史中保存的都是如此；消息的其余部分保持原样。*"),

    # a chat's export and import
    "export.nothing": ("This chat has no answered messages to export yet: ask something first, then export it.",
                       "这个对话还没有可导出的问答：请先提问，再导出。"),
    "export.done": ("⬇️ This chat ({count} messages) as Markdown to read and as JSON in the OpenAI messages format "
                    "(the Import command takes it back).",
                    "⬇️ 这个对话（{count} 条消息）：供阅读的 Markdown，以及 OpenAI 消息格式的 JSON（可用“导入”"
                    "命令再导入）。"),
    "import.no_history": ("Importing needs the chat history, which is off on this server (CHAT_HISTORY=false): turn it "
                          "on and restart, then import again.",
                          "导入需要对话历史，而本服务器关闭了历史（CHAT_HISTORY=false）：请开启并重启，然后重新导入。"),
    "import.ask": ("Drop a chat's JSON file here (the app's Export, or a list of OpenAI messages), or press the "
                   "button to pick it: it becomes a new chat.",
                   "把对话的 JSON 文件拖到这里（本应用导出的文件，或 OpenAI 消息列表），或点按钮选择："
                   "它会成为一个新对话。"),
    "file.no_time": ("it was not read: the message's earlier files used up the {total:g} s that all the files of one "
                     "message may take to read. Send it in a message of its own, or attach its text instead",
                     "未读取：同一条消息中前面的文件已用完一条消息的全部文件可用的 {total:g} 秒读取时间。"
                     "请单独发送它，或改为附上它的文字"),
    "file.ask_lost": ("The upload box was answered, but no file arrived with the answer (the upload may have failed): "
                      "press the chip again and pick the file once more.",
                      "上传框收到了回应，但没有随之到达的文件（上传可能失败了）：请再点一次并重新选择文件。"),
    "file.ask_gave_up": ("No file came in {minutes} minutes, so the upload box was closed: press the chip again "
                         "when the file is at hand.",
                         "{minutes} 分钟内没有收到文件，上传框已关闭：准备好文件后再点一次。"),
    "import.attach_one": ("Attach one chat's JSON file to the Import command (the app's Export, or a list of OpenAI "
                          "messages), and send it again.",
                          "请在“导入”命令上附上一个对话的 JSON 文件（本应用导出的文件，或 OpenAI 消息列表），"
                          "然后重新发送。"),
    "import.refused": ("Nothing was imported: {why}", "未导入任何内容：{why}"),
    "import.not_json": ("{name} is not a JSON file. {attach}", "{name} 不是 JSON 文件。{attach}"),
    "import.too_large": ("{name} is larger than {mb} MB: keep the chat's latest messages in it, and import it again.",
                         "{name} 超过了 {mb} MB：只保留对话中最近的消息，再重新导入。"),
    "import.title": ("{title} (imported)", "{title}（导入）"),
    "import.done": ("✅ Imported {count} messages as a new chat, “{title}”: [open it](/thread/{thread}), or find it in "
                    "the history's list. It goes on from its last message.",
                    "✅ 已将 {count} 条消息导入为新对话“{title}”：[打开它](/thread/{thread})，或在历史列表中找到它。"
                    "对话会从最后一条消息接着进行。"),
    "import.left_out": ("\n\nLeft out, the chat uses this app's defaults instead: {dropped}. Change them in the "
                        "settings sidebar once the chat is open.",
                        "\n\n以下内容未导入，对话改用本应用的默认值：{dropped}。打开对话后可在设置侧栏中修改。"),
}
