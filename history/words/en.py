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
}
