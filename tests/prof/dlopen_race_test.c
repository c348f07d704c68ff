/* SPDX-License-Identifier: MIT */
/*
 * The unwinder while libraries come and go (prof_unwind.c walks with cached rows outside
 * the loader's lock, then checks that no module was loaded or unloaded meanwhile): one
 * thread dlopens, calls and dlcloses two libraries in turn (one may be mapped where the
 * other was), whose blocks are sampled with their frames on the stack, while three
 * threads sample blocks they keep through one call site of the program. The check
 * (check_dlopen_race.sh) reads the leak report: the kept site's stack is whole (the
 * site, then the sampler thread's function) and its bytes are estimated within 20%.
 *
 *   prof_dlopen_race LIB_A LIB_B   (with TESSERA_CONF=prof:true,...)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define SAMPLERS 3
#define KEPT 4000
#define KEPT_SIZE 1024

static void *kept[SAMPLERS][KEPT];
static atomic_int samplers_left = SAMPLERS;
static const char *libs[2];

void *keep_site(size_t size);

__attribute__((noinline)) void *keep_site(size_t size) {
  void *p = malloc(size);
  __asm__ volatile("" ::: "memory"); /* not a tail call: keep_site stays on the stack */
  return p;
}

__attribute__((noinline)) static void *sampler(void *arg) {
  void **mine = arg;
  for (int i = 0; i < KEPT; i++) {
    mine[i] = keep_site(KEPT_SIZE);
    if (mine[i] == NULL) abort();
    free(malloc(64 + (size_t)(i & 15) * 16)); /* churn between */
  }
  atomic_fetch_sub(&samplers_left, 1);
  return NULL;
}

/* Loads, calls and unloads the libraries in turn until the samplers are done (and at
 * least 50 times). */
static void *loader(void *arg) {
  (void)arg;
  unsigned rounds = 0;
  while (atomic_load(&samplers_left) > 0 || rounds < 50) {
    void *h = dlopen(libs[rounds % 2], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      exit(1);
    }
    unsigned (*work)(unsigned) = (unsigned (*)(unsigned))dlsym(h, "race_work");
    if (work == NULL || work(200) == 0xffffffffu) exit(1);
    dlclose(h);
    rounds++;
  }
  printf("loader: %u rounds\n", rounds);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: prof_dlopen_race LIB_A LIB_B\n");
    return 2;
  }
  libs[0] = argv[1];
  libs[1] = argv[2];
  pthread_t t[SAMPLERS + 1];
  if (pthread_create(&t[SAMPLERS], NULL, loader, NULL) != 0) return 1;
  for (int i = 0; i < SAMPLERS; i++)
    if (pthread_create(&t[i], NULL, sampler, kept[i]) != 0) return 1;
  for (int i = 0; i <= SAMPLERS; i++) pthread_join(t[i], NULL);
  printf("kept %d bytes\n", SAMPLERS * KEPT * KEPT_SIZE);
  return 0; /* the kept blocks are the leak report's */
}
