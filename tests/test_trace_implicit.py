"""Every access an instruction makes is recorded, named or implicit (docs/reference/models/dependencies.md:
the instruction-class table): one task pair per class on a real binary, at -O0 and -O2, whose
only link is memory one of them touches implicitly; and the issue's case, stack arguments
passed with push to a task function. Byte counts are derived by hand from the instructions."""

from __future__ import annotations

import subprocess

import pytest

from tareador.tracing.run import trace
from tests.helpers import write_c

# Inline assembly moves rsp into a global (the instrumentation writes below the stack pointer,
# hence the big array), runs the one instruction, and moves it back.
CLASSES = r"""
#include <cpuid.h>
#include <stdio.h>
#include <string.h>
#include "tareador.h"
#define T(name, body) do { tareador_start_task(name); body; tareador_end_task(name); } while (0)
#define NOINLINE __attribute__((noinline))

/* Instrumentation needs stack room below the stack pointer: the slots are in the middle of a big
 * array, area = stack_area + 32768. */
long stack_area[65536], source[8], sink;
#define area (stack_area + 32768)
char text[64], other[64];
long counter, swapped, added, pair[2] __attribute__((aligned(16)));
unsigned char table[16];
char fx[512] __attribute__((aligned(16))), fpu[108];
char xs[8192] __attribute__((aligned(64)));
long double ld_in = 1.5L, ld_out;
int lane, csr;
extern char ret_target[], leave_target[];

/* rsp (and rbp) moved into a global for one instruction, then back. */
NOINLINE void push_into_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tlea stack_area+262208(%%rip), %%rsp\n\tpushq $7\n\tpushfq\n\t"
                   "pushq source(%%rip)\n\tmov %%r12, %%rsp"
                   ::: "r12", "memory");
}
NOINLINE void pop_from_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tlea stack_area+262184(%%rip), %%rsp\n\tpopq %%rax\n\tpopfq\n\t"
                   "popq sink(%%rip)\n\tmov %%r12, %%rsp"
                   ::: "r12", "rax", "memory", "cc");
}
NOINLINE void call_into_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tlea stack_area+262208(%%rip), %%rsp\n\tcall 1f\n1:\tmov %%r12, %%rsp"
                   ::: "r12", "memory");
}
NOINLINE void ret_from_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tlea stack_area+262144(%%rip), %%rsp\n\tret\n\t"
                   ".globl ret_target\nret_target:\n\tmov %%r12, %%rsp"
                   ::: "r12", "memory");
}
NOINLINE void enter_into_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tmov %%rbp, %%r13\n\tlea stack_area+262208(%%rip), %%rsp\n\t"
                   "lea source+16(%%rip), %%rbp\n\t"
                   "enter $0, $2\n\tmov %%r12, %%rsp\n\tmov %%r13, %%rbp" ::: "r12", "r13", "memory");
}
NOINLINE void leave_from_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tmov %%rbp, %%r13\n\tlea stack_area+262152(%%rip), %%rbp\n\tleave\n\t"
                   "mov %%r12, %%rsp\n\tmov %%r13, %%rbp" ::: "r12", "r13", "memory");
}
/* Runs of pushes and pops (a prologue's, an epilogue's): one record for the run. */
NOINLINE void push_run_into_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tlea stack_area+262208(%%rip), %%rsp\n\tpush %%rbx\n\tpush %%r13\n\tpushq $9\n\t"
                   "mov %%r12, %%rsp" ::: "r12", "memory");
}
NOINLINE void pop_run_from_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tlea stack_area+262160(%%rip), %%rsp\n\tpop %%rax\n\tpop %%rcx\n\tpop %%rdx\n\t"
                   "mov %%r12, %%rsp" ::: "r12", "rax", "rcx", "rdx", "memory");
}
NOINLINE void leave_ret_from_area(void) {
  __asm__ volatile("mov %%rsp, %%r12\n\tmov %%rbp, %%r13\n\tlea stack_area+262152(%%rip), %%rbp\n\tleave\n\tret\n\t"
                   ".globl leave_target\nleave_target:\n\tmov %%r12, %%rsp\n\tmov %%r13, %%rbp"
                   ::: "r12", "r13", "memory");
}
NOINLINE void compare_strings(void) {
  long n = 64; const char *a = text, *b = other;
  __asm__ volatile("cld\n\trepe cmpsb" : "+S"(a), "+D"(b), "+c"(n) : : "memory", "cc");
  sink = n;
}
NOINLINE void scan_string(void) {
  long n = 64; const char *a = text;
  __asm__ volatile("cld\n\trepne scasb" : "+D"(a), "+c"(n) : "a"(0) : "memory", "cc");
  sink = n;
}
NOINLINE void store_backwards(void) {
  long n = 3; long *d = &area[7];
  __asm__ volatile("std\n\trep stosq\n\tcld" : "+D"(d), "+c"(n) : "a"(5L) : "memory", "cc");
}
NOINLINE void load_string(void) {
  const char *a = text + 5; char c;
  __asm__ volatile("cld\n\tlodsb" : "+S"(a), "=a"(c) : : "memory");
  sink = c;
}
NOINLINE void translate(void) {
  unsigned char c = 9;
  __asm__ volatile("xlatb" : "+a"(c) : "b"(table) : "memory");
  sink = c;
}
NOINLINE void exchange16(void) {
  long lo = 0, hi = 0;
  __asm__ volatile("lock cmpxchg16b %2" : "+a"(lo), "+d"(hi), "+m"(*(__int128 *) pair) : "b"(1L), "c"(2L)
                   : "memory", "cc");
}
int main(void) {
  unsigned a, b, c, d;
  __get_cpuid_count(0xd, 0, &a, &b, &c, &d);
  tareador_ON();
  T("push", push_into_area());                         /* writes area[5..8): 7, flags, source[0] */
  T("push_read", sink = area[5] + area[6] + area[7]);
  T("write_area", for (int i = 0; i < 8; i++) area[i] = i);
  T("pop", pop_from_area());                           /* reads area[5..8), writes sink */
  T("call", call_into_area());                         /* writes area[7] */
  T("call_read", sink = area[7]);
  T("write_ret", area[0] = (long) ret_target);
  T("ret", ret_from_area());                           /* reads area[0] */
  T("write_link", source[1] = (long) &source[1]);
  T("enter", enter_into_area());                       /* reads source[1], writes area[5..8) */
  T("enter_read", sink = area[5] + area[6] + area[7]);
  T("write_frame", area[1] = (long) &area[2]);
  T("leave", leave_from_area());                       /* reads area[1] */
  T("push_run", push_run_into_area());                 /* writes area[5..8) */
  T("push_run_read", sink = area[4] + area[5] + area[6] + area[7]);
  T("pop_run", pop_run_from_area());                   /* reads area[2..5) */
  T("write_leave", area[1] = (long) &area[4]; area[2] = (long) leave_target);
  T("leave_ret", leave_ret_from_area());               /* reads area[1], area[2] */
  T("write_text", memset(text, 'a', 64); memset(other, 'a', 64); other[10] = 'b'; text[20] = 0);
  T("cmps", compare_strings());                        /* 11 bytes of each */
  T("scas", scan_string());                            /* 21 bytes */
  T("lods", load_string());                            /* text[5] */
  T("stos_down", store_backwards());                   /* area[5..8) */
  T("stos_read", sink = area[4] + area[5] + area[6] + area[7]);
  T("write_table", for (int i = 0; i < 16; i++) table[i] = (unsigned char) i);
  T("xlat", translate());                              /* table[9] */
  T("write_atomics", counter = 1; swapped = 2; added = 3; pair[0] = pair[1] = 0);
  T("cmpxchg", long e = 1; __atomic_compare_exchange_n(&counter, &e, 5, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  T("xchg", sink = __atomic_exchange_n(&swapped, 6, __ATOMIC_SEQ_CST));
  T("xadd", sink = __atomic_fetch_add(&added, 7, __ATOMIC_SEQ_CST));
  T("cmpxchg16b", exchange16());
  T("atomics_read", sink = counter + swapped + added + pair[0] + pair[1]);
  T("fxsave", __asm__ volatile("fxsave %0" : "=m"(fx)));
  T("fxrstor", __asm__ volatile("fxrstor %0" : : "m"(fx)));
  T("fnsave", __asm__ volatile("fnsave %0\n\tfrstor %0" : "+m"(fpu)));
  T("fpu_read", sink = fpu[0] + fpu[107]);
  T("xsave", __asm__ volatile("xsave %0" : "=m"(xs) : "a"(-1), "d"(-1)));
  T("xrstor", __asm__ volatile("xrstor %0" : : "m"(xs), "a"(-1), "d"(-1)));
  T("xsave_read", long s = 0; for (int i = 0; i < 8192; i++) s += xs[i]; sink = s);
  T("x87_store", ld_out = ld_in * 3);                  /* fstp: 10 bytes */
  T("pextrd", __asm__ volatile("pextrd $1, %%xmm0, %0" : "=m"(lane)));
  T("stmxcsr", __asm__ volatile("stmxcsr %0" : "=m"(csr)));
  T("stores_read", sink = (long) ld_out + lane + csr);
  tareador_OFF();
  printf("xsave %u\n", b);
  return 0;
}
"""


