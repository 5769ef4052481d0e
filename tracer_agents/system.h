/* System calls made directly, for the analysis library's C files (shadow.c, tables.c).
 *
 * The analysis calls into no library: on the hooks of mmap and munmap it runs on the traced
 * thread, under Stalker, which would count the library's instructions as the program's (and
 * record its accesses); and it may run while the program is inside malloc or stdio. */
#ifndef TAREADOR_SYSTEM_H
#define TAREADOR_SYSTEM_H

static inline long sys(long number, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__ ("r10") = d, r8 __asm__ ("r8") = e, r9 __asm__ ("r9") = f;
  long result;
  __asm__ volatile ("syscall" : "=a" (result) : "0" (number), "D" (a), "S" (b), "d" (c), "r" (r10), "r" (r8), "r" (r9)
                    : "rcx", "r11", "memory");
  return result;
}

#endif
