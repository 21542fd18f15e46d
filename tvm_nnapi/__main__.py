# SPDX-License-Identifier: Apache-2.0
"""``python -m tvm_nnapi``: the same command line as ``tvm-nnapi``."""

import sys

from .cli import main

sys.exit(main())
