# SPDX-License-Identifier: Apache-2.0
"""Tooling on top of the compiler and the runtime: what the CLI commands are made of.

- :mod:`.sources`: loading a MODEL argument (built-ins, .py, TVMScript, ONNX, torch.export, LLMs).
- :mod:`.explain`: what runs where and why (typed refusals, devices per subgraph).
- :mod:`.estimate`: modelled latency on a phone profile (NNAPI side from the mock's traces).
- :mod:`.run`: runs a model with NNAPI offload and on the host and compares the outputs;
  :mod:`.layerwise`: the same per offloaded operator (``run --layerwise``).
- :mod:`.calibrate` and :mod:`.workloads`: fitting a device profile to measured timings
  (``calibrate``) and timing the workloads through NNAPI (``measure``).
- :mod:`.graph_view` and :mod:`.report`: the operator graph and the self-contained HTML report.

Tools import :mod:`tvm_nnapi.compiler` and :mod:`tvm_nnapi.runtime`; neither imports tools.
"""
