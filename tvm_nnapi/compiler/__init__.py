"""The compiler: Relax IRModule -> NNAPI subgraphs -> graph JSON -> "nnapi" runtime modules.

- :mod:`.patterns`: partition options, typed refusals and the pattern specs (what NNAPI can take).
- :mod:`.lowerings`: one module per operator family; each lowering is a pattern, a check and a
  converter that emits NNAPI operations.
- :mod:`.partition`: FuseOpsByPattern + MergeCompositeFunctions over any entry function.
- :mod:`.converters` and :mod:`.graph_json`: the conversion context and the graph JSON builder.
- :mod:`.codegen`: ``relax.ext.nnapi`` (called by ``RunCodegen``).
- :mod:`.build`: partition + RunCodegen + ``relax.build``; :mod:`.flops`: FLOP counts of Relax
  calls.

Dependency rule: the compiler imports :mod:`tvm_nnapi.runtime` (to create runtime modules) and
never :mod:`tvm_nnapi.tools`, :mod:`tvm_nnapi.llm` or the CLI; those import the compiler.
"""
