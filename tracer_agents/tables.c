/* The result tables leave the traced process as files, written while it runs.
 *
 * shadow.c keeps each growing table (fragments, edges, access hulls, calls) in a bounded buffer
 * and appends the rows that are final to the table's file whenever the buffer fills, so that
 * neither its memory nor any message grows with the number of task instances; the tables that
 * change until the end (objects, mpi.c's and patterns.c's) are written once, at the end. The
 * driver names the directory (a private one inside the trace directory) and converts the files
 * after the run; tareador/tracing/decode.py documents each file's layout.
 *
 * Only the traced process writes: a forked child (which runs untraced) has copies of the
 * buffers but must not append them. A failed write is counted, and the driver refuses the
 * trace with the system's reason rather than writing a table with rows missing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include "system.h"

#define MAX_TABLES 16
#define MAX_PATH 4096

static char directory[MAX_PATH];
static uint32_t directory_length;
static int files[MAX_TABLES];
static uint64_t written[MAX_TABLES];
static uint32_t table_count;
static long owner;   /* the traced process */
static int64_t write_error;   /* the first failure's -errno, 0 none */

/* Where the tables go: an existing directory. */
int tr_tables_directory(const char *path) {
  uint32_t n = 0;
  while (path[n] && n + 1 < MAX_PATH) { directory[n] = path[n]; n++; }
  if (path[n]) return -1;
  directory[n] = 0;
  directory_length = n;
  owner = sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
  return 0;
}

/* A new file in the directory for one table; its number, or -1. */
int tr_table_open(const char *name) {
  char path[MAX_PATH];
  uint32_t n = directory_length, k = 0;
  if (!n || table_count == MAX_TABLES) return -1;
  for (uint32_t i = 0; i < n; i++) path[i] = directory[i];
  path[n++] = '/';
  while (name[k] && n + 1 < MAX_PATH) path[n++] = name[k++];
  path[n] = 0;
  long fd = sys(SYS_openat, AT_FDCWD, (long) path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600, 0, 0);
  if (fd < 0) {
    if (!write_error) write_error = fd;
    return -1;
  }
  files[table_count] = (int) fd;
  written[table_count] = 0;
  return (int) table_count++;
}

/* Appends bytes to a table's file. */
void tr_table_append(int table, const void *data, uint64_t bytes) {
  if (table < 0 || (uint32_t) table >= table_count || sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != owner) return;
  const char *p = data;
  while (bytes) {
    long n = sys(SYS_write, files[table], (long) p, (long) bytes, 0, 0, 0);
    if (n == -4) continue;   /* EINTR */
    if (n <= 0) {
      if (!write_error) write_error = n ? n : -28;   /* nothing written: ENOSPC */
      return;
    }
    p += n; bytes -= (uint64_t) n; written[table] += (uint64_t) n;
  }
}

/* A whole table at once (the agent's, at the end of the run): its bytes written, or -1. */
int64_t tr_table_write(const char *name, const void *data, uint64_t bytes) {
  int table = tr_table_open(name);
  if (table < 0) return -1;
  tr_table_append(table, data, bytes);
  return (int64_t) written[table];
}

/* Bytes in a table's file so far. */
uint64_t tr_table_bytes(int table) {
  return table >= 0 && (uint32_t) table < table_count ? written[table] : 0;
}

/* The first failure's errno, 0 if every write succeeded. */
int64_t tr_tables_error(void) { return -write_error; }
