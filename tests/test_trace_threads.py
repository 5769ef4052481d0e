"""Only the main thread is traced, and tareador says so plainly."""

from __future__ import annotations

from tareador.tracing.run import trace
from tests.helpers import write_c

THREADED = r"""
#include <pthread.h>
#include <stdio.h>
#include "tareador.h"
int shared[4];
static void *worker(void *arg) { shared[1] = *(int *) arg; return NULL; }
int main(void) {
  pthread_t t; int v = 7;
  tareador_ON();
  tareador_start_task("spawn"); pthread_create(&t, NULL, worker, &v); pthread_join(t, NULL); tareador_end_task("spawn");
  tareador_start_task("use"); int s = shared[1]; tareador_end_task("use");
  tareador_OFF();
  printf("%d\n", s);
  return 0;
}
"""


def test_threads_are_reported_not_silently_ignored(compile_c, tmp_path):
    exe = compile_c(write_c(tmp_path, "threads", THREADED))
    t = trace([str(exe)], tmp_path / "t", progress=False)
    assert [x.name for x in t.fragments if not x.is_main] == ["spawn", "use"]
    assert "the program created 1 thread(s); only the main thread was traced" in t.summary["warnings"]
