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

__all__ = ["PyptoError", "PyptoGeneralError", "FeError", "PyptoRtError", "PassError", "VerifyError", "ParserError",
           "UserError", "InternalError"]
