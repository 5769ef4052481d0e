"""Blocks a system library allocates for the program are objects, named by the program's call;
its own blocks (stdio buffers, FILE structs) never create dependencies (real binaries)."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from tareador.tracing import toolchain
from tareador.tracing.run import trace
from tests.helpers import write_c

# Each "make" task gets a block from libc, the next task reads it in the program's own code.
BLOCKS = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tareador.h"

#define TASK(name, call) do { tareador_start_task(name); call; tareador_end_task(name); } while (0)

char *copy, *prefix, *field, *line, *printed, *vprinted, *real, *stream, *cwd;
size_t field_size, line_size, stream_size;
struct dirent **entries;
int entry_count;
int sums[16];

__attribute__((noinline)) static int sum(const char *s, size_t n)
{ int t = 0; for (size_t i = 0; i < n; i++) t += s[i]; return t; }
__attribute__((noinline)) static int sum_string(const char *s) { int t = 0; do t += *s; while (*s++); return t; }
__attribute__((noinline)) static int format(char **out, const char *f, ...)
{
  va_list a;
  va_start(a, f);
  int n = vasprintf(out, f, a);  /* vasprintf */
  va_end(a);
  return n;
}
__attribute__((noinline)) static void write_stream(void)
{
  FILE *f = open_memstream(&stream, &stream_size);  /* open_memstream */
  fprintf(f, "abc%d", 7);
  fclose(f);
}
__attribute__((noinline)) static int read_entries(void)
{
  int t = 0;
  for (int i = 0; i < entry_count; i++) t += sum_string(entries[i]->d_name);
  return t;
}
__attribute__((noinline)) static void print(const char *what) { printf("%s\n", what); }
__attribute__((noinline)) static void write_file(const char *path)
{
  FILE *f = fopen(path, "w");
  fprintf(f, "%s\n", path);
  fclose(f);
}

int main(int argc, char **argv)
{
  /* argv: a file to read, a directory to list, the working directory, two files to write */
  FILE *in = fopen(argv[1], "r");
  chdir(argv[3]);
  setenv("PWD", argv[3], 1);  /* get_current_dir_name then returns a copy of it */
  tareador_ON();
  TASK("strdup", copy = strdup("hello, world"));  /* strdup */
  TASK("use_strdup", sums[0] = sum(copy, 13));
  TASK("strndup", prefix = strndup("hello, world", 5));  /* strndup */
  TASK("use_strndup", sums[1] = sum(prefix, 6));
  TASK("getdelim", getdelim(&field, &field_size, ';', in));  /* getdelim */
  TASK("use_getdelim", sums[2] = sum(field, 7));
  TASK("getline", getline(&line, &line_size, in));  /* getline */
  TASK("use_getline", sums[3] = sum(line, 151));
  TASK("asprintf", asprintf(&printed, "%d-%s", 42, "x"));  /* asprintf */
  TASK("use_asprintf", sums[4] = sum(printed, 5));
  TASK("vasprintf", format(&vprinted, "%s!", "abcdef"));
  TASK("use_vasprintf", sums[5] = sum(vprinted, 8));
  TASK("realpath", real = realpath(argv[3], NULL));  /* realpath */
  TASK("use_realpath", sums[6] = sum_string(real));
  TASK("open_memstream", write_stream());
  TASK("use_open_memstream", sums[7] = sum(stream, 5));
  TASK("scandir", entry_count = scandir(argv[2], &entries, NULL, alphasort));  /* scandir */
  TASK("use_scandir", sums[8] = read_entries());
  TASK("get_current_dir_name", cwd = get_current_dir_name());  /* get_current_dir_name */
  TASK("use_get_current_dir_name", sums[9] = sum_string(cwd));
  TASK("print_a", print("a"));
  TASK("print_b", print("b"));
  TASK("file_a", write_file(argv[4]));
  TASK("file_b", write_file(argv[5]));
  tareador_OFF();
  return 0;
}
"""


def line_of(source: str, marker: str) -> int:
    return next(i for i, text in enumerate(source.splitlines(), start=1) if text.endswith(f"/* {marker} */"))


def task_edges(t):
    name = {x.id: x.name for x in t.fragments}
    return {(name[d.src], name[d.dst], d.kind, d.object, d.bytes) for d in t.deps
            if not t.fragments[d.src].is_main and not t.fragments[d.dst].is_main}


