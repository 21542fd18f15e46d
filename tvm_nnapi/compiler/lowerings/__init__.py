"""Per-family NNAPI support: each module registers its pattern specs (what can be offloaded,
with the checks that refuse what NNAPI cannot do) next to the converters that lower them.

Fused patterns (e.g. conv2d + bias + relu) carry a higher ``priority`` than the single
operators they contain, so they are tried first.
"""

from . import conv, matmul, pooling, reduce, norm, elementwise, shape  # noqa: F401, I001
from . import hard_activations, batch_norm_runtime  # noqa: F401
