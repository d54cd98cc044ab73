"""The words of the user's files: the library, attachments, and a chat's export and import, in English."""

TEXTS = {
    # the library (the Library chip, and a question answered from it)
    "library.no_history": ("The library is kept in the chat history's database, which is off on this server "
                           "(CHAT_HISTORY=false): turn it on and restart to keep documents."),
    "library.how": ("Press **Add documents** (text, code, Markdown, CSV, JSON or PDF), or attach files and press the "
                    "**Library** chip. Turn on *Answer from my library* in the settings, or write @name in a message "
                    "to answer it from those documents."),
    "library.add_button": "Add documents",
    "library.add_tip": "Pick files to add to your library",
    "library.ask": "Drop the files to add to your library here, or press the button to pick them.",
    "library.nothing_found": "Nothing in your library matched this message: it was answered without the library.",
    "library.no_room": ("Your library's passages did not fit the context beside this message: it was answered "
                        "without them (a shorter message or a lower 'max new tokens' leaves them room)."),
    "library.sources": "*From your library{note}: {count}, about {tokens} tokens — {places}*",
    "library.note": " ({note})",
    "library.passages_one": "{count} passage",
    "library.passages_many": "{count} passages",
    "library.place": "[{number}] {document}, passage {position}",  # a source: its number, document and place
    "library.opening": "nothing in {documents} matched your other words, so the reply draws on its start",
    "library.unknown_one": "*{names} names no document in your library, so it stayed part of your message.*",
    "library.unknown_many": "*{names} name no document in your library, so they stayed part of your message.*",
    "library.added": "Added to your library: {added}.",
    "library.added_one": "**{name}** ({size}, {count})",
    "library.replaced_one": "**{name}** ({size}, {count}) in place of the earlier copy of that name",
    "library.not_added": "Not added: {problems} Attach {accepted}.",
    "library.turn_on": "Turn on *Answer from my library* in the settings to answer from it.",
    "library.db_failed": ("{name} was not added: the history database failed ({error}); nothing of it was kept, try "
                          "again."),
    "library.no_such": ("No document in your library is '{which}': send `remove` and a document's number or name "
                        "from the list (the Library command lists them)."),
    "library.buttons": "Press a document's button to remove it from your library.",
    "library.remove_button": "Remove {n}: {name}",
    "library.remove_tip": "Remove {name} and its passages from your library",
    "library.remove_word": "remove",  # typed beside the Library chip, in any language
    "library.already_gone": "That document is no longer in your library: list it again with the Library command.",
    "library.remove_sure": ("Remove **{name}** from your library? Questions will no longer find its passages, and a "
                            "removed document does not come back (add its file again to have it). Press the button "
                            "to remove it; do nothing to keep it."),
    "library.remove_sure_button": "Yes, remove {name}",
    "library.removed": "Removed **{name}** from your library.",
    "library.empty": "Your library is empty. {how}",
    "library.list": "Documents in your library: {count}\n\n{table}\n\n{how}",
    "library.head": "| # | Document | Size | Added (UTC) | Passages |",

    # a file that could not be read
    "file.unreadable": "{name} could not be read ({error}).",
    "file.refused": "{name} {why}.",
    "file.too_many": "{count} files are attached, but at most {most} go with one message.",
    "file.not_sent": "Your message was not sent to the model: {problems} Attach {accepted}, and send it again.",
    "file.accepted": "text files ({extensions}, or any other text type){pdf}, at most {files} files of {mb} MB each",
    "file.accepted_pdf": " and PDFs with text",

    "file.binary": "is not a text file (it holds binary data)",
    "file.encoding": "is not a text file (its bytes are no known text encoding)",
    "file.empty": "is empty (0 bytes); attach a file with text in it",
    "file.too_long": "holds more than {size} of text; attach the part you need",
    "pdf.slow": ("took too long to read: more than {total:g} s{where}, as a PDF built to be slow or a very large one "
                 "does; nothing of it was used. Attach its text as a .txt file, or a PDF of the pages you need"),
    "pdf.slow_page": " (page {page} alone took more than {page_s:g} s)",
    "pdf.too_long": "holds more than {size} of text (seen by page {page}); attach the part you need",
    "pdf.locked": "is locked with a password; attach a copy without one",
    "pdf.damaged": "could not be read as a PDF ({error})",
    "pdf.no_text": "is a PDF without text (a scan?); this model reads text only",
    "message.not_text": ("*Your message held characters that are not text (lone UTF-16 surrogates, which a broken "
                         "paste or a client can send): each was replaced by �, in what the model read and in the "
                         "history; the rest of the message is as you wrote it.*"),

    # a chat's export and import
    "export.nothing": "This chat has no answered messages to export yet: ask something first, then export it.",
    "export.done": ("⬇️ This chat ({count} messages) as Markdown to read and as JSON in the OpenAI messages format "
                    "(the Import command takes it back)."),
    "export.all": "Export all my chats",
    "export.all.tip": "Every chat in your history, each as Markdown and JSON, in one zip file",
    "export.all.done": ("⬇️ All your chats ({count}), each as Markdown and as JSON in the OpenAI messages format, in "
                        "one zip file (the Import command takes each JSON back)."),
    "export.all.nothing": "Your history holds no chat with an answered message yet: nothing to export.",
    "export.all.no_history": ("Exporting all chats needs the chat history, which is off on this server "
                              "(CHAT_HISTORY=false): only this chat can be exported, with the Export command."),
    "doing.exporting all your chats": "exporting all your chats",
    "import.no_history": ("Importing needs the chat history, which is off on this server (CHAT_HISTORY=false): turn "
                          "it on and restart, then import again."),
    "import.ask": ("Drop a chat's JSON file here (the app's Export, or a list of OpenAI messages), or press the "
                   "button to pick it: it becomes a new chat."),
    "file.no_time": ("it was not read: the message's earlier files used up the {total:g} s that all the files of one "
                     "message may take to read. Send it in a message of its own, or attach its text instead"),
    "file.ask_lost": ("The upload box was answered, but no file arrived with the answer (the upload may have "
                      "failed): press the chip again and pick the file once more."),
    "file.ask_gave_up": ("No file came in {minutes} minutes, so the upload box was closed: press the chip again when "
                         "the file is at hand."),
    "import.attach_one": ("Attach one chat's JSON file to the Import command (the app's Export, or a list of OpenAI "
                          "messages), and send it again."),
    "import.file_refused": "{name}: {why}.",  # why: the history's words (history/words/, `import.` keys)
    "import.setting_left_out": "{name} ({why})",  # a setting of an import the sidebar refused
    "import.refused": "Nothing was imported: {why}",
    "import.not_json": "{name} is not a JSON file. {attach}",
    "import.too_large": "{name} is larger than {mb} MB: keep the chat's latest messages in it, and import it again.",
    "import.title": "{title} (imported)",
    "import.done": ("✅ Imported {count} messages as a new chat, “{title}”: [open it](/thread/{thread}), or find it "
                    "in the history's list. It goes on from its last message."),
    "import.left_out": ("\n\nLeft out, the chat uses this app's defaults instead: {dropped}. Change them in the "
                        "settings sidebar once the chat is open."),
}
