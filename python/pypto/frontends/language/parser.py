"""``pl.parser``: hw-native-sys pypto's parser package, as the names it offers: the decorators
(``function``, ``program``, ``inline``, ``InlineFunction``) and text parsing (``parse``,
``loads``, ``parse_program``, ``loads_program``). Functions here are traced rather than parsed
(docs/porting.md)."""

from ._names_extra import InlineFunction, inline
from ._parse import loads, loads_program, parse, parse_program
from ._program import function
from ._program_class import program

__all__ = ["InlineFunction", "function", "inline", "loads", "loads_program", "parse", "parse_program", "program"]
