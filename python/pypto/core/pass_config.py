"""PyPTO's per-pass configuration: ``set_pass_config(strategy, identifier, key, value)`` and the
defaults for every pass. The one key PyPTO documents, ``PassConfigKey.KEY_DUMP_GRAPH``, dumps a
pass's graph: here it acts on the passes of this compiler (``tensor_graph``, ``infer_shapes``,
``expand_tiles``, ``partition``, ``fuse_instructions``, ``allocate_buffers``,
``build_exec_graph``; ``ExpandTiles`` spells ``expand_tiles``) through the debug option
``dump_pass_graph``. Identifiers of PyPTO's own passes that have no counterpart here are kept and
recorded in ``options.json`` of the dump directory. The strategy (PyPTO's ``"PVC2_OOO"``) names
PyPTO's pass list; this compiler has one pipeline, so every strategy configures it."""

from __future__ import annotations

import enum
import re
from typing import Dict, Tuple

import pypto._core as _core

__all__ = ["PassConfigs", "PassConfigKey", "get_pass_default_config", "set_pass_default_config", "get_pass_config",
           "set_pass_config", "get_pass_configs"]

PASSES = tuple(_core.pass_names())  # the pipeline's steps, as src/passes/pipeline.cpp lists them


class PassConfigKey(enum.Enum):
    KEY_DUMP_GRAPH = 0


class PassConfigs:
    """The configuration of one pass (read-only), as PyPTO's ``get_pass_configs`` returns it."""

    def __init__(self, dump_graph: bool) -> None:
        self._dump = dump_graph

    @property
    def dumpGraph(self) -> bool:  # noqa: N802 - PyPTO's name
        return self._dump

    @property
    def printGraph(self) -> bool:  # noqa: N802
        return self._dump

    dumpPassTimeCost = preCheck = postCheck = disablePass = healthCheck = property(lambda self: False)  # noqa: N815

    def __repr__(self) -> str:
        return f"PassConfigs(dumpGraph={self._dump})"


_defaults: Dict[PassConfigKey, bool] = {}
_configs: Dict[Tuple[str, str, PassConfigKey], bool] = {}


def _check(fn: str, key: object, value: object, what: str = "value") -> None:
    if not isinstance(key, PassConfigKey):
        raise _core.UserError(f"pypto.{fn}: key must be a pypto.PassConfigKey, got {key!r}")
    if not isinstance(value, bool):
        raise _core.UserError(f"pypto.{fn}: {what} must be True or False, got {value!r}")


def _names(fn: str, strategy: object, identifier: object) -> Tuple[str, str]:
    if not isinstance(strategy, str) or not isinstance(identifier, str) or not identifier:
        raise _core.UserError(f"pypto.{fn}: strategy and identifier must be strings (a strategy such as 'PVC2_OOO', "
                              f"a pass name), got {strategy!r}, {identifier!r}")
    return strategy, identifier


def pass_name(identifier: str) -> str:
    """This compiler's name for a pass identifier: ``ExpandTiles`` -> ``expand_tiles``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", identifier).lower() if identifier[:1].isupper() else identifier


def set_pass_default_config(key: PassConfigKey, value: bool) -> None:
    """The value of ``key`` for every pass without its own (KEY_DUMP_GRAPH: dump every pass)."""
    _check("set_pass_default_config", key, value)
    _defaults[key] = value
    _changed()


def get_pass_default_config(key: PassConfigKey, default_value: bool) -> bool:
    _check("get_pass_default_config", key, default_value, "default_value")
    return _defaults.get(key, default_value)


def set_pass_config(strategy: str, identifier: str, key: PassConfigKey, value: bool) -> None:
    """The value of ``key`` for the pass ``identifier`` (of every strategy here)."""
    strategy, identifier = _names("set_pass_config", strategy, identifier)
    _check("set_pass_config", key, value)
    _configs[(strategy, identifier, key)] = value
    _changed()


def get_pass_config(strategy: str, identifier: str, key: PassConfigKey, default_value: bool) -> bool:
    strategy, identifier = _names("get_pass_config", strategy, identifier)
    _check("get_pass_config", key, default_value, "default_value")
    return _configs.get((strategy, identifier, key), _defaults.get(key, default_value))


def get_pass_configs(strategy: str, identifier: str) -> PassConfigs:
    strategy, identifier = _names("get_pass_configs", strategy, identifier)
    return PassConfigs(get_pass_config(strategy, identifier, PassConfigKey.KEY_DUMP_GRAPH, False))


def dumped_passes() -> Tuple[bool, list]:
    """(dump every pass, the passes of this compiler configured to dump), for the debug options."""
    every = _defaults.get(PassConfigKey.KEY_DUMP_GRAPH, False)
    named = sorted({pass_name(ident) for (_, ident, key), v in _configs.items()
                    if key == PassConfigKey.KEY_DUMP_GRAPH and v and pass_name(ident) in PASSES})
    return every, named


def recorded() -> Dict[str, object]:
    return {"defaults": {k.name: v for k, v in _defaults.items()},
            "passes": [{"strategy": s, "identifier": i, "key": k.name, "value": v}
                       for (s, i, k), v in _configs.items()]}


_version = 0


def version() -> int:
    """Bumped by every change of a pass config (the options merged for a compile depend on them)."""
    return _version


def _changed() -> None:
    global _version
    _version += 1
