"""The history's notices in English."""

TEXTS = {
    "cut_off": "*Cut off: the server stopped while this reply was being written.*",  # ends a stored reply
    "not_saved": ("This message was not saved: it carries the id of a message in another chat. Reload the page and "
                  "send it again."),
    "failing.text": ("⚠️ This chat could not be saved: the history database ({where}) could not take its text "
                     "(“{reason}”). The chat goes on; what is shown here is missing from the history."),
    "failing": ("⚠️ This chat could not be saved: the history database ({where}) said “{reason}”. The chat goes on; "
                "turns written while this lasts are missing from the history. Free disk space or fix the database's "
                "permissions, and saving resumes by itself."),

    # an import file the history will not take (history/exchange.py), after "Nothing was imported: <file>: "
    "import.not_utf8": ("the file is not UTF-8 text (byte {position:,} cannot be read as UTF-8): save it as UTF-8 JSON "
                        "and import it again"),
    "import.not_json": ("the file is not valid JSON nor JSON Lines ({detail}: line {line}, column {column}): export "
                        "the chat again, or fix the file where the error points"),
    "import.too_deep": ("the file's JSON is nested too deeply to read (arrays or objects inside each other hundreds of "
                        "levels down), where a chat needs a few: export the chat again, or fix the file"),
    "import.no_messages": ('it holds no messages: the file must be a list of {{"role", "content"}} messages, or an '
                           'object with such a list under "messages"'),
    "import.too_many": ("it holds {count:,} messages, more than the {most:,} an import takes: split it into several "
                        "files, or keep its latest messages"),
    "import.late_system": ("message {number} is a system message after the chat began: only the first message may be "
                           "the system prompt; remove it or make it a user message"),
    "import.reply_in_a_row": ("message {number} is an assistant message that answers no user message (a second "
                              "assistant message in a row): join the two replies or remove one"),
    "import.reply_first": ("message {number} is an assistant message that answers no user message: a chat begins with "
                           "a user's message; add the question it answers before it, or remove it"),
    "import.no_user": "it holds a system prompt but no user message: add the chat's messages",
    "import.not_object": 'message {number} is not an object: each must be {{"role": ..., "content": ...}}',
    "import.role": ("message {number} has the role {role}, which this chat does not take: only system, user, "
                    "assistant import (tool calls and other roles do not); remove it or change its role"),
    "import.not_text_part": ("message {number} has a part that is not text (an image, audio...): only text imports; "
                             "remove that part"),
    "import.text_not_string": ('message {number} has a text part whose "text" is not a string: give each part its text '
                               'as a string, e.g. {{"type": "text", "text": "Hello"}}'),
    "import.no_content": 'message {number} has no text content: give it a "content" string',
    "import.too_long": ("message {number} is larger than the context ({chars:,} characters; the model reads at most "
                        "{tokens:,} tokens at once): shorten it, or pick a preset with a longer context"),
    # what an import left out, the chat then using the app's defaults
    "import.dropped.title": "its title (not text)",
    "import.dropped.sampling": "its sampling settings (not an object of names and values)",
    # a document the library will not take (history/library.py), after "<file> "
    "library.full": ("your library holds {count} documents, the most it keeps; remove one you no longer need (Library, "
                     "then remove) and add this one again"),
    "library.too_much_text": ("your library would hold more than {mb} MB of text with it; remove a document you no "
                              "longer need, or add the part of this one you need"),
    "library.no_text": "holds no text to search",
    # an API key that cannot be made (history/keys.py)
    "keys.no_name": "A key needs a name that says what uses it, e.g. `new laptop-script`.",
    "keys.name_too_long": "A key's name may be at most {most} characters; this one has {size}.",
    "keys.unprintable": "A key's name may hold only printable characters: name it with words, e.g. `new laptop`.",
    "keys.too_many": "You have {most} keys, the most one user may have: revoke one you no longer use.",
    "keys.not_stored": "The key could not be stored: the history database did not keep it. Try again.",
    # an export's Markdown (history/exchange.as_markdown)
    "export.untitled": "Chat",
    "export.model": "Model",
    "export.preset": "Memory preset",
    "export.sampling": "Sampling",
    "export.system_prompt": "System prompt",
    "export.you": "You",
}
