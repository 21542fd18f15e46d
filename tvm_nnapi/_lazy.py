# SPDX-License-Identifier: Apache-2.0
"""Packages whose public names import on first use (PEP 562 module ``__getattr__``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    namespace: dict[str, Any], names: Mapping[str, str], needs: str = ""
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the package whose globals are ``namespace``: ``names`` maps
    each public name to the (relative) module defining it, imported on first use and then kept
    in the namespace. ``needs``, when given, says what an ImportError lacks (e.g. TVM)."""
    package = str(namespace["__name__"])

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(module, package), name)
        except ImportError as error:
            if not needs:
                raise
            raise ImportError(f"{package}.{name} needs {needs}: {error}") from error
        namespace[name] = value
        return value

    return getattr_
