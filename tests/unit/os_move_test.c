/* SPDX-License-Identifier: MIT */
/* Moving pages between ranges (os_move_pages, used by realloc): a move carries the
 * pages' content and leaves the source reading zero; a move that the kernel refuses (an
 * unmapped source) leaves the destination mapped, writable and zero, so the caller can
 * copy into it. A kernel without the move (or a tool that hides it) may say so. The
 * probe that decides whether gathering is worth it here (os_time_page_moves) measures. */
#include <string.h>
#include <sys/mman.h>

#include "os.h"
#include "unit.h"

#define SIZE ((size_t)64 << 12)

int main(void) {
  unsigned char *from = os_map(SIZE), *to = os_map(SIZE);
  CHECK(from != NULL && to != NULL, "map");
  for (size_t i = 0; i < SIZE; i++) from[i] = (unsigned char)(i * 7 + 1);
  memset(to, 0xee, SIZE); /* resident pages the move replaces */
  os_move_result_t r = os_move_pages(from, to, SIZE);
  if (r == OS_MOVE_UNSUPPORTED) {
    printf("os_move: the kernel cannot move pages here; nothing else to check\n");
    return 0;
  }
  CHECK(r == OS_MOVED, "move: result %d", (int)r);
  for (size_t i = 0; i < SIZE; i++) CHECK(to[i] == (unsigned char)(i * 7 + 1), "moved byte %zu", i);
  for (size_t i = 0; i < SIZE; i += 4096) CHECK(from[i] == 0, "the source reads zero at %zu", i);
  from[0] = 1; /* and stays usable */

  /* Refused: the source is not mapped. */
  unsigned char *gone = os_map(SIZE);
  CHECK(gone != NULL, "map");
  os_unmap(gone, SIZE);
  memset(to, 0x5a, SIZE);
  r = os_move_pages(gone, to, SIZE);
  CHECK(r == OS_MOVE_FAILED, "move from an unmapped range: result %d", (int)r);
  to[0] = 1;
  to[SIZE - 1] = 2; /* the destination is still mapped and writable */
  CHECK(to[0] == 1 && to[SIZE - 1] == 2, "destination usable after a refused move");
  os_unmap(from, SIZE);
  os_unmap(to, SIZE);

  /* The machine's measure for gathering: both times taken, and a fault is not free. */
  uint64_t fault_ns = 0, moved_read_ns = 0;
  CHECK(os_time_page_moves(32, &fault_ns, &moved_read_ns), "os_time_page_moves");
  CHECK(fault_ns > 0 && fault_ns < 1000000000u, "32 page faults took %llu ns", (unsigned long long)fault_ns);
  CHECK(moved_read_ns < 1000000000u, "32 moved pages read in %llu ns", (unsigned long long)moved_read_ns);
  printf("os_move: 32 page faults %llu ns, 32 moved pages read %llu ns\n", (unsigned long long)fault_ns,
         (unsigned long long)moved_read_ns);
  printf("os_move: ok\n");
  return 0;
}
