/* The timing run's hooks (timing.js): Interceptor listeners in native code that add events to
 * the annotation library's record (annotations/tareador.c, tareador_timing_record), on the same
 * clock as its markers. Only the program's main thread counts, as in a trace. A CModule's
 * statics are read-only at run time: the state lives in memory the agent allocates. */
#include <gum/guminterceptor.h>

extern void tareador_timing_record (guint32 event, const char * name);
/* [0] the main thread's id, [1] how deep it is in MPI calls (the library calls itself). */
extern guint64 timing_state[];
/* The program's code (the executable and its own libraries): [lo, hi) pairs ended by a 0 pair. */
extern guint64 user_ranges[];

/* A task function's listener data: its name, and whether a system library defines it, whose
 * calls are tasks only where the program's code makes them (as the tracer's transform.c). */
typedef struct { const char * name; guint64 system; } Hook;
typedef struct { gboolean counted; } Call;

/* As numbered in tareador/tracing/timing.py. */
enum { EVENT_ON = 1, EVENT_FUNCTION_ENTER = 5, EVENT_FUNCTION_LEAVE = 6, EVENT_MPI_ENTER = 7,
       EVENT_MPI_LEAVE = 8 };

static gboolean traced (GumInvocationContext * ic)
{
  return gum_invocation_context_get_thread_id (ic) == (gsize) timing_state[0];
}

static gboolean in_program (guint64 address)
{
  for (const guint64 * r = user_ranges; r[1] != 0; r += 2)
    if (address >= r[0] && address < r[1])
      return TRUE;
  return FALSE;
}

/* A --task-function's call. */
void function_enter (GumInvocationContext * ic)
{
  const Hook * hook = gum_invocation_context_get_listener_function_data (ic);
  Call * call = GUM_IC_GET_INVOCATION_DATA (ic, Call);
  call->counted = traced (ic)
      && (!hook->system || in_program (GUM_ADDRESS (gum_invocation_context_get_return_address (ic))));
  if (call->counted)
    tareador_timing_record (EVENT_FUNCTION_ENTER, hook->name);
}

void function_leave (GumInvocationContext * ic)
{
  const Hook * hook = gum_invocation_context_get_listener_function_data (ic);
  if (GUM_IC_GET_INVOCATION_DATA (ic, Call)->counted)
    tareador_timing_record (EVENT_FUNCTION_LEAVE, hook->name);
}

/* main's entry opens the analysed region of a program without tareador_ON. */
void main_enter (GumInvocationContext * ic)
{
  if (traced (ic))
    tareador_timing_record (EVENT_ON, NULL);
}

/* Time inside MPI calls is not the program's work (a trace counts no instructions there). */
void mpi_enter (GumInvocationContext * ic)
{
  if (traced (ic) && timing_state[1]++ == 0)
    tareador_timing_record (EVENT_MPI_ENTER, NULL);
}

void mpi_leave (GumInvocationContext * ic)
{
  if (traced (ic) && --timing_state[1] == 0)
    tareador_timing_record (EVENT_MPI_LEAVE, NULL);
}

/* Calls fn rounds times: with fn hooked, the record then holds what a hooked call costs
 * (tareador/tracing/timing.py subtracts it from the intervals around each hooked event). */
void calibrate (void (* fn) (void), guint rounds)
{
  for (guint i = 0; i < rounds; i++)
    fn ();
}
