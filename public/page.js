// The app's additions to Chainlit's page, one concern per file (Chainlit takes a single custom script).
import "/public/status-chip.js";
import "/public/server-restart.js";
import "/public/thread-links.js";
import "/public/library-names.js";
import "/public/start-line.js";
import "/public/settings-reset.js";
import "/public/context-line.js";
import "/public/upload-refusal.js";
import "/public/local-user.js";
