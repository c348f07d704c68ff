/* SPDX-License-Identifier: MIT */
#include "oom.h"

#include "tessera.h"

#include "base.h"
#include "extent.h"
#include "options.h"
#include "os.h"

static _Atomic(void *) reserve; /* the reserve's mapping, NULL when not held */
static tessera_oom_cb *_Atomic oom_cb;
static void *_Atomic oom_arg;
/* Set while this thread runs the callback: an allocation failing inside it just fails. */
static __thread bool in_callback __attribute__((tls_model("initial-exec")));

void oom_reserve_fill(void) {
  if (opt_reserve == 0 || atomic_load_explicit(&reserve, memory_order_relaxed) != NULL) return;
  void *p = os_map(align_up(opt_reserve, PAGE));
  void *none = NULL;
  if (p != NULL && !atomic_compare_exchange_strong(&reserve, &none, p)) os_unmap(p, align_up(opt_reserve, PAGE));
}

bool oom_reserve_wanted(void) {
  return opt_reserve != 0 && atomic_load_explicit(&reserve, memory_order_relaxed) == NULL;
}

static bool reserve_release(void) {
  void *p = atomic_exchange(&reserve, NULL);
  if (p != NULL) os_unmap(p, align_up(opt_reserve, PAGE));
  return p != NULL;
}

/* The soft limit is what stands in the way (else the OS refused). */
COLD_TEXT int oom_reason(size_t request) {
  size_t mapped = atomic_load_explicit(&extent_mapped_bytes, memory_order_relaxed) + base_mapped_bytes();
  return opt_limit != 0 && mapped + request > opt_limit ? TESSERA_OOM_LIMIT : TESSERA_OOM_OS;
}

COLD_TEXT bool oom_notify(size_t request) {
  if (in_callback) return false;
  bool released = reserve_release();
  tessera_oom_cb *cb = atomic_load(&oom_cb);
  if (cb == NULL) return released;
  in_callback = true;
  cb(atomic_load(&oom_arg), request, oom_reason(request));
  in_callback = false;
  return true;
}

TESSERA_EXPORT void tessera_set_oom_callback(tessera_oom_cb *cb, void *arg) {
  atomic_store(&oom_arg, arg);
  atomic_store(&oom_cb, cb);
}
