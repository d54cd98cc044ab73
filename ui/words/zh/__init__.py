"""The app's words in Simplified Chinese (a browser that asks for any zh-* language gets them)."""
