"""Exceptions the CLI maps to exit codes (library code raises, only main() exits)."""


class UsageError(Exception):
    """Bad user input: the CLI prints the one-line message and exits 2."""


class NothingRan(Exception):
    """No case could run at all: exit 1."""
