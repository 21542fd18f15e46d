# SPDX-License-Identifier: Apache-2.0
"""Controls and statistics of the NNAPI runtime modules in a built program.

    import tvm_nnapi.runtime as rt
    rt.configure(cache_max_entries=8, cache_dir="/data/local/tmp/nnapi-cache")
    executable = tvm_nnapi.build(mod)
    rt.precompile(executable, seq_len=[32, 64, 128])   # compile ahead for expected shapes
    ...
    print(rt.stats(executable))                        # per NNAPI subgraph

Options (also environment variables ``TVM_NNAPI_<NAME>`` read at start-up):
``cache_max_entries`` (compiled shape signatures kept per subgraph), ``cache_max_bytes``
(estimated activation bytes kept per subgraph), ``cache_dir`` (NNAPI compilation caching
directory; empty turns caching off), ``preference`` (fast, low_power, sustained) and
``use_burst`` (run executions through an NNAPI burst), ``policy`` (device selection per shape
signature: ``nnapi``, ``host``, ``threshold:FLOPS`` or ``cost:nnapi_gflops=..,host_gflops=..,
call_us=..,transfer_gbps=..``; the host choices need ``tvm_nnapi.build(..., host_fallback=True)``)
and ``log`` (``debug`` prints every placement decision).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tvm

from ._library import runtime_function


def configure(**options: Any) -> dict[str, str]:
    """Set runtime options (for compilations from now on); returns the resulting options.

    ``devices`` (names, a list or comma-separated) makes every NNAPI compilation from now on
    target those NNAPI devices (``ANeuralNetworksCompilation_createForDevices``; "" lets NNAPI
    choose); ``exclude_cpu=True`` leaves CPU devices out (of the named ones, or of all). Several
    device sets, tried in order when one fails to compile or to execute, are separated by ";"
    or given as a list of lists (``[["qti-dsp"], ["qti-gpu", "nnapi-reference"]]``). Models
    already compiled for a signature keep their devices (docs/runtime.md)."""
    set_options(runtime_function, options)
    return options_in_effect()


def option_names(function: Any = None) -> tuple[str, ...]:
    """The runtime's option names, as the runtime library (``function``: a lookup of its
    global functions, in process by default or a remote one) defines them."""
    lookup = function or runtime_function
    return tuple(str(lookup("tvm_nnapi.runtime.option_names")()).split(","))


def set_options(function: Any, options: dict[str, Any]) -> None:
    """Sets ``options`` through the runtime's ``tvm_nnapi.runtime.set_option`` (``function``: a
    lookup of the runtime's global functions, in process or a remote one), each value as the
    string it takes. Every name is checked before any is set."""
    names = option_names(function)
    for name in options:
        if name not in names:
            raise ValueError(f"unknown NNAPI runtime option {name!r}; options: {', '.join(names)}")
    setter = function("tvm_nnapi.runtime.set_option")
    for name, value in options.items():
        if isinstance(value, bool):
            value = int(value)
        elif isinstance(value, list | tuple) and any(isinstance(v, list | tuple) for v in value):
            # devices=[["qti-dsp"], ["qti-gpu", "nnapi-reference"]]: device sets in order
            value = ";".join(
                ",".join(str(d) for d in v) if isinstance(v, list | tuple) else str(v)
                for v in value
            )
        elif isinstance(value, list | tuple):  # devices=["qti-gpu", "qti-dsp"]
            value = ",".join(str(v) for v in value)
        setter(name, str(value))


def options_in_effect() -> dict[str, str]:
    return {str(k): str(v) for k, v in runtime_function("tvm_nnapi.runtime.get_options")().items()}


def nnapi_modules(program: Any) -> list[tvm.runtime.Module]:
    """The "nnapi" runtime modules of a VMExecutable, a runtime module or a VirtualMachine.

    For an executable these are the modules its VirtualMachines run: when the executable holds
    modules that must be compiled first (e.g. a "c" source module), ``relax.VirtualMachine``
    runs ``executable.jit()``, a reloaded copy with its own NNAPI modules, so the statistics
    and pre-compilations must go to that copy (``jit()`` is cached: one copy per executable).
    """
    if isinstance(program, tvm.relax.VirtualMachine):
        root = program.module
    elif isinstance(program, tvm.runtime.Executable):
        root = program.jit()
    else:
        root = getattr(program, "mod", program)
    found: list[tvm.runtime.Module] = []
    stack = [root]
    while stack:
        module = stack.pop()
        if module.kind == "nnapi":
            found.append(module)
        stack.extend(module.imports)
    return sorted(found, key=lambda m: str(m["get_symbol"]()))


def stats(program: Any) -> dict[str, dict[str, int]]:
    """Per NNAPI subgraph: calls, compilations, cache hits/misses, evictions, compile time (ns,
    measured on this host), cached signatures and their estimated bytes, where calls ran and
    the fallbacks (``fallbacks`` to the host, ``device_set_fallbacks``, ``execution_failures``;
    their reasons: :func:`fallback_reasons`)."""
    return {
        str(m["get_symbol"]()): {str(k): int(v) for k, v in m["get_stats"]().items()}
        for m in nnapi_modules(program)
    }


def fallback_reasons(program: Any) -> dict[str, list[str]]:
    """Per NNAPI subgraph, the newest reasons (oldest first, at most 32) for which a compilation
    or a call left the first device set: the failing NNAPI function, its result code, the
    device and the operations, and where the work went instead (the next device set or the
    host). Each is also printed on stderr when it happens and counted in :func:`stats`
    (``device_set_fallbacks``, ``execution_failures``, ``fallbacks``)."""
    return {
        str(m["get_symbol"]()): [str(reason) for reason in m["get_fallback_reasons"]()]
        for m in nnapi_modules(program)
    }


def precompile(program: Any, **symbols: int | Iterable[int]) -> int:
    """Compile ahead the shape signatures given by symbol values, e.g. ``seq_len=[32, 64]``.

    Every subgraph whose symbols are all given is compiled for each combination of values
    (several symbols are zipped, so their lists must have one length). Returns the number of
    (subgraph, signature) compilations requested. A symbol no NNAPI subgraph of ``program`` has
    is a ValueError naming it and the symbols the subgraphs have.
    """
    values = {name: [v] if isinstance(v, int) else list(v) for name, v in symbols.items()}
    lengths = {len(v) for v in values.values()}
    if len(lengths) > 1:
        raise ValueError(f"symbol value lists differ in length: {values}")
    modules = list(nnapi_modules(program))
    known = {str(s) for module in modules for s in module["get_symbols"]()}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"precompile: no NNAPI subgraph of this program has the symbol "
            f"{', '.join(unknown)} (the subgraphs' symbols: {', '.join(sorted(known)) or 'none'})"
        )
    count = 0
    for module in modules:
        needed = [str(s) for s in module["get_symbols"]()]
        if not needed or any(name not in values for name in needed):
            continue
        for index in range(lengths.pop() if lengths else 0):
            module["precompile"]({name: values[name][index] for name in needed})
            count += 1
        lengths = {len(v) for v in values.values()}
    return count


class PerThreadVM:
    """One ``relax.VirtualMachine`` per calling thread over one executable.

    TVM's Relax VM keeps its frames and registers in the instance, so one instance called from
    several threads at once corrupts itself (a crash inside TVM, which no module it calls can
    prevent). The NNAPI runtime modules of an executable are shared and safe to call from many
    threads; what must not be shared is the VM. ``PerThreadVM(executable, device)`` gives each
    thread its own VM, made on its first call::

        vm = tvm_nnapi.runtime.PerThreadVM(executable, tvm.cpu())
        out = vm["main"](x)          # from any thread
    """

    def __init__(self, executable: Any, device: Any) -> None:
        import threading

        self.executable = executable
        self.device = device
        self._local = threading.local()
        self._lock = threading.Lock()
        self.created = 0  # VMs made so far (one per thread that called)

    def vm(self) -> Any:
        """The calling thread's VM."""
        vm = getattr(self._local, "vm", None)
        if vm is None:
            from tvm import relax

            vm = relax.VirtualMachine(self.executable, self.device)
            self._local.vm = vm
            with self._lock:
                self.created += 1
        return vm

    def __getitem__(self, name: str) -> Any:
        def call(*args: Any) -> Any:
            return self.vm()[name](*args)

        return call
