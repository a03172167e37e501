"""PyPTO's exception classes (``pypto.error``), for programs that catch them.

Every error this implementation reports to a user is a ``pypto.UserError``, which is a
``FeError`` (a frontend error: bad arguments, shapes, dtypes, at trace time) and a
``PyptoRtError`` (raised while a call runs) at once, and a ``ValueError``; so ``except
pypto.error.FeError`` and ``except pypto.error.PyptoRtError`` both catch it. ``PassError``,
``VerifyError`` and ``ParserError`` exist for ``except`` clauses; nothing raises them here
(pass options and verify report UserErrors; Python syntax the tracer cannot run is a UserError
too). An internal failure is ``pypto.InternalError`` (a RuntimeError), a bug to report."""

from .._core import (FeError, InternalError, ParserError, PassError, PyptoError, PyptoGeneralError, PyptoRtError,
                     UserError, VerifyError)

from typing import Dict, Optional

__all__ = ["PyptoError", "PyptoGeneralError", "FeError", "PyptoRtError", "PassError", "VerifyError", "ParserError",
           "UserError", "InternalError", "PartialCodegenError"]


class PartialCodegenError(UserError):
    """A program that cannot be turned into code (hw-native-sys pypto's
    ``pypto.backend.pto_backend.PartialCodegenError``); ``files`` holds what was generated. Raised
    for a ``pl.Out`` parameter the program never writes (the value never reaches a store)."""

    def __init__(self, message: str, files: Optional[Dict[str, str]] = None) -> None:
        super().__init__(message)
        self.files = dict(files or {})
