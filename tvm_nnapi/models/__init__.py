"""Built-in models: small networks for demos and tests (random weights, nothing downloaded)."""

from __future__ import annotations

from .demo import demo_model

__all__ = ["demo_model"]
