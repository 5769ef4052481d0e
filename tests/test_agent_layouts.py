"""The agent's binary tables are declared once, as the C structs its CModules write
(tracer_agents/*.c); decode.py's numpy dtypes and agent.js's row sizes must lay them out the same.
A C compiler says where each field of each struct is (offsetof, sizeof, on x86-64 as in the
traced process): every dtype field must be there with the C field's size, in the same order,
and every row size the same. A field added, moved or widened on one side only fails here."""

from __future__ import annotations

import re
import subprocess

import pytest

from tareador.tracing import decode
from tests.helpers import ROOT

AGENTS = ROOT / "tracer_agents"
# Each table file: the source and struct of its rows, and the dtype fields named otherwise in C.
STRUCTS = {
    "tasks.bin": ("shadow.c", "TaskRow", {}),
    "objects.bin": ("shadow.c", "ObjectRow", {}),
    "edges.bin": ("shadow.c", "EdgeRow", {}),
    "accesses.bin": ("shadow.c", "AccessRow", {"task": "fragment"}),
    "calls.bin": ("shadow.c", "CallRow", {"task": "fragment"}),
    "mpi-calls.bin": ("mpi.c", "CallRow", {}),
    "mpi-completions.bin": ("mpi.c", "Completion", {}),
    "mpi-comms.bin": ("mpi.c", "Comm", {}),
    "pattern-rows.bin": ("patterns.c", "PatternRow", {}),
}
SCALARS = {"mpi-ranks.bin": "gint32", "pattern-times.bin": "uint64_t"}  # tables of one C value per row
GLIB = ("typedef uint64_t guint64; typedef int64_t gint64; typedef uint32_t guint32; typedef int32_t gint32;\n"
        "typedef uint8_t guint8; typedef void *gpointer;\n")


def struct_fields(source: str, name: str) -> tuple[str, list[str]]:
    """The struct's C text and its field names in order (one or several declarators a line,
    pointers and arrays included)."""
    body = re.search(r"typedef struct \{([^{}]*)\} " + name + ";", source).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = []
    for declaration in filter(str.strip, body.split(";")):
        _, first = declaration.split(None, 1)
        names += [re.match(r"\s*\**\s*(\w+)", d).group(1) for d in first.split(",")]
    return f"typedef struct {{{body}}} {name};", names


@pytest.fixture(scope="module")
def c_layouts(tmp_path_factory) -> dict[str, tuple[int, list[tuple[str, int, int]]]]:
    """table file -> (sizeof its row, [(field, offsetof, sizeof)] in order), from the C compiler."""
    sources = {f: (AGENTS / f).read_text() for f in {f for f, _, _ in STRUCTS.values()}}
    defines = "".join(re.findall(r"^#define CALL_ARGS .*\n", sources["shadow.c"], re.M))
    program = ["#include <stddef.h>", "#include <stdint.h>", "#include <stdio.h>", GLIB, defines]
    prints = []
    for table, (file, struct, _) in STRUCTS.items():
        text, fields = struct_fields(sources[file], struct)
        alias = re.sub(r"\W", "_", table)
        program.append(text.replace(f"}} {struct};", f"}} {alias};"))
        prints.append(f'printf("{table} %zu\\n", sizeof({alias}));')
        prints += [f'printf("{table} {f} %zu %zu\\n", offsetof({alias}, {f}), sizeof((({alias} *) 0)->{f}));'
                   for f in fields]
    prints += [f'printf("{table} %zu\\n", sizeof({c_type}));' for table, c_type in SCALARS.items()]
    path = tmp_path_factory.mktemp("layouts") / "layouts.c"
    path.write_text("\n".join(program) + "\nint main(void) {\n" + "\n".join(prints) + "\nreturn 0;\n}\n")
    exe = path.with_suffix("")
    subprocess.run(["cc", "-m64", "-Wall", "-Werror", str(path), "-o", str(exe)], check=True)
    layouts: dict[str, tuple[int, list[tuple[str, int, int]]]] = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        table, *rest = line.split()
        if len(rest) == 1:
            layouts[table] = (int(rest[0]), [])
        else:
            layouts[table][1].append((rest[0], int(rest[1]), int(rest[2])))
    return layouts


def test_every_table_file_is_described(c_layouts):
    named = {m for f in ("shadow.c", "agent.js") for m in re.findall(r"[\"']([a-z-]+\.bin)[\"']",
                                                                       (AGENTS / f).read_text())}
    assert set(decode.FILES) == set(STRUCTS) | set(SCALARS) == set(c_layouts) == named


@pytest.mark.parametrize("table", sorted(STRUCTS))
def test_numpy_lays_out_each_row_as_c_does(c_layouts, table):
    size, fields = c_layouts[table]
    dtype = decode.FILES[table]
    renamed = STRUCTS[table][2]
    assert dtype.itemsize == size
    numpy_fields = [(renamed.get(name, name), dtype.fields[name][1], dtype.fields[name][0].itemsize)
                    for name in dtype.names]
    assert numpy_fields == fields


def test_scalar_tables_and_agent_js_row_sizes(c_layouts):
    for table in SCALARS:
        assert decode.FILES[table].itemsize == c_layouts[table][0]
    agent = (AGENTS / "agent.js").read_text()
    sizes = {name: int(size) for name, size in re.findall(r"\['([a-z-]+\.bin)', (\d+)\]", agent)}
    assert set(sizes) == {"mpi-calls.bin", "mpi-completions.bin", "mpi-comms.bin", "mpi-ranks.bin",
                          "pattern-rows.bin", "pattern-times.bin"}
    assert sizes == {name: c_layouts[name][0] for name in sizes}
