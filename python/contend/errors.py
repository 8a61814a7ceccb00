"""The one exception type a user sees: bad input, reported as a single line and exit code 2."""


class UserError(ValueError):
    """Input the user can fix (a file, a parameter, a command line).

    A ``ValueError``, so API callers can catch it as one. The message is complete on its own: it
    names the file, line and column where that applies, e.g. ``sched.goal:12:5: undefined label 'l7'``.
    The CLI prints it and exits with code 2.
    """
