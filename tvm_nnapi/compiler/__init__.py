# SPDX-License-Identifier: Apache-2.0
"""The compiler: Relax IRModule -> NNAPI subgraphs -> graph JSON -> "nnapi" runtime modules.

- :mod:`.patterns`: partition options, typed refusals and the :class:`~.patterns.Lowering`
  record (pattern, check, converter, the NNAPI operations it emits).
- :mod:`.lowerings`: the records, one module per operator family, collected in the one ordered
  list :data:`.lowerings.LOWERINGS` that partitioning and the codegen read.
- :mod:`.partition`: FuseOpsByPattern + MergeCompositeFunctions over any entry function.
- :mod:`.converters` and :mod:`.graph_json`: the conversion context and the graph JSON builder.
- :mod:`.codegen`: ``relax.ext.nnapi`` (called by ``RunCodegen``).
- :mod:`.build`: partition + RunCodegen + ``relax.build``.
- :mod:`.flops`: FLOP counts of Relax calls.

Dependency rule: the compiler imports :mod:`tvm_nnapi.runtime` (to create runtime modules) and
never :mod:`tvm_nnapi.tools`, :mod:`tvm_nnapi.llm` or the CLI; those import the compiler.
Inside it, :mod:`.lowerings` imports the infrastructure (:mod:`.patterns`, :mod:`.converters`)
and never the reverse; :mod:`.partition` and :mod:`.codegen` import :mod:`.lowerings`.
"""
