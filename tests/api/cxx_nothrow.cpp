/* SPDX-License-Identifier: MIT */
// api.cxx_nothrow: a new-handler that throws std::bad_alloc ([new.handler]: it may).
// The throwing forms of operator new let the exception reach the caller; the nothrow
// forms call the handler too and turn that exception into nullptr ([new.delete.single]:
// "Otherwise, returns a null pointer"), plain and aligned, single and array.
#include "tt.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>

namespace {

int g_calls;

void throwing_handler() {
  g_calls++;
  throw std::bad_alloc();
}

// Gives up after its third call by removing itself: the loop then ends with no handler.
void giving_up_handler() {
  if (++g_calls == 3) std::set_new_handler(nullptr);
}

std::size_t impossible() { return tt_opaque(SIZE_MAX - 4096); }

void test_nothrow_forms_return_null() {
  const std::align_val_t al{256};
  std::set_new_handler(throwing_handler);
  g_calls = 0;
  void *p = ::operator new(impossible(), std::nothrow);
  TT_CHECKF(p == nullptr && g_calls == 1, "new(nothrow): %p, handler called %d times", p, g_calls);
  g_calls = 0;
  p = ::operator new[](impossible(), std::nothrow);
  TT_CHECKF(p == nullptr && g_calls == 1, "new[](nothrow): %p, handler called %d times", p, g_calls);
  g_calls = 0;
  p = ::operator new(impossible(), al, std::nothrow);
  TT_CHECKF(p == nullptr && g_calls == 1, "new(align, nothrow): %p, handler called %d times", p, g_calls);
  g_calls = 0;
  p = ::operator new[](impossible(), al, std::nothrow);
  TT_CHECKF(p == nullptr && g_calls == 1, "new[](align, nothrow): %p, handler called %d times", p, g_calls);
  // The handler's exception was caught: nothing is left in flight.
  TT_CHECKF(std::uncaught_exceptions() == 0, "%d exceptions in flight", std::uncaught_exceptions());
  std::set_new_handler(nullptr);
}

void test_throwing_forms_propagate() {
  std::set_new_handler(throwing_handler);
  for (int form = 0; form < 4; form++) {
    g_calls = 0;
    bool caught = false;
    try {
      void *p = form == 0   ? ::operator new(impossible())
                : form == 1 ? ::operator new[](impossible())
                : form == 2 ? ::operator new(impossible(), std::align_val_t{64})
                            : ::operator new[](impossible(), std::align_val_t{64});
      TT_FAIL("form %d returned %p", form, p);
    } catch (const std::bad_alloc &) {
      caught = true;
    }
    TT_CHECKF(caught && g_calls == 1, "form %d: caught %d, handler called %d times", form, caught, g_calls);
  }
  std::set_new_handler(nullptr);
}

// A handler that returns is called again until it removes itself; the nothrow forms then
// return nullptr, the throwing ones throw.
void test_handler_loop() {
  g_calls = 0;
  std::set_new_handler(giving_up_handler);
  void *p = ::operator new(impossible(), std::nothrow);
  TT_CHECKF(p == nullptr && g_calls == 3, "new(nothrow): %p after %d handler calls", p, g_calls);
  g_calls = 0;
  std::set_new_handler(giving_up_handler);
  p = ::operator new[](impossible(), std::align_val_t{128}, std::nothrow);
  TT_CHECKF(p == nullptr && g_calls == 3, "new[](align, nothrow): %p after %d handler calls", p, g_calls);
  g_calls = 0;
  std::set_new_handler(giving_up_handler);
  bool caught = false;
  try {
    p = ::operator new(impossible());
  } catch (const std::bad_alloc &) {
    caught = true;
  }
  TT_CHECKF(caught && g_calls == 3, "new: caught %d after %d handler calls", caught, g_calls);
  // Possible requests never call the handler.
  g_calls = 0;
  std::set_new_handler(throwing_handler);
  p = ::operator new(100, std::nothrow);
  TT_CHECK(p != nullptr && g_calls == 0);
  ::operator delete(p);
  std::set_new_handler(nullptr);
}

}  // namespace

int main() {
  tt_require_tessera();
  test_nothrow_forms_return_null();
  test_throwing_forms_propagate();
  test_handler_loop();
  std::printf("api.cxx_nothrow: ok\n");
  return 0;
}
