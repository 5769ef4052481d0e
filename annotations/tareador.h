/* tareador C API: mark the tasks of a proposed taskification.
 *
 * Source-compatible with BSC Tareador lab codes. Untraced, every call is a plain function call
 * that stores one pointer: it costs nothing measurable. Under `tareador trace` the tracer
 * recognises the calls and derives the dependencies between task instances.
 *
 *   tareador_ON();                       start analysing (code before it is not analysed)
 *   tareador_start_task("name");         a task instance begins; tasks may nest
 *   tareador_end_task("name");           ... and ends (the name must match the innermost open task)
 *   tareador_disable_object(&x);         accesses to the object containing &x create no dependencies
 *   tareador_enable_object(&x);          ... until re-enabled
 *   tareador_OFF();                      stop analysing
 *
 * Build: cc $(tareador config --cflags) prog.c -o prog $(tareador config --libs)
 */
#ifndef TAREADOR_H
#define TAREADOR_H

#ifdef __cplusplus
extern "C" {
#endif

void tareador_ON(void);
void tareador_OFF(void);
void tareador_start_task(const char *name);
void tareador_end_task(const char *name);
void tareador_disable_object(const void *address);
void tareador_enable_object(const void *address);

#ifdef __cplusplus
}
#endif

#endif
