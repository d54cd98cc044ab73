"""The app's words in English: the language every other one falls back to, and whose keys every other has."""
