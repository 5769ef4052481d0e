/* The markers do almost nothing on purpose: the tracer recognises the first instruction of each
 * function. Each stores its argument to a volatile global so that the compiler keeps a distinct,
 * hookable body for every marker (an empty function compiles to a 1-byte `ret`, and identical
 * bodies may be merged into one address). */
#include "tareador.h"

volatile const void *tareador_last_marker_argument;
volatile int tareador_last_marker;

#define TAREADOR_MARKER(id, arg) do { tareador_last_marker_argument = (arg); tareador_last_marker = (id); } while (0)

__attribute__((noinline)) void tareador_ON(void) { TAREADOR_MARKER(1, 0); }
__attribute__((noinline)) void tareador_OFF(void) { TAREADOR_MARKER(2, 0); }
__attribute__((noinline)) void tareador_start_task(const char *name) { TAREADOR_MARKER(3, name); }
__attribute__((noinline)) void tareador_end_task(const char *name) { TAREADOR_MARKER(4, name); }
__attribute__((noinline)) void tareador_disable_object(const void *address) { TAREADOR_MARKER(5, address); }
__attribute__((noinline)) void tareador_enable_object(const void *address) { TAREADOR_MARKER(6, address); }
