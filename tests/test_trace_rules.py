"""End-to-end: the dependency rules on a real binary (examples/rules/rules.c) under real Frida."""

from __future__ import annotations

import pytest

from tareador.tracing.run import trace
from tests.helpers import EXAMPLES

SOURCE = (EXAMPLES / "rules" / "rules.c").read_text().splitlines()


def heap(snippet: str, instance: int = 0) -> str:
    """Heap objects are named by allocation site: find the line that allocates them."""
    line = next(i for i, text in enumerate(SOURCE, start=1) if snippet in text)
    return f"heap:rules.c:{line}#{instance}"


RULE_EDGES = {
    # (src task, dst task, kind, object, bytes)
    ("produce", "consume_part", "RAW", heap("*buf = malloc"), 32),  # 8 of 16 ints overlap
    ("set_global", "get_global", "RAW", "counter", 4),
    ("fill_local", "sum_local", "RAW", "stack:main", 32),
    ("init_src", "copy", "RAW", heap("*src = malloc", 0), 256),  # memcpy reads src for 'copy'
    ("copy", "use_dst", "RAW", heap("*src = malloc", 1), 256),
    ("init_big", "big_copy", "RAW", "big_src", 65536),  # rep movsb in glibc
    ("big_copy", "use_big", "RAW", "big_dst", 65536),
    ("clear", "read_z", "RAW", heap("*src = malloc", 2), 1000),  # memset
    ("write_grow", "read_grow", "RAW", heap("grow = realloc"), 128),  # realloc moved the block
    ("write_shrink", "read_shrunk", "RAW", heap("*shrunk = realloc"), 128),  # realloc in place
    ("write_dis", "read_en", "RAW", heap("*dis = malloc"), 64),  # not read_dis: disabled then
    ("war_first", "war_read", "RAW", heap("*w = malloc"), 16),
    ("war_first", "war_write", "WAW", heap("*w = malloc"), 16),
    ("war_read", "war_write", "WAR", heap("*w = malloc"), 16),
    ("inner", "outer", "RAW", heap("*nest = malloc"), 16),  # nested: the child's writes
    ("allocate", "read_zeros", "RAW", heap("zeros = calloc"), 64),  # calloc's zeros
    ("allocate", "read_zeros", "RAW", "stack:main", 8),  # main's pointer variable `zeros`
    ("write_chars", "read_word", "RAW", heap("*bytes = malloc"), 2),  # chars 1 and 2 of int 0
    ("write_char", "read_word", "RAW", heap("*bytes = malloc"), 1),  # char 5, in int 1
    ("write_chars", "rewrite", "WAW", heap("*bytes = malloc"), 2),
    ("write_char", "rewrite", "WAW", heap("*bytes = malloc"), 1),
    ("read_word", "rewrite", "WAR", heap("*bytes = malloc"), 8),
    ("rewrite", "reread", "RAW", heap("*bytes = malloc"), 8),  # whole ints again
    ("write_mapped", "read_mapped", "RAW", heap("*mapped = mmap"), 16),  # ints 4..7 of a mapping
    ("write_mapped", "read_unmap", "RAW", heap("*mapped = mmap"), 32),  # read, then munmap in the task
}
# Tasks doing `sink += ...` read and write main's local `sink`: a genuine chain through it.
SINK_TASKS = ["consume_part", "get_global", "sum_local", "private_a", "private_b", "use_dst", "use_big",
              "read_z", "read_new", "read_grow", "read_shrunk", "read_dis", "read_en", "war_read", "outer",
              "read_zeros", "read_word", "reread", "read_mapped", "read_unmap"]


@pytest.fixture(scope="module")
def rules_trace(compile_c, tmp_path_factory):
    exe = compile_c(EXAMPLES / "rules" / "rules.c")
    return trace([str(exe)], tmp_path_factory.mktemp("rules") / "t", progress=False)


def task_edges(t):
    name = {x.id: x.name for x in t.fragments}
    return {(name[d.src], name[d.dst], d.kind, d.object, d.bytes) for d in t.deps
            if name[d.src] != "main" and name[d.dst] != "main"}


def test_every_rule_gives_exactly_its_edges(rules_trace):
    sink_chain = set()
    for a, b in zip(SINK_TASKS, SINK_TASKS[1:]):
        sink_chain |= {(a, b, "RAW", "stack:main", 4), (a, b, "WAW", "stack:main", 4)}
    assert task_edges(rules_trace) == RULE_EDGES | sink_chain


def test_no_edge_through_libc_state_private_stack_or_freed_block(rules_trace):
    pairs = {(s, d) for s, d, *_ in task_edges(rules_trace)}
    assert ("print_a", "print_b") not in pairs
    assert ("private_a", "private_b", "RAW", "stack:main", 4) in task_edges(rules_trace)
    assert not any(obj != "stack:main" for s, d, k, obj, b in task_edges(rules_trace)
                   if (s, d) == ("private_a", "private_b"))
    assert ("write_old", "read_new") not in pairs
    assert ("write_dis", "read_dis") not in pairs


def test_task_table_and_summary(rules_trace):
    t = rules_trace
    names = [x.name for x in t.fragments if not x.is_main and x.starts_instance]
    assert len(names) == 42 and len(set(names)) == 42
    assert t.summary["instances"] == 42 and t.summary["task_types"] == 42
    assert t.summary["partial"] is False and t.summary["exit_status"] == 0
    # outer is cut where it creates inner: outer's first fragment, inner, outer's second fragment.
    inner = next(x for x in t.fragments if x.name == "inner")
    outer = [x for x in t.fragments if x.name == "outer"]
    assert [x.id for x in outer] == [inner.id - 1, inner.id + 1] and {x.instance for x in outer} == {outer[0].id}
    assert inner.parent == outer[0].id and inner.instance == inner.id and outer[1].parent == outer[0].parent
    assert outer[0].end == inner.start and inner.end == outer[1].start
    assert all(x.instructions > 0 for x in t.fragments if not x.is_main)
    assert t.t1 == sum(x.instructions for x in t.fragments)


def test_instruction_counts_are_deterministic(compile_c, tmp_path):
    exe = compile_c(EXAMPLES / "rules" / "rules.c")
    a = trace([str(exe)], tmp_path / "a", progress=False)
    b = trace([str(exe)], tmp_path / "b", progress=False)
    assert [x.instructions for x in a.fragments] == [x.instructions for x in b.fragments]
    assert a.deps == b.deps


def test_rules_hold_at_O2(compile_c, tmp_path):
    """Optimised code keeps `sink` in a register and main has no frame pointer (its frame is then
    just `stack`), but every rule on heap and global objects gives the same edges."""
    exe = compile_c(EXAMPLES / "rules" / "rules.c", opt="-O2")
    edges = task_edges(trace([str(exe)], tmp_path / "t", progress=False))
    not_stack = {e for e in edges if not e[3].startswith("stack")}
    assert not_stack == {e for e in RULE_EDGES if not e[3].startswith("stack")}
    assert ("fill_local", "sum_local", "RAW", "stack", 32) in edges
    assert not any((s, d) == ("private_a", "private_b") for s, d, *_ in edges)
