"""What a task's body is called with, read from the executable: the function's parameters
(DWARF, through readelf) and the argument expressions written at the call (the source line that
addr2line names). ``tareador hints`` uses them to say ``depend(in: A[k][k][0:256])`` instead of
``heap:cholesky.c:27#3``. Without debug information both are empty and hints fall back to
argument positions and object names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tareador.tracing.elf import debug_entries, image_base, source_lines


@dataclass(frozen=True)
class Parameter:
    name: str
    pointee_size: int | None  # bytes of what it points to; None: not a pointer; 1 for void *
    floating: bool  # passed in an xmm register, not in the integer ones calls.csv records


@dataclass(frozen=True)
class Signature:
    function: str
    parameters: tuple[Parameter, ...]  # empty without DWARF
    arguments: tuple[str, ...]  # the call's argument expressions in the source; empty if unreadable
    # the variables of the function making the call (DWARF): name -> POINTER, POINTERS or OTHER
    caller_variables: tuple[tuple[str, str], ...] = ()


def _reference(text: str | None) -> int | None:
    m = re.match(r"<0x([0-9a-f]+)>", text or "")
    return int(m.group(1), 16) if m else None


_QUALIFIERS = ("DW_TAG_const_type", "DW_TAG_volatile_type", "DW_TAG_typedef", "DW_TAG_restrict_type")


def _unqualified(entries: dict[int, dict], type_ref: int | None) -> dict | None:
    """The type entry behind const/volatile/restrict/typedef; None for void or unknown."""
    entry = entries.get(type_ref) if type_ref is not None else None
    for _ in range(16):
        if not entry or entry["tag"] not in _QUALIFIERS:
            break
        type_ref = _reference(entry["attrs"].get("DW_AT_type"))
        entry = entries.get(type_ref) if type_ref is not None else None
    return entry


def _parameter(entries: dict[int, dict], attrs: dict, n: int) -> Parameter:
    t = _unqualified(entries, _reference(attrs.get("DW_AT_type")))
    pointee_size = None
    if t and t["tag"] == "DW_TAG_pointer_type":
        pointee = _unqualified(entries, _reference(t["attrs"].get("DW_AT_type")))
        pointee_size = int(pointee["attrs"].get("DW_AT_byte_size", "1"), 0) if pointee else 1
    floating = t is not None and t["tag"] == "DW_TAG_base_type" and "float" in t["attrs"].get("DW_AT_encoding", "")
    return Parameter(attrs.get("DW_AT_name", f"arg{n + 1}"), pointee_size, floating)


def parameters(module: str, function_offset: int) -> tuple[Parameter, ...]:
    """The formal parameters of the function starting at function_offset from the module's start
    (its DW_AT_low_pc, a link address, is that plus the image base)."""
    entries = debug_entries(module)
    function_offset += image_base(module)
    for entry in entries.values():
        low = entry["attrs"].get("DW_AT_low_pc")
        if entry["tag"] == "DW_TAG_subprogram" and low and int(low, 16) == function_offset:
            formal = [entries[c]["attrs"] for c in entry["children"] if entries[c]["tag"] == "DW_TAG_formal_parameter"]
            return tuple(_parameter(entries, attrs, n) for n, attrs in enumerate(formal))
    return ()


POINTER, POINTERS, OTHER = "pointer", "pointers", "other"  # a variable's value: a pointer, an array of them


def _kind(entries: dict[int, dict], type_ref: int | None) -> str:
    t = _unqualified(entries, type_ref)
    if t and t["tag"] == "DW_TAG_array_type":
        element = _unqualified(entries, _reference(t["attrs"].get("DW_AT_type")))
        return POINTERS if element and element["tag"] == "DW_TAG_pointer_type" else OTHER
    return POINTER if t and t["tag"] == "DW_TAG_pointer_type" else OTHER


def _contains(entry: dict, offset: int) -> bool:
    """Whether a subprogram's code [low_pc, high_pc) holds offset (high_pc its length since DWARF 4)."""
    low, high = entry["attrs"].get("DW_AT_low_pc"), entry["attrs"].get("DW_AT_high_pc")
    if not low or not high:
        return False
    low_pc, high_pc = int(low, 16), int(high.split()[0], 0)
    return low_pc <= offset < (low_pc + high_pc if entry["version"] >= 4 else high_pc)


def caller_variables(module: str, site_offset: int) -> tuple[tuple[str, str], ...]:
    """The parameters and local variables of the function whose code holds the call site, those
    of the functions inlined into it included, each with what its value is: whether a task that
    is passed `x` reaches x's own storage (an array) or what x points at (a pointer). A name
    declared with different kinds is left out (unknown). ``site_offset`` from the module's start."""
    entries = debug_entries(module)
    site_offset += image_base(module)
    caller = next((e for e in entries.values() if e["tag"] == "DW_TAG_subprogram" and _contains(e, site_offset)), None)
    kinds: dict[str, set[str]] = {}
    pending = list(caller["children"]) if caller else []
    while pending:
        entry = entries[pending.pop()]
        if entry["tag"] in ("DW_TAG_lexical_block", "DW_TAG_inlined_subroutine"):
            pending += entry["children"]
        elif entry["tag"] in ("DW_TAG_variable", "DW_TAG_formal_parameter"):
            origin = _reference(entry["attrs"].get("DW_AT_abstract_origin"))
            declared = (entries.get(origin, entry) if origin is not None else entry)["attrs"]
            if "DW_AT_name" in declared:
                kind = _kind(entries, _reference(declared.get("DW_AT_type")))
                kinds.setdefault(declared["DW_AT_name"], set()).add(kind)
    return tuple(sorted((name, k.pop()) for name, k in kinds.items() if len(k) == 1))


def _source_line(module: str, offset: int) -> tuple[Path, int] | None:
    found = source_lines(module, [offset])
    where = found[0] if found else None
    return (Path(where.file), where.line) if where and where.line and Path(where.file).is_file() else None


def _split_arguments(text: str, function: str) -> tuple[str, ...]:
    """The arguments of the first call of function in text, split at its top-level commas."""
    m = re.search(rf"\b{re.escape(function)}\s*\(", text)
    if not m:
        return ()
    args: list[str] = []
    depth, current = 0, ""
    for ch in text[m.end():]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return tuple(a for a in (*args, current.strip()) if a)
            depth -= 1
        if ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += ch
    return ()


def call_arguments(module: str, site_offset: int, function: str) -> tuple[str, ...]:
    """The argument expressions of the call of function written at the call site's line (and
    the lines after it, for a call spread over several); ``site_offset`` from the module's start."""
    where = _source_line(module, site_offset)
    if where is None:
        return ()
    lines = where[0].read_text(errors="replace").splitlines()
    return _split_arguments(" ".join(lines[where[1] - 1:where[1] + 4]), function)


def signature(module: str, function: str, function_offset: int, site_offset: int) -> Signature:
    if not module or not Path(module).is_file():
        return Signature(function, (), ())
    return Signature(function, parameters(module, function_offset), call_arguments(module, site_offset, function),
                     caller_variables(module, site_offset))
