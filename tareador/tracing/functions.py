"""Which code is a function named by ``--task-function``: its entries in the executable.

Names are looked up in the executable's symbol table (``.symtab``, kept unless the program was
stripped, with or without ``-g``; else ``.dynsym``), read here from the ELF file rather than
in the traced process, so that a wrong name is refused before the program runs. GCC's clones of
a whole function (``f.constprop.0``, ``f.isra.0``) are calls of ``f``; its pieces (``f.part.0``,
``f.cold``) are not. Where a name has no code left, the DWARF of a ``-g`` build (through
binutils' ``readelf``) tells an inlined function (``DW_AT_inline``) from a name that does not
exist.
"""

from __future__ import annotations

import difflib
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass

from tareador.errors import FunctionError

SHT_SYMTAB, SHT_DYNSYM, PT_LOAD, STT_FUNC, SHN_UNDEF = 2, 11, 1, 2, 0
PAGE = 4096
# A clone that stands for the whole function (an argument folded or split, a constant propagated).
WHOLE_CLONE = re.compile(r"^(?P<name>[^.]+)(?:\.(?:constprop|isra)\.\d+)+$")
RESERVED = ("main", "_start")
# What the C runtime links into every executable: never the program's candidates.
RUNTIME = {"_init", "_fini", "_start", "_dl_relocate_static_pie", "deregister_tm_clones", "register_tm_clones",
           "frame_dummy", "main"}


@dataclass(frozen=True)
class TaskFunction:
    name: str
    offsets: tuple[int, ...]  # entries from the executable's base (its first mapped page)
    inlined: bool  # the compiler inlined some of its calls (DWARF of a -g build; False without it)


@dataclass(frozen=True)
class _Symbols:
    functions: dict[str, tuple[int, ...]]  # name -> offsets of its entries
    stripped: bool  # no .symtab: only the exported functions are known


def _read_symbols(path: str) -> _Symbols:
    with open(path, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 40)
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", elf, 54)
    loads = [struct.unpack_from("<IIQQ", elf, phoff + i * phentsize) for i in range(phnum)]
    base = min(vaddr for kind, _, _, vaddr in loads if kind == PT_LOAD) & ~(PAGE - 1)
    sections = [struct.unpack_from("<IIQQQQII", elf, shoff + i * shentsize) for i in range(shnum)]
    kinds = {s[1] for s in sections}
    table = SHT_SYMTAB if SHT_SYMTAB in kinds else SHT_DYNSYM
    found: dict[str, set[int]] = {}
    for _, kind, _, _, offset, size, link, _ in sections:
        if kind != table:
            continue
        strings = sections[link][4]
        for at in range(offset, offset + size, 24):
            name, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", elf, at)
            if info & 0xF != STT_FUNC or shndx == SHN_UNDEF or not value:
                continue
            end = elf.index(b"\0", strings + name)
            found.setdefault(elf[strings + name:end].decode("utf-8", "replace"), set()).add(value - base)
    return _Symbols({n: tuple(sorted(v)) for n, v in found.items()}, table != SHT_SYMTAB)


def _names(symbols: _Symbols) -> set[str]:
    """The functions' names, a whole clone under its function's."""
    return {m["name"] if (m := WHOLE_CLONE.match(s)) else s for s in symbols.functions}


def _entries(symbols: _Symbols, name: str) -> tuple[int, ...]:
    offsets = set(symbols.functions.get(name, ()))
    for symbol, at in symbols.functions.items():
        clone = WHOLE_CLONE.match(symbol)
        if clone and clone["name"] == name:
            offsets.update(at)
    return tuple(sorted(offsets))


_DIE = re.compile(r"^\s*<\d+><([0-9a-f]+)>: Abbrev Number: \d+(?: \((DW_TAG_\w+)\))?")
_ATTRIBUTE = re.compile(r"^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$")
_FORM = re.compile(r"^\(\w+\)\s*")  # readelf 2.35+ prints the attribute's form first: (strp), (data1)


def inlined_functions(path: str) -> tuple[set[str], set[str]]:
    """From the DWARF of a -g build: the functions it describes, and those the compiler inlined
    somewhere (DW_AT_inline 1 or 3: inlined, declared inline and inlined). Empty without -g or
    without readelf."""
    readelf = shutil.which("readelf")
    if readelf is None:
        return set(), set()
    out = subprocess.run([readelf, "--wide", "--debug-dump=info", path], capture_output=True, text=True,
                         errors="replace").stdout
    described, inlined = set(), set()
    subprogram, name, inline = False, None, False
    for line in out.splitlines() + [" <0><0>: Abbrev Number: 0 (DW_TAG_end)"]:
        die = _DIE.match(line)
        if die:
            if subprogram and name:
                described.add(name)
                if inline:
                    inlined.add(name)
            subprogram, name, inline = die[2] == "DW_TAG_subprogram", None, False
            continue
        attribute = _ATTRIBUTE.match(line)
        if not subprogram or not attribute:
            continue
        value = _FORM.sub("", attribute[2])
        if attribute[1] == "DW_AT_name":
            name = value.rsplit(": ", 1)[-1].strip()
        elif attribute[1] == "DW_AT_inline":
            inline = value.split()[0] in ("1", "3")
    return described, inlined


def resolve(path: str, names: list[str]) -> list[TaskFunction]:
    """The entries of every named function of the executable at path; FunctionError, one line,
    for a name that cannot be a task."""
    symbols = _read_symbols(path)
    described, inlined = inlined_functions(path)
    program = path.rsplit("/", 1)[-1]
    result = []
    for name in dict.fromkeys(names):
        if name in RESERVED or name.startswith("tareador_"):
            raise FunctionError(f"{name} cannot be a task function: it is the program itself or a marker; "
                                "name the functions main calls")
        offsets = _entries(symbols, name)
        if offsets:
            result.append(TaskFunction(name, offsets, name in inlined))
        elif name in inlined:
            raise FunctionError(f"{name} was inlined, compile with -fno-inline or mark it "
                                "(__attribute__((noinline))), or mark its calls with tareador_start_task")
        elif name in described:
            raise FunctionError(f"{name} has no code in '{program}' (the compiler removed it: is it ever called?)")
        else:
            raise FunctionError(_unknown(name, program, symbols, bool(described)))
    return result


def program_functions(path: str) -> list[str]:
    """Every function of the executable at path that may be a candidate task (explore): its own
    functions, clones under their name, without the C runtime's, the markers and main.
    FunctionError when there is none, before a run whose recording could have no task."""
    symbols = _read_symbols(path)
    candidates = sorted(n for n in _names(symbols) if n not in RUNTIME and not n.startswith("__") and "." not in n
                        and not n.startswith("tareador_"))
    if not candidates:
        why = ("the program is stripped (no symbol table): rebuild it without -s / strip" if symbols.stripped
               else "the compiler may have inlined them all: build with -fno-inline")
        raise FunctionError(f"'{path.rsplit('/', 1)[-1]}' has no function but main to explore; {why}")
    return candidates


def _unknown(name: str, program: str, symbols: _Symbols, debug_info: bool) -> str:
    close = difflib.get_close_matches(name, sorted(_names(symbols)), n=5)
    text = f"no function named {name} in '{program}'"
    if close:
        text += f" (close names: {', '.join(close)})"
    if symbols.stripped:
        return text + "; the program is stripped (no symbol table): rebuild it without -s / strip"
    if not debug_info:
        return text + "; if it is a static function it may have been inlined: build with -g to know, or -fno-inline"
    return text + "; check the name"
