"""Errors a user can cause: shown as one line, without a traceback."""


class KafkalabError(Exception):
    """A problem the user can fix; the message says how."""
