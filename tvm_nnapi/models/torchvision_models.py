# SPDX-License-Identifier: Apache-2.0
"""torchvision's CV networks, with random weights, imported into Relax through torch.export.

The networks are torchvision's own definitions (``weights=None``: nothing is downloaded), exported
with ``torch.export.export`` and imported with TVM's PyTorch frontend
(``tvm.relax.frontend.torch.from_exported_program``). Weights are imported as parameters,
detached (``relax.frontend.detach_params``) and, unless ``keep_params_as_input``, bound back as
constants (``relax.transform.BindParams``) so that the NNAPI partitioner sees them as constants.

With torchvision's initialisation the batch-norm statistics are mean 0 / variance 1 whatever the
weights, and the logits of a random network come out around 1e-9: far below any fp32 tolerance,
so a comparison would prove nothing. ``calibrate_batch_norm`` (the default) therefore sets the
running statistics from a few random batches first, which keeps every activation near unit scale.

torch and torchvision are an optional extra: ``pip install 'tvm-nnapi[models]'`` (or
``tox -e models``). They are imported when a network is built, not when this module is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import relax

from ..compiler.prepare import prepare

TORCHVISION_NETWORKS = ("mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0")

_MISSING = (
    "tvm_nnapi.models.torchvision_models needs torch and torchvision, which are an optional "
    "extra: install the `models` extra (pip install 'tvm-nnapi[models]', or tox -e models)"
)


@dataclass
class TorchvisionModel:
    """A torchvision network imported into Relax; the entry function is ``main(x, *params)``."""

    name: str
    module: tvm.IRModule
    input_shape: tuple[int, ...]
    # Weights in the order of main's parameters after the image (empty when bound as constants).
    params: list[np.ndarray] = field(default_factory=list)
    # The eval-mode torch.nn.Module the module was exported from (for reference outputs).
    torch_module: Any = None
    entry: str = "main"
    dtype: str = "float32"

    def random_input(self, seed: int = 0) -> np.ndarray:
        """A standard-normal image batch of the network's input shape."""
        return np.random.default_rng(seed).standard_normal(self.input_shape).astype(self.dtype)


def _import_torch() -> tuple[Any, Any]:
    try:
        import torch
        import torchvision
    except ImportError as error:
        raise ImportError(_MISSING) from error
    return torch, torchvision


def _calibrate_batch_norm(torch: Any, model: Any, shape: tuple[int, ...], batches: int) -> None:
    """Running statistics of every batch norm from ``batches`` random batches (cumulative
    average), the rest of the network in eval mode (no dropout, no stochastic depth)."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # cumulative moving average over the calibration batches
        norm.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(*shape))
    model.eval()


def fold_batch_norm_into_conv(mod: tvm.IRModule) -> tvm.IRModule:
    """Fold every ``conv2d(x, W) -> batch_norm(constants)[0]`` into ``conv2d(x, W') + b`` and
    the constant subexpressions (a ``reshape`` of a constant), in every Relax function.

    The graph preparation that partitioning runs anyway (:func:`tvm_nnapi.compiler.prepare.
    prepare`): the same result as ``relax.transform.FoldBatchnormToConv2D`` followed by
    ``FoldConstant``, computed with NumPy instead of compiling a kernel per folded expression,
    which takes about 20 s for one of these networks.
    """
    return prepare(mod, nhwc=False)


def torchvision_model(
    name: str,
    resolution: int = 224,
    batch: int = 1,
    seed: int = 0,
    keep_params_as_input: bool = False,
    calibrate_batch_norm: bool = True,
    fold_batch_norm: bool = True,
    run_ep_decomposition: bool = True,
) -> TorchvisionModel:
    """Build torchvision's ``name`` (one of :data:`TORCHVISION_NETWORKS`) with random weights
    (seeded), export it on a ``batch x 3 x resolution x resolution`` input and import it.

    ``keep_params_as_input`` leaves the weights as parameters of ``main`` (their values in
    ``params``) instead of binding them as constants. ``calibrate_batch_norm`` sets the batch-norm
    statistics from random batches (see the module docstring). ``fold_batch_norm`` applies
    :func:`fold_batch_norm_into_conv`, as an inference pipeline would; it needs the weights as
    constants, so it is skipped with ``keep_params_as_input``. ``run_ep_decomposition`` is passed
    to the frontend (True, its default, decomposes e.g. hardswish and silu into elementwise
    operators).
    """
    exported, model = export_torchvision(name, resolution, batch, seed, calibrate_batch_norm)
    return import_exported(
        name,
        exported,
        (batch, 3, resolution, resolution),
        torch_module=model,
        keep_params_as_input=keep_params_as_input,
        fold_batch_norm=fold_batch_norm,
        run_ep_decomposition=run_ep_decomposition,
    )


def export_torchvision(
    name: str,
    resolution: int = 224,
    batch: int = 1,
    seed: int = 0,
    calibrate_batch_norm: bool = True,
) -> tuple[Any, Any]:
    """torchvision's ``name`` with random weights (seeded, batch norms calibrated unless told
    otherwise), exported by ``torch.export.export`` on a ``batch x 3 x resolution x
    resolution`` input: ``(ExportedProgram, eval-mode torch module)``. The program can be kept
    with ``torch.export.save`` and imported later by :func:`import_exported`."""
    torch, torchvision = _import_torch()
    if name not in TORCHVISION_NETWORKS:
        raise ValueError(f"unknown network {name!r}; choose from {', '.join(TORCHVISION_NETWORKS)}")
    input_shape = (batch, 3, resolution, resolution)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(torchvision.models, name)(weights=None).eval()
        if calibrate_batch_norm:
            _calibrate_batch_norm(torch, model, (8, 3, resolution, resolution), batches=2)
        example = torch.randn(*input_shape)
    with torch.no_grad():
        exported = torch.export.export(model, (example,))
    return exported, model


def import_exported(
    name: str,
    exported: Any,
    input_shape: tuple[int, ...],
    torch_module: Any = None,
    keep_params_as_input: bool = False,
    fold_batch_norm: bool = True,
    run_ep_decomposition: bool = True,
) -> TorchvisionModel:
    """Import an ``ExportedProgram`` of a network (:func:`export_torchvision`) into Relax with
    TVM's PyTorch frontend; the options are those of :func:`torchvision_model`."""
    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.torch import from_exported_program

    mod = from_exported_program(
        exported,
        keep_params_as_input=True,
        unwrap_unit_return_tuple=True,
        run_ep_decomposition=run_ep_decomposition,
    )
    mod, detached = detach_params(mod)
    params = [p.numpy() for p in detached.get("main", [])]
    if not keep_params_as_input:
        weights = mod["main"].params[1:]
        mod = relax.transform.BindParams("main", dict(zip(weights, params, strict=True)))(mod)
        params = []
        if fold_batch_norm:
            mod = fold_batch_norm_into_conv(mod)
    return TorchvisionModel(name, mod, tuple(input_shape), params, torch_module)
