"""Which code is a function named by ``--task-function``: its entries in the executable, or the
shared library that defines it.

Names are looked up in the executable's symbol table (``.symtab``, kept unless the program was
stripped, with or without ``-g``; else ``.dynsym``), read here from the ELF file rather than
in the traced process, so that a wrong name is refused before the program runs. GCC's clones of
a whole function (``f.constprop.0``, ``f.isra.0``) are calls of ``f``; its pieces (``f.part.0``,
``f.cold``) are not. Where a name has no code left, the DWARF of a ``-g`` build (through
binutils' ``readelf``) tells an inlined function (``DW_AT_inline``) from a name that does not
exist. A name the executable imports is a function of one of its shared libraries (the first
in the dynamic linker's order that exports it): the agent finds its entry once the libraries
are loaded, and only the program's own calls of it are tasks when the library is a system one
(see tracer_agents/transform.c): a call the library makes inside itself is no place the
programmer can put a task.
"""

from __future__ import annotations

import difflib
import os
import re
import struct
from dataclasses import dataclass
from functools import lru_cache

from tareador.errors import FunctionError
from tareador.tracing.elf import debug_entries, read_functions, shared_libraries

# A clone that stands for the whole function (an argument folded or split, a constant propagated).
WHOLE_CLONE = re.compile(r"^(?P<name>[^.]+)(?:\.(?:constprop|isra)\.\d+)+$")
RESERVED = ("main", "_start")
# What the C runtime links into every executable: never the program's candidates.
RUNTIME = {"_init", "_fini", "_start", "_dl_relocate_static_pie", "deregister_tm_clones", "register_tm_clones",
           "frame_dummy", "main"}
# Libraries every program links without asking for them, or whose calls tareador models itself:
# their functions are not explore's candidates.
RUNTIME_LIBRARIES = re.compile(r"^(ld-linux.*|libc|libm|libmvec|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+"
                               r"|libgcc_s|libatomic|libgomp|libgfortran|libquadmath|libtareador.*|libmpi.*|libmpich.*"
                               r"|libopen-.*)\.so")
# Functions the agent hooks itself (the allocator, process control, MPI): never tasks.
HOOKED = {"malloc", "calloc", "realloc", "free", "memalign", "aligned_alloc", "posix_memalign", "mmap", "mmap64",
          "munmap", "exit", "_exit", "fork", "posix_spawn", "posix_spawnp", "pthread_create", "dlopen"}
# Where system libraries are installed (as tracer_agents/agent.js): their own calls are no tasks.
SYSTEM_DIRECTORIES = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")


@dataclass(frozen=True)
class TaskFunction:
    name: str
    offsets: tuple[int, ...]  # entries from the executable's base (its first mapped page); () in a library
    inlined: bool  # the compiler inlined some of its calls (DWARF of a -g build; False without it)
    library: str = ""  # the shared library defining it, as the program needs it (libblas.so.3); '' if its own
    path: str = ""  # that library's file, '' if not found before the run

    @property
    def own_library(self) -> str | None:
        """The real path of the library defining it when that is the program's own (outside the
        system directories: its globals are objects as the executable's), else None."""
        path = os.path.realpath(self.path) if self.path else ""
        return path if path and not path.startswith(SYSTEM_DIRECTORIES) else None


@dataclass(frozen=True)
class _Symbols:
    functions: dict[str, tuple[int, ...]]  # name -> offsets of its entries
    weak: frozenset[str]  # weak definitions: aliases the code calls by (CORE_f beside PCORE_f)
    imports: frozenset[str]  # functions the executable calls in its shared libraries
    stripped: bool  # no .symtab: only the exported functions are known


def _read_symbols(path: str) -> _Symbols:
    elf = read_functions(path)
    found: dict[str, set[int]] = {}
    for s in elf.symbols:
        if s.defined:
            found.setdefault(s.name, set()).add(s.offset)
    return _Symbols({n: tuple(sorted(v)) for n, v in found.items()},
                    frozenset(s.name for s in elf.symbols if s.defined and s.weak),
                    frozenset(s.name for s in elf.dynamic if not s.defined), elf.stripped)


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


def _preferred(names: list[str], weak: frozenset[str]) -> str:
    """One name for a function known by several (aliases): the weak one, which is the public name
    the code calls (PLASMA's CORE_f beside its PCORE_f, glibc's malloc beside __libc_malloc),
    then one without a leading underscore, then the shortest, then the first."""
    return min(names, key=lambda n: (n not in weak, n.startswith("_"), len(n), n))


@lru_cache(maxsize=64)
def _exports(path: str, modified: float) -> dict[str, int]:
    """The functions the library at path exports: name -> offset of its entry."""
    return {s.name: s.offset for s in read_functions(path).dynamic if s.defined}


class _Libraries:
    """The program's shared libraries, found once (ldd), their exports read when first needed."""

    def __init__(self, program: str):
        self.paths = shared_libraries(program)

    def defining(self, name: str) -> tuple[str, str, int] | None:
        """(name as needed, path, entry offset) of the first library in the dynamic linker's
        order that exports the function name, or None."""
        for needed, path in self.paths.items():
            try:
                exported = _exports(path, os.stat(path).st_mtime)
            except (OSError, ValueError, IndexError, struct.error):  # not a readable ELF file
                continue
            if name in exported:
                return needed, path, exported[name]
        return None


