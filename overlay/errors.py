"""Errors the library raises for input it cannot use."""


class InputError(ValueError):
    """Input that cannot be ingested as given. The message says what, where and how to fix it."""
