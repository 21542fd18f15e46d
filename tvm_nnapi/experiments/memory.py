# SPDX-License-Identifier: Apache-2.0
"""Whether the programs of the LLM experiments (:mod:`tvm_nnapi.experiments.llm`) fit the phones'
memory: the modelled peak memory of each record's plans (:mod:`tvm_nnapi.tools.memory`) against
each profile's app budget. A record whose NNAPI-offloaded or all-host program does not fit is
marked, not dropped: its latency is still modelled, but no phone of that profile could run it.

    from tvm_nnapi.experiments import memory
    memory.annotate(results)              # adds modelled_peak_memory_bytes, fits_memory
    print(memory.memory_table(results))
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ..llm.config import get_config
from ..tools.memory import PhoneMemory, PlanMemory, phone_memory, plan_memory

#: The plan of the NNAPI-offloaded program for each weights option of the experiments.
PLAN_OF_WEIGHTS = {"input": "nnapi", "resident": "nnapi-resident"}

#: The marker of a table cell whose programs do not fit the phone's memory.
UNFIT_MARK = "†"


@cache
def _phone(profile: str) -> PhoneMemory | None:
    return phone_memory(profile)


def weight_format(results: dict[str, Any]) -> str:
    """The weight format the experiments used: their ``quantization``, else their float type."""
    return str(results.get("quantization") or results["dtype"])


def record_plans(results: dict[str, Any], record: dict[str, Any]) -> tuple[PlanMemory, PlanMemory]:
    """The modelled memory of a record's NNAPI-offloaded and all-host programs: a prefill of
    ``length`` tokens (a cache of as many), or a decode step after ``length`` cached tokens."""
    config = get_config(record["model"])
    length = int(record["length"])
    context, chunk = (length, length) if record["phase"] == "prefill" else (length + 1, 1)
    fmt = weight_format(results)
    nnapi = plan_memory(config, fmt, PLAN_OF_WEIGHTS[record["weights"]], context, chunk)
    host = plan_memory(config, fmt, "host", context, chunk)
    return nnapi, host


def annotate(results: dict[str, Any]) -> dict[str, Any]:
    """Adds to every record its programs' modelled peak memory
    (``modelled_peak_memory_bytes``: the NNAPI-offloaded one; ``modelled_host_peak_memory_bytes``)
    and ``fits_memory`` (both fit the profile's app budget; None when the profile states no
    memory). Returns ``results``."""
    for record in results["records"]:
        nnapi, host = record_plans(results, record)
        phone = _phone(record["profile"])
        record["modelled_peak_memory_bytes"] = nnapi.peak_bytes
        record["modelled_host_peak_memory_bytes"] = host.peak_bytes
        fits = [nnapi.fits(phone), host.fits(phone)]
        record["fits_memory"] = None if None in fits else all(fits)
    return results


def memory_table(results: dict[str, Any]) -> str:
    """Markdown: per model and plan, the modelled peak memory at the longest prompt and whether
    it fits each profile's app budget."""
    length = max(results["prompt_lengths"])
    profiles = [(p, _phone(p)) for p in results["profiles"]]
    header = "| model | program | modelled peak | " + " | ".join(
        f"{p} ({_budget(phone)})" for p, phone in profiles
    )
    lines = [header + " |", "|---" * (3 + len(profiles)) + "|"]
    fmt = weight_format(results)
    for model in results["models"]:
        config = get_config(model)
        plans = [("all-host", "host")] + [
            (f"NNAPI, weights `{w}`", PLAN_OF_WEIGHTS[w]) for w in results["weights"]
        ]
        for label, plan in plans:
            memory = plan_memory(config, fmt, plan, length, length)
            cells = []
            for _, phone in profiles:
                fits = memory.fits(phone)
                cells.append("-" if fits is None else ("fits" if fits else "**does not fit**"))
            lines.append(
                f"| {model} | {label} | {memory.peak_bytes / 2**30:.2f} GiB | "
                + " | ".join(cells)
                + " |"
            )
    return "\n".join(lines)


def _budget(phone: PhoneMemory | None) -> str:
    if phone is None:
        return "no memory stated"
    return f"{phone.app_budget_bytes / 2**30:.1f} of {phone.total_bytes / 2**30:.0f} GiB"