def inlined_functions(path: str) -> tuple[set[str], set[str]]:
    """From the DWARF of a -g build: the functions it defines, and those the compiler inlined
    somewhere (DW_AT_inline 1 or 3: inlined, declared inline and inlined). Empty without -g or
    without readelf. A declaration (DW_AT_declaration) is of a function of another file or
    library, declared to call it."""
    described, inlined = set(), set()
    for entry in debug_entries(path).values():
        attributes = entry["attrs"]
        name = attributes.get("DW_AT_name")
        if entry["tag"] != "DW_TAG_subprogram" or not name or "DW_AT_declaration" in attributes:
            continue
        described.add(name)
        if attributes.get("DW_AT_inline", "0").split()[0] in ("1", "3"):
            inlined.add(name)
    return described, inlined


def resolve(path: str, names: list[str]) -> list[TaskFunction]:
    """The entries of every named function of the executable at path, or the library defining
    it; FunctionError, one line, for a name that cannot be a task."""
    symbols = _read_symbols(path)
    described, inlined = inlined_functions(path)
    program = path.rsplit("/", 1)[-1]
    libraries = None
    result: list[TaskFunction] = []
    entries: dict[tuple[str, int], str] = {}
    for name in dict.fromkeys(names):
        _refuse_reserved(name)
        offsets = _entries(symbols, name)
        if offsets:
            result.append(TaskFunction(name, offsets, name in inlined))
            keys = [("", at) for at in offsets]
        elif name in inlined:
            raise FunctionError(f"{name} was inlined, compile with -fno-inline or mark it "
                                "(__attribute__((noinline))), or mark its calls with tareador_start_task")
        else:
            libraries = libraries or _Libraries(path)
            function, keys = _library_function(program, symbols, libraries, name, described)
            result.append(function)
        for key in keys:
            if key in entries:
                raise FunctionError(f"{entries[key]} and {name} are one function (two names of one entry): "
                                    "name one of them")
            entries[key] = name
    return result


def _refuse_reserved(name: str) -> None:
    if name in RESERVED or name.startswith("tareador_"):
        raise FunctionError(f"{name} cannot be a task function: it is the program itself or a marker; "
                            "name the functions main calls")
    if name in HOOKED or name.startswith(("MPI_", "PMPI_")):
        raise FunctionError(f"{name} cannot be a task function: tareador watches its calls itself (allocation, "
                            "processes, MPI); name the functions of the program that call it")


def _library_function(program: str, symbols: _Symbols, libraries: _Libraries, name: str,
                      described: set[str]) -> tuple[TaskFunction, list[tuple[str, int]]]:
    """A function the executable does not define: one of its shared libraries', if one exports it
    (with the keys of its entry); FunctionError if none does or the program never calls it."""
    found = libraries.defining(name)
    if found is None:
        if name in symbols.imports:  # no ldd: the agent finds it among the loaded libraries
            return TaskFunction(name, (), False, "a shared library"), []
        if name in described:
            raise FunctionError(f"{name} has no code in '{program}' (the compiler removed it: is it ever called?)")
        raise FunctionError(_unknown(name, program, symbols, bool(described)))
    needed, where, offset = found
    if name not in symbols.imports and where.startswith(SYSTEM_DIRECTORIES):
        raise FunctionError(f"{name} is a function of {needed}, which '{program}' does not call directly: only "
                            "the program's own calls of a system library's function are tasks (not the calls "
                            "libraries make inside themselves); name a library function the program calls")
    return TaskFunction(name, (), False, needed, where), [(where, offset)]


def program_functions(path: str) -> list[str]:
    """Every function that may be a candidate task (explore): the executable's own functions
    (clones under their name, one name per entry, without the C runtime's, the markers and
    main), then the functions it calls in the libraries it links explicitly (DT_NEEDED), but
    not in the C/C++ runtime, tareador's or MPI's. FunctionError when there is none, before a
    run whose recording could have no task."""
    symbols = _read_symbols(path)
    by_entry: dict[tuple[int, ...], list[str]] = {}
    for n in _names(symbols):
        if n not in RUNTIME and not n.startswith("__") and "." not in n and not n.startswith("tareador_"):
            by_entry.setdefault(_entries(symbols, n), []).append(n)
    own = sorted(_preferred(names, symbols.weak) for names in by_entry.values())
    candidates = own + _library_candidates(path, symbols)
    if not candidates:
        why = ("the program is stripped (no symbol table): rebuild it without -s / strip" if symbols.stripped
               else "the compiler may have inlined them all: build with -fno-inline")
        raise FunctionError(f"'{path.rsplit('/', 1)[-1]}' has no function but main to explore; {why}")
    return candidates


def _library_candidates(path: str, symbols: _Symbols) -> list[str]:
    """The functions the executable imports from the libraries it links explicitly."""
    explicit = {n for n in read_functions(path).needed if not RUNTIME_LIBRARIES.match(n)}
    if not explicit:
        return []
    libraries = _Libraries(path)
    chosen = []
    for name in sorted(symbols.imports):
        if name.startswith(("__", "tareador_", "MPI_", "PMPI_")) or name in HOOKED:
            continue
        found = libraries.defining(name)
        if found is not None and found[0] in explicit:
            chosen.append(name)
    return chosen


def _unknown(name: str, program: str, symbols: _Symbols, debug_info: bool) -> str:
    close = difflib.get_close_matches(name, sorted(_names(symbols) | symbols.imports), n=5)
    text = f"no function named {name} in '{program}'"
    if close:
        text += f" (close names: {', '.join(close)})"
    if symbols.stripped:
        return text + "; the program is stripped (no symbol table): rebuild it without -s / strip"
    if not debug_info:
        return text + "; if it is a static function it may have been inlined: build with -g to know, or -fno-inline"
    return text + "; check the name"