@pytest.fixture(scope="module")
def blocks(compile_c, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("blocks")
    exe = compile_c(write_c(tmp, "blocks", BLOCKS))
    # getline's line outgrows the 120 bytes getdelim starts with: libc reallocs it
    (tmp / "input.txt").write_text("alpha;" + "x" * 149 + "\nrest\n")
    listed = tmp / "listed"
    listed.mkdir()
    (listed / "a").touch()
    (listed / "b").touch()
    work = (tmp / "work").resolve()
    work.mkdir()
    argv = [str(exe), str(tmp / "input.txt"), str(listed), str(work), str(tmp / "out_a"), str(tmp / "out_b")]
    return trace(argv, tmp / "t", progress=False), len(str(work)) + 1


def test_blocks_libc_allocates_for_the_program_are_objects(blocks):
    """Each block is written in its task (by libc) and read whole in the next: RAW with exactly
    the bytes libc wrote, on an object named by the line where the program called libc."""
    t, work_bytes = blocks
    heap = {m: f"heap:blocks.c:{line_of(BLOCKS, m)}" for m in
            ["strdup", "strndup", "getdelim", "getline", "asprintf", "vasprintf", "realpath", "open_memstream",
             "scandir", "get_current_dir_name"]}
    pointers = {"strdup": "copy", "strndup": "prefix", "getdelim": "field", "getline": "line",
                "asprintf": "printed", "vasprintf": "vprinted", "realpath": "real", "open_memstream": "stream",
                "scandir": "entries", "get_current_dir_name": "cwd"}
    written = {"strdup": 13, "strndup": 6, "getdelim": 7, "getline": 151, "asprintf": 5, "vasprintf": 8,
               "realpath": work_bytes, "open_memstream": 5, "get_current_dir_name": work_bytes}
    expected = {(f, f"use_{f}", "RAW", pointer, 8) for f, pointer in pointers.items()}
    expected |= {(f, f"use_{f}", "RAW", f"{heap[f]}#0", n) for f, n in written.items()}
    expected.add(("scandir", "use_scandir", "RAW", "entry_count", 4))
    # scandir: the array of 4 pointers first, then one block per entry (".", "..", "a", "b" in
    # directory order), whose names are read up to their NUL.
    scandir = {(obj, n) for s, d, k, obj, n in task_edges(t) if obj.startswith(heap["scandir"])}
    assert ((f"{heap['scandir']}#0", 32)) in scandir
    assert {obj for obj, n in scandir} == {f"{heap['scandir']}#{k}" for k in range(5)}
    assert sorted(n for obj, n in scandir if not obj.endswith("#0")) == [2, 2, 2, 3]
    expected |= {("scandir", "use_scandir", "RAW", obj, n) for obj, n in scandir}
    assert task_edges(t) == expected


def test_libc_own_blocks_give_no_dependency_and_are_not_listed(blocks):
    """stdio buffers, FILE structs, the DIR of scandir and the drafts of asprintf are libc's:
    two tasks that printf, or that each write a file, stay independent."""
    t, _ = blocks
    pairs = {(s, d) for s, d, *_ in task_edges(t)}
    assert not pairs & {("print_a", "print_b"), ("file_a", "file_b"), ("print_b", "file_a")}
    heap = sorted(o.name for o in t.objects if o.kind == "heap")
    assert len(heap) == 14 and all(n.startswith("heap:blocks.c:") for n in heap)
    assert [o.id for o in t.objects] == list(range(len(t.objects)))


CXX = r"""
#include <string>
#include "tareador.h"
struct Point { double x, y; };
int *ints;
Point *point;
std::string *text;
long sink;
__attribute__((noinline)) static void fill(int *a, int n) { for (int i = 0; i < n; i++) a[i] = i; }
__attribute__((noinline)) static long total(const int *a, int n)
{ long s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
int main()
{
  tareador_ON();
  tareador_start_task("make");
  ints = new int[16];  /* ints */
  point = new Point{1, 2};  /* point */
  fill(ints, 16);
  tareador_end_task("make");
  tareador_start_task("use"); sink = total(ints, 16) + (long) point->x; tareador_end_task("use");
  tareador_start_task("text"); text = new std::string("longer than the in-object buffer");  /* text */
  tareador_end_task("text");
  tareador_start_task("use_text"); sink += text->size(); tareador_end_task("use_text");
  tareador_OFF();
  return (int) (sink & 1);
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_cxx_new_is_named_by_the_program_line(tmp_path):
    """operator new lives in libstdc++: its blocks are named by the program's `new` line, and a
    block the program got from new is its object even where only libstdc++ touches it
    (std::string's constructor and size())."""
    source = tmp_path / "news.cc"
    source.write_text(CXX)
    exe = tmp_path / "news"
    subprocess.run(["g++", "-g", "-O0", *shlex.split(toolchain.cflags()), str(source), "-o", str(exe),
                    *shlex.split(toolchain.libs())], check=True)
    t = trace([str(exe)], tmp_path / "t", progress=False)
    line = {m: f"heap:news.cc:{line_of(CXX, m)}#0" for m in ["ints", "point", "text"]}
    edges = {e for e in task_edges(t) if e[3].startswith("heap:news.cc")}
    assert edges == {("make", "use", "RAW", line["ints"], 64), ("make", "use", "RAW", line["point"], 8),
                     ("text", "use_text", "RAW", line["text"], 8)}
    assert not [o.name for o in t.objects if "_Zn" in o.name or "?" in o.name]
