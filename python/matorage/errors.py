"""matorage.Error and its subclasses, one per libmatorage status code.

Every error carries .code (the library's negative status, e.g. -4 for not found) and
.message (the one-line text naming the object involved).  They pickle, so an error raised
in a torch DataLoader worker is re-created in the training process with its message, and
they also derive from the matching built-in exception (NotFound is a LookupError,
InvalidArgument a ValueError, ...) for code that catches those.
"""


class Error(Exception):
    """A libmatorage error: .code is the negative status code, .message the details."""

    code = -3

    def __init__(self, message="", code=None):
        super().__init__(message)
        self.message = str(message)
        if code is not None:
            self.code = int(code)

    def __reduce__(self):
        return (type(self), (self.message, self.code))

    def __str__(self):
        return self.message


class OutOfMemory(Error, MemoryError):
    """MT_ENOMEM."""
    code = -1


class InvalidArgument(Error, ValueError):
    """MT_EINVAL: a bad argument, option or resume token."""
    code = -2


class IOFailure(Error, OSError):
    """MT_EIO: reading or writing failed."""
    code = -3

    def __init__(self, message="", code=None):
        Error.__init__(self, message, code)

    def __str__(self):
        return self.message


class NotFound(Error, LookupError):
    """MT_ENOTFOUND: no such store, dataset, version or attribute."""
    code = -4


class AlreadyExists(Error):
    """MT_EEXIST: the version (or remote) exists already."""
    code = -5


class Corrupt(Error):
    """MT_ECORRUPT: stored data failed its checksum."""
    code = -6


class FormatError(Error):
    """MT_EFORMAT: malformed or unsupported format."""
    code = -7


class Unsupported(Error):
    """MT_EUNSUPPORTED: not supported (e.g. a dtype the format has no code for)."""
    code = -11


class OutOfRange(Error, IndexError):
    """MT_ERANGE: rows or positions past the end."""
    code = -12


class StateError(Error):
    """MT_ESTATE: the operation is not valid in this state (e.g. a closed writer)."""
    code = -13


class AccessDenied(Error, PermissionError):
    """MT_EAUTH: the store refused the credentials."""
    code = -14

    def __init__(self, message="", code=None):
        Error.__init__(self, message, code)

    def __str__(self):
        return self.message


class NetworkError(Error, ConnectionError):
    """MT_ENET: the store could not be reached."""
    code = -15

    def __init__(self, message="", code=None):
        Error.__init__(self, message, code)

    def __str__(self):
        return self.message


class LibraryNotFound(Error, ImportError):
    """libmatorage could not be loaded; set MATORAGE_LIB to its path."""
    code = -11


_BY_CODE = {c.code: c for c in (OutOfMemory, InvalidArgument, IOFailure, NotFound,
                                AlreadyExists, Corrupt, FormatError, Unsupported, OutOfRange,
                                StateError, AccessDenied, NetworkError)}


def error_from(code, message):
    """The Error subclass for `code`, made with `message`."""
    cls = _BY_CODE.get(code, Error)
    return cls(message, code)


__all__ = ["Error", "error_from", "LibraryNotFound"] + [c.__name__ for c in _BY_CODE.values()]
