"""The words of a user's own API keys (the Keys chip) and of the tokens used (the Usage chip), in English."""

TEXTS = {
    "command.Keys": "Keys",
    "command.Keys.tip": "Your API keys: make, list and revoke them",
    "command.Usage": "Usage",
    "command.Usage.tip": "Tokens used per day, by chats and the API",

    # the words typed beside the Keys chip (understood in every language, whatever the chat's)
    "keys.new_word": "new",
    "keys.revoke_word": "revoke",

    "keys.no_history": ("API keys are kept in the chat history's database, which is off on this server "
                        "(CHAT_HISTORY=false): the API takes only the server's CHAT_API_KEY there."),
    "keys.no_api": ("This server does not serve the OpenAI-compatible API (CHAT_API=false, or the model runs on "
                    "another vLLM server): a key of yours would open nothing here."),
    "keys.how": ("Press **New key**, or send `new` and a name beside the **Keys** chip to name it (e.g. `new laptop "
                 "script`); a key's Revoke button (or `revoke` and its number or name) revokes it. A program sends "
                 "its key as `Authorization: Bearer <key>` (the `openai` client's `api_key`) to /v1 on this server; "
                 "it then runs as you: your library, your usage."),
    "keys.new_button": "New key",
    "keys.new_tip": "Make a key named \"key 1\", \"key 2\" ... (`new NAME` beside the chip names it)",
    "keys.default_name": "key {n}",
    "keys.revoke_button": "Revoke {n}: {name}",
    "keys.revoke_tip": "Revoke {name}: every request with it is refused from now on",
    "keys.already_gone": ("That key is no longer one of yours (revoked already, perhaps in another tab): press the "
                          "Keys chip for the list as it is now."),
    "keys.none": "You have no API keys. {how}",
    "keys.list": "Your API keys ({count}):\n\n{table}\n\n{how}",
    "keys.head": "| # | Name | Made (UTC) | Last used (UTC) |",
    "keys.never": "never",
    "keys.made": ("Your new API key, named “{name}”:\n\n`{new_key}`\n\nCopy it now: it is shown only this once (the "
                  "server keeps only its hash). Revoke it with its button in the **Keys** chip's list."),
    "keys.not_made": "No key was made: {why}",
    "keys.db_failed": "No key was made: the history database failed ({error}); try again.",
    "keys.no_such": ("None of your keys is '{which}': send `revoke` and a key's number or name from the list (the "
                     "**Keys** chip alone lists them)."),
    "keys.revoked": "Revoked **{name}**: every request with it is refused from now on.",

    "usage.no_history": ("Usage is kept in the chat history's database, which is off on this server "
                         "(CHAT_HISTORY=false)."),
    "usage.none": "No tokens used in the last {days} days{whose}.",
    "usage.yours": "Your usage in the last {days} days (UTC):\n\n{table}",
    "usage.everyone": "Everyone's usage in the last {days} days (UTC), as this server's operator:\n\n{table}",
    "usage.by_anyone": " by anyone",
    "usage.head": "| Day | Source | Requests | Prompt tokens | Cached | Reply tokens |",
    "usage.head_users": "| User | Day | Source | Requests | Prompt tokens | Cached | Reply tokens |",
    "usage.chat": "chat",
    "usage.api": "API",
    "usage.total": "**total**",
}
