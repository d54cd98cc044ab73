"""The words of the chips, the starters, a reply's notes and cost line, the engine's start and status, in English."""

TEXTS = {
    # the chips: their names (shown on them) and what each does (their tooltip)
    "command.Status": "Status",
    "command.Export": "Export",
    "command.Import": "Import",
    "command.Library": "Library",
    "command.Status.tip": "Show the engine status",
    "command.Export.tip": "Download this chat as Markdown and JSON",
    "command.Import.tip": "Pick a chat's JSON file to make it a new chat",
    "command.Library.tip": "Your documents: add, see and remove them",

    # the starters on an empty chat: a label, and the message it sends
    "starter.kv": "Explain KV caching",
    "starter.kv.ask": "Explain in three sentences what a KV cache is.",
    "starter.python": "Write Python",
    "starter.python.ask": "Write a Python function that checks if a word is a palindrome.",
    "starter.hello": "你好",  # shows an English reader that the model speaks Chinese too
    "starter.hello.ask": "用一句话介绍你自己。",
    "starter.day": "Plan a day",
    "starter.day.ask": "Plan a relaxed Saturday in Beijing, in a short list.",

    # the tools under the latest reply
    "continue_reply": "Continue",
    "continue_reply.tip": "Go on writing this reply from where it stopped",
    "regenerate_reply": "Regenerate",
    "regenerate_reply.tip": "Another answer to the same question, in place of this one",
    "tools.busy": "A reply is still being written: wait for it to end, or press Stop, then try again.",
    "tools.switching": ("The engine is starting or switching its memory preset: try again once the note above says "
                        "it is ready."),
    "tools.not_latest": ("Only the chat's latest reply can be regenerated or continued: use the buttons under the "
                         "latest reply, or send a new message."),
    "tools.earlier_version": ("Only the latest answer of a reply can be continued, and this reply shows answer {at} of "
                              "{of}: press “next ▶” until it shows {of} / {of}, then Continue. Nothing was changed."),
    "tools.not_regenerated": "Not regenerated: {why} The reply above is kept as it was.",

    # a regenerated reply's earlier answers (ui/versions.py)
    "versions.counter": "*{at} / {of}*",
    "reply_version_previous": "◀ previous",
    "reply_version_previous.tip": "Show answer {at} of {of}",
    "reply_version_next": "next ▶",
    "reply_version_next.tip": "Show answer {at} of {of}",
    "versions.gone": "That answer is no longer kept: the reply has been replaced or its chat reopened.",

    # an edited question's branches: the question as it was and the turns after it (ui/branches.py)
    "question_branch_previous": "◀ Question {at} / {of}",
    "question_branch_previous.tip": "Show version {to} of {of} of the question above, with the replies that followed",
    "question_branch_next": "Question {at} / {of} ▶",
    "question_branch_next.tip": "Show version {to} of {of} of the question above, with the replies that followed",
    "branches.gone": ("That version of the question is no longer here: the chat has changed since. Use the buttons "
                      "under its reply."),
    "branches.kept": "This question was edited: its earlier versions are kept.",
    "doing.showing another version of the question": "showing another version of the question",

    # a reply's notes and its cost line
    "reply.stopped": "*Stopped.*",
    "reply.busy": "⏳ Every slot of the engine is busy; your reply starts as soon as one frees up.",
    "reply.context_full": ("*The reply filled the context ({context} tokens with the chat so far): start a new chat, "
                           "or pick a preset with a longer context.*"),
    "reply.max_tokens": "*The reply hit the 'max new tokens' limit ({max_tokens}).*",
    "reply.dropped": "*The {count} oldest messages no longer fit the context and were left out.*",
    "reply.cut": ("*{name}: {left_out:,} of {total:,} tokens were left out: the context holds {context:,} tokens "
                  "with the reply.*"),
    "cost.first_token": "first token {ms:.0f} ms",
    "cost.rate": "{rate:.0f} tok/s",
    "cost.tokens": "{prompt} prompt + {reply} reply tokens",
    "cost.cached": "{cached} cached",
    "context.fill": "context {used:,} / {context:,} tokens",
    "context.full": "the next message will drop the oldest turns",
    "context.fill_draft": "context {used:,} + {draft:,} in your message / {context:,} tokens",
    "message.empty": "Your message is empty: type something to ask.",
    "message.oversized": ("Your message was {mb:.1f} MB, more than the 1 MB one message can carry, so it was not "
                          "sent to the model. Its text is still shown above to copy from: send it in parts, or "
                          "attach it as text files (1 MB each)."),

    # the engine's start, as a chat sees it
    "start.starting": "Starting the model engine",
    "start.waking": "Waking the model engine",
    "start.retry": "Try again",
    "progress": "{mark} {title}: {stage} ({seconds:.0f} s)",
    "progress.notice": "{line}. {notice}.",  # what the engine's start tells beside its progress
    "notice.Serving {model} from {url}": "Serving {model} from {url}",
    "stage.Waking the engine": "Waking the engine",
    "stage.Checking the device and the model": "Checking the device and the model",
    "stage.Warming up": "Warming up",
    "stage.Ready": "Ready",
    "stage.Checking the preset": "Checking the preset",
    "stage.Stopping the running engine": "Stopping the running engine",
    "stage.loading": "Loading {model} ({preset} preset)",
    "stage.already": "'{name}' already runs",
    "stage.connecting": "Connecting to the vLLM server at {url}",
    "stage.download_lookup": "Downloading {model}: looking up its files",
    "stage.download": "Downloading {model}: {done} of {total} ({percent}%)",
    "stage.download_rate": "Downloading {model}: {done} of {total} ({percent}%), {rate}, {left} left",

    # a memory preset switch, in the chat that asked and in the others
    "switch.note": "⏳ Switching the memory preset to '{name}'…",
    "switch.title": "Switching to '{name}'",
    "switch.others": "🔁 Another chat is switching the memory preset to '{name}'; replies pause until it is ready.",
    "switch.done": "✅ The memory preset is now '{name}'.",
    "switch.failed": "The preset switch failed; '{name}' is running.",

    # a chat whose reply was cut off by a server that stopped, or whose thread was deleted from another tab
    "session.cut_off": ("⚠️ The server that was writing this chat's last reply stopped, so that reply ends where it "
                        "was cut off (the history keeps it so). The chat goes on here: send your next message as "
                        "usual."),
    "session.deleted": "🗑️ This chat was deleted, so its reply was stopped. What you write next starts a new chat.",

    # the status table (the Status chip)
    "status.title": "**Engine status**",
    "status.head": "| Engine | Now |",
    "status.state": "State",
    "status.device": "Device",
    "status.preset": "Preset",
    "status.context": "Context",
    "status.context_value": "{tokens} tokens",
    "status.memory": "Memory used / the preset's size",
    "status.kv": "KV cache in use",
    "device.CPU ({cores} cores)": "CPU ({cores} cores)",
    "device.not started": "not started",
    "device.{gpus} × {name} (data parallel)": "{gpus} × {name} (data parallel)",
    "device.{gpus} × {name} (tensor parallel)": "{gpus} × {name} (tensor parallel)",
    "purpose.the vLLM server at {url}": "the vLLM server at {url}",  # a remote engine's, in place of a preset's
    "status.requests": "Requests running / queued",
    "status.sequences": "Sequences from chats / the API",
    "status.share": "Each user's share / requests waiting for it",
    "status.asleep": " since {clock} ({minutes} min ago); the next message wakes it",
    "state.stopped": "stopped",
    "state.starting": "starting",
    "state.ready": "ready",
    "state.switching": "switching",
    "state.falling asleep": "falling asleep",
    "state.asleep": "asleep",
    "state.waking": "waking",
    "state.failed": "failed",
    "state.unreachable": "unreachable",
}