def task_raw_edges(t) -> set[tuple[str, str, str, int]]:
    """RAW edges between tasks (not main's fragments), by task name."""
    name = {x.id: x.name for x in t.fragments}
    return {(name[d.src], name[d.dst], d.object, d.bytes) for d in t.deps
            if d.kind == "RAW" and not t.fragments[d.src].is_main and not t.fragments[d.dst].is_main}


# Per instruction class (the table of docs/reference/models/dependencies.md), the RAW edges between tasks it is the
# link of.
CLASS_EDGES = {
    "push": {("push", "push_read", "stack_area", 24)},         # push imm, pushfq, push [mem]: 3 slots
    "pop": {("write_area", "pop", "stack_area", 24)},          # pop reg, popfq, pop [mem]
    "call": {("call", "call_read", "stack_area", 8)},          # the return address
    "ret": {("write_ret", "ret", "stack_area", 8)},
    "enter": {("write_link", "enter", "source", 8),            # enter $0, $2 copies the frame pointer at [rbp - 8]
              ("enter", "enter_read", "stack_area", 24)},      # and pushes rbp, that copy and the new frame pointer
    "leave": {("write_frame", "leave", "stack_area", 8)},      # leave pops rbp from [rbp]
    "push, pop, leave runs": {("push_run", "push_run_read", "stack_area", 24),   # push rbx; push r13; push $9
                              ("write_area", "push_run_read", "stack_area", 8),
                              ("write_area", "pop_run", "stack_area", 24),       # pop rax; pop rcx; pop rdx
                              ("write_leave", "leave_ret", "stack_area", 16)},   # leave; ret
    "cmps": {("write_text", "cmps", "text", 11),               # repe cmpsb stops after the differing byte 10
             ("write_text", "cmps", "other", 11)},
    "scas": {("write_text", "scas", "text", 21)},              # repne scasb stops after the zero at 20
    "lods": {("write_text", "lods", "text", 1)},
    "stos": {("write_area", "stos_read", "stack_area", 8),     # area[4]; area[5..7] by std; rep stosq
             ("stos_down", "stos_read", "stack_area", 24)},
    "xlat": {("write_table", "xlat", "table", 1)},             # table[9]
    "xchg, cmpxchg, xadd, cmpxchg16b": {                       # each reads, then writes
        ("write_atomics", "cmpxchg", "counter", 8), ("cmpxchg", "atomics_read", "counter", 8),
        ("write_atomics", "xchg", "swapped", 8), ("xchg", "atomics_read", "swapped", 8),
        ("write_atomics", "xadd", "added", 8), ("xadd", "atomics_read", "added", 8),
        ("write_atomics", "cmpxchg16b", "pair", 16), ("cmpxchg16b", "atomics_read", "pair", 16)},
    "fxsave, fxrstor": {("fxsave", "fxrstor", "fx", 512)},
    "fnsave, frstor": {("fnsave", "fpu_read", "fpu", 2)},      # fpu[0] and fpu[107]: fnsave wrote all 108 bytes
    "xsave, xrstor": {("xsave", "xrstor", "xs", "XSAVE"),      # the area CPUID leaf 0xD gives for XCR0
                      ("xsave", "xsave_read", "xs", "XSAVE")},
    "stores Capstone calls reads (fstp, pextrd, stmxcsr)": {   # write their first operand
        ("x87_store", "stores_read", "ld_out", 10), ("pextrd", "stores_read", "lane", 4),
        ("stmxcsr", "stores_read", "csr", 4)},
}


