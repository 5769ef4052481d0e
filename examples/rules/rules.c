/* One small task pair per dependency rule tareador applies; tests/test_trace_rules.py checks the
 * exact edges. Each task body is its own function so that it reads main's variables only
 * through its arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "tareador.h"

#define TASK(name, call) do { tareador_start_task(name); call; tareador_end_task(name); } while (0)

int counter;                 /* a global of the executable */
static char big_src[65536];  /* large enough for glibc's memcpy to use rep movsb */
static char big_dst[65536];

__attribute__((noinline)) static void write_ints(int *a, int from, int to) { for (int i = from; i < to; i++) a[i] = i; }
__attribute__((noinline)) static int read_ints(const int *a, int from, int to) { int s = 0; for (int i = from; i < to; i++) s += a[i]; return s; }
__attribute__((noinline)) static void set_counter(void) { counter = 42; }
__attribute__((noinline)) static int get_counter(void) { return counter; }
__attribute__((noinline)) static void fill_local(double *l) { for (int i = 0; i < 4; i++) l[i] = i; }
__attribute__((noinline)) static double sum_local(const double *l) { double s = 0; for (int i = 0; i < 4; i++) s += l[i]; return s; }
/* Both use a local array at the same stack depth: private to each task instance. Reading the
 * uninitialised array is the point: it must not depend on the other task's writes. */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((noinline)) static int scratch_write(void) { volatile int tmp[64]; for (int i = 0; i < 64; i++) tmp[i] = i; return tmp[3]; }
__attribute__((noinline)) static int scratch_read(void) { volatile int tmp[64]; int s = 0; for (int i = 0; i < 64; i++) s += tmp[i]; return s; }
__attribute__((noinline)) static void copy_bytes(char *d, const char *s, size_t n) { memcpy(d, s, n); }
__attribute__((noinline)) static void fill_bytes(char *d, int v, size_t n) { memset(d, v, n); }
__attribute__((noinline)) static int sum_bytes(const char *d, size_t n) { int s = 0; for (size_t i = 0; i < n; i++) s += d[i]; return s; }
__attribute__((noinline)) static void write_chars(char *d, int from, int to) { for (int i = from; i < to; i++) d[i] = (char) i; }
__attribute__((noinline)) static int read_and_unmap(int *m, int n) { int s = read_ints(m, 0, n); munmap(m, 4096); return s; }
__attribute__((noinline)) static void say(const char *what) { printf("%s\n", what); }

int main(void)
{
  int *buf = malloc(32 * sizeof(int));
  char *src = malloc(256), *dst = malloc(256), *z = malloc(1000);
  int *dis = malloc(16 * sizeof(int));
  int *w = malloc(4 * sizeof(int));
  int *nest = malloc(4 * sizeof(int));
  char *bytes = malloc(8);
  int *mapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  double local[4];
  int sink = 0;

  tareador_ON();
  /* RAW at byte granularity, partial overlap: 8 shared ints = 32 bytes. */
  TASK("produce", write_ints(buf, 0, 16));
  TASK("consume_part", sink += read_ints(buf, 8, 24));
  /* A global, named by its symbol. */
  TASK("set_global", set_counter());
  TASK("get_global", sink += get_counter());
  /* main's local array passed into tasks: a shared object above the tasks' stack. */
  TASK("fill_local", fill_local(local));
  TASK("sum_local", sink += (int) sum_local(local));
  /* Task-private stack: no edge although the same addresses are written then read. */
  TASK("private_a", sink += scratch_write());
  TASK("private_b", sink += scratch_read());
  /* libc on user objects: memcpy/memset count, attributed to the calling task. */
  TASK("init_src", fill_bytes(src, 1, 256));
  TASK("copy", copy_bytes(dst, src, 256));
  TASK("use_dst", sink += sum_bytes(dst, 256));
  TASK("init_big", fill_bytes(big_src, 2, sizeof big_src));
  TASK("big_copy", copy_bytes(big_dst, big_src, sizeof big_src));
  TASK("use_big", sink += sum_bytes(big_dst, sizeof big_dst));
  TASK("clear", fill_bytes(z, 0, 1000));
  TASK("read_z", sink += sum_bytes(z, 1000));
  /* libc's own state (stdio buffer) never creates dependencies. */
  TASK("print_a", say("print_a"));
  TASK("print_b", say("print_b"));
  /* free() ends an object: nothing flows to a later block at the same address. */
  int *old = malloc(32 * sizeof(int));
  TASK("write_old", write_ints(old, 0, 32));
  free(old);
  int *fresh = malloc(32 * sizeof(int));
  TASK("read_new", sink += read_ints(fresh, 0, 32));
  printf("same address reused: %s\n", fresh == old ? "yes" : "no");
  /* realloc that moves a block keeps the last writer of the moved bytes. */
  int *grow = malloc(32 * sizeof(int));
  TASK("write_grow", write_ints(grow, 0, 32));
  grow = realloc(grow, 1 << 20);
  TASK("read_grow", sink += read_ints(grow, 0, 32));
  /* ... and so does one that shrinks the block where it is. */
  int *shrink = malloc(64 * sizeof(int));
  TASK("write_shrink", write_ints(shrink, 0, 64));
  int *shrunk = realloc(shrink, 32 * sizeof(int));
  TASK("read_shrunk", sink += read_ints(shrunk, 0, 32));
  printf("shrunk in place: %s\n", shrunk == shrink ? "yes" : "no");
  /* tareador_disable_object excludes the object until re-enabled. */
  TASK("write_dis", write_ints(dis, 0, 16));
  tareador_disable_object(dis);
  TASK("read_dis", sink += read_ints(dis, 0, 16));
  tareador_enable_object(dis);
  TASK("read_en", sink += read_ints(dis, 0, 16));
  /* WAR and WAW are counted. */
  TASK("war_first", write_ints(w, 0, 4));
  TASK("war_read", sink += read_ints(w, 0, 4));
  TASK("war_write", write_ints(w, 0, 4));
  /* Nested tasks: accesses belong to the innermost open task. */
  tareador_start_task("outer");
  TASK("inner", write_ints(nest, 0, 4));
  sink += read_ints(nest, 0, 4);
  tareador_end_task("outer");
  /* calloc: the allocating instance wrote the zeros. */
  int *zeros;
  TASK("allocate", zeros = calloc(16, sizeof(int)));
  TASK("read_zeros", sink += read_ints(zeros, 0, 16));
  /* Bytes, not words: two tasks write single chars inside two ints, which are then read and
   * written whole: each edge carries exactly the bytes that flow. */
  TASK("write_chars", write_chars(bytes, 1, 3));
  TASK("write_char", write_chars(bytes, 5, 6));
  TASK("read_word", sink += read_ints((int *) bytes, 0, 2));
  TASK("rewrite", write_ints((int *) bytes, 0, 2));
  TASK("reread", sink += read_ints((int *) bytes, 0, 2));
  /* A mapping the program makes itself is an object too, named by the line of the mmap. */
  TASK("write_mapped", write_ints(mapped, 0, 8));
  TASK("read_mapped", sink += read_ints(mapped, 4, 8));
  TASK("read_unmap", sink += read_and_unmap(mapped, 8));  /* its reads count, then the mapping ends */
  tareador_OFF();

  printf("sink %d\n", sink);
  free(buf); free(src); free(dst); free(z); free(dis); free(w); free(nest); free(fresh); free(grow); free(zeros); free(bytes); free(shrunk);
  return 0;
}
