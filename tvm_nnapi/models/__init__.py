# SPDX-License-Identifier: Apache-2.0
"""Built-in models: small networks for demos and tests (random weights, nothing downloaded)."""

from __future__ import annotations

from .mobilenet import mobilenet_v2
from .residual import residual_model

__all__ = ["mobilenet_v2", "residual_model"]