@pytest.fixture(scope="module", params=["-O0", "-O2"])
def classes_trace(request, compile_c, tmp_path_factory):
    """(RAW edges between tasks, xsave area size the program got from CPUID)."""
    tmp = tmp_path_factory.mktemp("classes")
    exe = compile_c(write_c(tmp, "classes", CLASSES), opt=request.param)
    native = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    t = trace([str(exe)], tmp / "classes.tareador", progress=False)
    assert t.summary["exit_status"] == 0
    return task_raw_edges(t), int(native.split("xsave ")[1].split()[0])


def test_only_the_classes_links_are_edges(classes_trace):
    edges, xsave_bytes = classes_trace
    expected = {(s, d, o, xsave_bytes if b == "XSAVE" else b) for links in CLASS_EDGES.values() for s, d, o, b in links}
    assert edges == expected


@pytest.mark.parametrize("instruction_class", sorted(CLASS_EDGES))
def test_instruction_class_records_its_accesses(classes_trace, instruction_class):
    edges, xsave_bytes = classes_trace
    expected = {(s, d, o, xsave_bytes if b == "XSAVE" else b) for s, d, o, b in CLASS_EDGES[instruction_class]}
    assert expected <= edges


# The case: b takes 20 longs, 14 of them on the stack, pushed by main (-O0 and -O2) or
# stored with mov (-maccumulate-outgoing-args); a's 512-byte buffer was where they go.
STACK_ARGUMENTS = r"""
#include <stdio.h>
#define NOINLINE __attribute__((noinline))
long out[3];
NOINLINE void a(int k) {
  volatile char buf[512];
  for (int i = 0; i < 512; i++) buf[i] = (char) (i + k);
  out[k] = buf[k * 7 % 512];
}
NOINLINE long b(long a0, long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8, long a9,
                long a10, long a11, long a12, long a13, long a14, long a15, long a16, long a17, long a18, long a19) {
  return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17 + a18 + a19;
}
int main(void) {
  long s = 0;
  for (int k = 0; k < 3; k++) {
    a(k);
    s += b(k, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19);
  }
  printf("%ld %ld\n", s, out[0] + out[1] + out[2]);
  return s != 573;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O0 -maccumulate-outgoing-args", "-O2", "-O2 -maccumulate-outgoing-args"])
def test_stack_arguments_come_from_the_caller_not_a_dead_task_frame(compile_c, tmp_path, opt):
    """b reads its 14 stack arguments (112 bytes), which main wrote right before the call: one
    RAW edge main -> b each time, on main's frame (just `stack` without a frame pointer), and
    nothing from a, whose dead frame held those bytes before. main reads the out[k] a wrote."""
    exe = compile_c(write_c(tmp_path, "stackargs", STACK_ARGUMENTS), opt=opt, markers=False)
    t = trace([str(exe)], tmp_path / "stackargs.tareador", progress=False, task_functions=["a", "b"])
    assert t.summary["exit_status"] == 0
    instances = [x for x in t.fragments if x.starts_instance and not x.is_main]
    assert [x.name for x in instances] == ["a", "b"] * 3
    frame = "stack:main" if opt.startswith("-O0") else "stack"
    raw = [(t.fragments[d.src].name, t.fragments[d.dst].name, d.object, d.bytes) for d in t.deps if d.kind == "RAW"]
    assert sorted(raw) == [("a", "main", "out", 8)] * 3 + [("main", "b", frame, 112)] * 3
    assert all(d.dst == d.src + 1 for d in t.deps if d.kind == "RAW" and t.fragments[d.dst].name == "b")


# Gathers, scatters and masked moves access the elements their mask selects, at the addresses
# their index vector gives: AVX2 (vector masks) and AVX-512 (k masks).
VECTORS = r"""
#include <immintrin.h>
#include <stdio.h>
#include "tareador.h"
#define T(name, body) do { tareador_start_task(name); body; tareador_end_task(name); } while (0)
int data[64], scattered[64];
long ldata[32];
char bytes[64], loaded[64], mbytes[16];
float floats[8];
long sink, longs[8];
int packed[16], bval;
__m512i keep512;
__m256i keep256;
int main(void) {
  tareador_ON();
  T("write_data", for (int i = 0; i < 64; i++) data[i] = i; for (int i = 0; i < 32; i++) ldata[i] = i);
  T("gather_avx2", {
    __m256i idx = _mm256_setr_epi32(1, 5, 9, 13, 17, 21, 25, 29);
    __m256i mask = _mm256_setr_epi32(-1, 0, -1, -1, 0, 0, 0, -1);          /* elements 0, 2, 3, 7 */
    keep256 = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), data, idx, mask, 4);
  });
  T("gather_avx512", {
    __m512i idx = _mm512_setr_epi64(0, 3, 6, 9, 12, 15, 18, 21);
    keep512 = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), 0xb5, idx, ldata, 8);   /* 5 elements */
  });
  T("write_scattered", for (int i = 0; i < 64; i++) scattered[i] = -i);
  T("scatter", {
    __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60);
    _mm512_mask_i32scatter_epi32(scattered, 0x80f1, idx, _mm512_set1_epi32(7), 4);        /* 6 elements */
  });
  T("scattered_read", long s = 0; for (int i = 0; i < 64; i++) s += scattered[i]; sink = s);
  T("write_bytes", for (int i = 0; i < 64; i++) { bytes[i] = 1; loaded[i] = 2; });
  T("masked_store", _mm512_mask_storeu_epi8(bytes, 0x1f00000000000000ULL, _mm512_set1_epi8(9)));  /* bytes 56..60 */
  T("bytes_read", long s = 0; for (int i = 0; i < 64; i++) s += bytes[i]; sink = s);
  T("masked_load", keep512 = _mm512_maskz_loadu_epi8(0xf0, loaded));                          /* bytes 4..7 */
  T("write_floats", for (int i = 0; i < 8; i++) floats[i] = i; for (int i = 0; i < 16; i++) mbytes[i] = 0);
  T("maskstore", _mm256_maskstore_ps(floats, _mm256_setr_epi32(-1, 0, 0, -1, 0, 0, 0, -1), _mm256_set1_ps(3)));
  T("maskmovdqu", _mm_maskmoveu_si128(_mm_set1_epi8(5),
                                      _mm_setr_epi8(-1, 0, -1, 0, -1, 0, -1, 0, 0, 0, 0, 0, 0, 0, -1, -1),
                                      mbytes));                                               /* 6 bytes */
  T("write_packed", for (int i = 0; i < 16; i++) packed[i] = i; for (int i = 0; i < 8; i++) longs[i] = i; bval = 3);
  T("compress", _mm512_mask_compressstoreu_epi32(packed, 0x0f0f, _mm512_set1_epi32(4)));      /* packed[0..7] */
  T("expand", keep512 = _mm512_maskz_expandloadu_epi32(0x0f01, packed + 8));                /* packed[8..13) */
  T("masked_store64", _mm512_mask_storeu_epi64(longs, 0x81, _mm512_set1_epi64(5)));          /* longs 0 and 7 */
  T("broadcast", __asm__ volatile("kmovw %1, %%k1\n\tvpbroadcastd %0, %%zmm1%{%%k1%}" : : "m"(bval), "r"(0x5555)
                                  : "k1", "xmm1"));                                          /* reads bval */
  T("extract", __asm__ volatile("vextracti128 $1, %%ymm1, %0" : "=m"(*(__m128i *) (longs + 2))));  /* longs 2, 3 */
  T("packed_read", long s = bval; for (int i = 0; i < 16; i++) s += packed[i];
    for (int i = 0; i < 8; i++) s += longs[i]; sink = s);
  T("floats_read", float s = 0; for (int i = 0; i < 8; i++) s += floats[i];
    for (int i = 0; i < 16; i++) s += mbytes[i]; sink = (long) s);
  tareador_OFF();
  printf("%ld\n", sink);
  return 0;
}
"""

VECTOR_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl")


def cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as f:
        return set(next(line for line in f if line.startswith("flags")).split(":")[1].split())


@pytest.mark.skipif(not set(VECTOR_FLAGS) <= cpu_flags(), reason="needs a CPU with AVX2 and AVX-512 (F, BW, VL)")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_gathers_scatters_and_masked_moves_access_the_selected_elements(compile_c, tmp_path, opt):
    exe = compile_c(write_c(tmp_path, "vectors", VECTORS), opt=f"{opt} -mavx2 -mavx512f -mavx512bw -mavx512vl")
    t = trace([str(exe)], tmp_path / "vectors.tareador", progress=False)
    assert t.summary["exit_status"] == 0
    assert task_raw_edges(t) == {
        ("write_data", "gather_avx2", "data", 16),                  # 4 of 8 ints
        ("write_data", "gather_avx512", "ldata", 40),               # 5 of 8 longs
        ("scatter", "scattered_read", "scattered", 24),             # 6 of 16 ints (mask 0x80f1)
        ("write_scattered", "scattered_read", "scattered", 232),    # the other 58
        ("masked_store", "bytes_read", "bytes", 5),
        ("write_bytes", "bytes_read", "bytes", 59),
        ("write_bytes", "masked_load", "loaded", 4),
        ("maskstore", "floats_read", "floats", 12),                 # vmaskmovps: 3 of 8 floats
        ("write_floats", "floats_read", "floats", 20),
        ("maskmovdqu", "floats_read", "mbytes", 6),                 # 6 of 16 bytes
        ("write_floats", "floats_read", "mbytes", 10),
        ("write_packed", "expand", "packed", 20),                   # vpexpandd: 5 mask bits, the first 5 ints
        ("compress", "packed_read", "packed", 32),                  # vpcompressd: 8 mask bits, the first 8 ints
        ("write_packed", "packed_read", "packed", 32),
        ("masked_store64", "packed_read", "longs", 16),             # vmovdqu64 {k}: 2 of 8 longs
        ("extract", "packed_read", "longs", 16),                    # vextracti128 to memory: 2 longs
        ("write_packed", "packed_read", "longs", 32),
        ("write_packed", "broadcast", "bval", 4),                   # a masked broadcast only reads its source
        ("write_packed", "packed_read", "bval", 4),
    }
