"""Errors the library raises for input it cannot use."""


class InputError(ValueError):
    """Input that cannot be ingested as given. The message says what, where and how to fix it."""


def excerpt(text: str, limit: int = 40) -> str:
    """At most `limit` characters of input text for an error message, each character that is not
    printable (a control character, U+FFFD for an undecodable byte) shown as '?': a message
    quotes the input without echoing binary data."""
    shown = "".join(c if c.isprintable() and c != "\ufffd" else "?" for c in text[:limit])
    return shown + ("..." if len(text) > limit else "")
