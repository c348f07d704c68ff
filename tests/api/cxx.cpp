/* SPDX-License-Identifier: MIT */
// api.cxx: C++ operator new/delete in every standard form (plain, array, nothrow, sized,
// aligned up to 4096 and beyond, aligned+sized), std::bad_alloc for impossible sizes, the
// new-handler protocol, nothrow new returning nullptr, and STL containers on top.
#include "tt.h"

#include <malloc.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// Escapes pointers so the compiler can neither elide nor fold allocations.
void *volatile g_sink;
void escape(void *p) { g_sink = p; }

// A pointer handed out by operator new must be a block of the malloc family: its usable
// size covers the request (tessera aborts on a pointer it does not own).
void check_block(void *p, std::size_t n, std::size_t alignment, const char *what) {
  TT_CHECKF(p != nullptr, "%s(%zu) returned nullptr", what, n);
  TT_CHECKF(tt_is_aligned(p, alignment), "%s(%zu) = %p not aligned to %zu", what, n, p,
            alignment);
  TT_CHECKF(tt_is_aligned(p, 16), "%s(%zu) = %p not 16-byte aligned", what, n, p);
  TT_CHECKF(malloc_usable_size(p) >= n, "%s(%zu): usable size %zu", what, n,
            malloc_usable_size(p));
  if (n > 0) {
    static_cast<unsigned char *>(p)[0] = 1;
    static_cast<unsigned char *>(p)[n - 1] = 2;
  }
  escape(p);
}

const std::size_t kSizes[] = {0, 1, 8, 16, 100, 1000, 5000, 20000, 300000, 5u << 20};

void test_plain_forms() {
  for (std::size_t n : kSizes) {
    std::size_t size = tt_opaque(n);
    void *p = ::operator new(size);
    check_block(p, size, 16, "operator new");
    ::operator delete(p);

    p = ::operator new[](size);
    check_block(p, size, 16, "operator new[]");
    ::operator delete[](p);

    p = ::operator new(size, std::nothrow);
    check_block(p, size, 16, "operator new(nothrow)");
    ::operator delete(p, std::nothrow);

    p = ::operator new[](size, std::nothrow);
    check_block(p, size, 16, "operator new[](nothrow)");
    ::operator delete[](p, std::nothrow);

    // Sized delete: the size passed is the size that was requested.
    p = ::operator new(size);
    check_block(p, size, 16, "operator new (sized delete)");
    ::operator delete(p, size);

    p = ::operator new[](size);
    check_block(p, size, 16, "operator new[] (sized delete)");
    ::operator delete[](p, size);
  }
  ::operator delete(nullptr);
  ::operator delete[](nullptr);
  ::operator delete(nullptr, std::size_t{0});
}

void test_aligned_forms() {
  for (std::size_t alignment = 1; alignment <= (std::size_t{1} << 22); alignment *= 2) {
    std::align_val_t al{alignment};
    for (std::size_t n : kSizes) {
      std::size_t size = tt_opaque(n);
      void *p = ::operator new(size, al);
      check_block(p, size, alignment, "operator new(align)");
      ::operator delete(p, al);

      p = ::operator new[](size, al);
      check_block(p, size, alignment, "operator new[](align)");
      ::operator delete[](p, al);

      p = ::operator new(size, al, std::nothrow);
      check_block(p, size, alignment, "operator new(align, nothrow)");
      ::operator delete(p, al, std::nothrow);

      p = ::operator new[](size, al, std::nothrow);
      check_block(p, size, alignment, "operator new[](align, nothrow)");
      ::operator delete[](p, al, std::nothrow);

      p = ::operator new(size, al);
      check_block(p, size, alignment, "operator new(align) (sized delete)");
      ::operator delete(p, size, al);

      p = ::operator new[](size, al);
      check_block(p, size, alignment, "operator new[](align) (sized delete)");
      ::operator delete[](p, size, al);
    }
  }
}

// new-expressions on over-aligned types go through the aligned forms.
struct alignas(64) Line {
  unsigned char bytes[64];
};
struct alignas(4096) Page {
  unsigned char bytes[4096];
  ~Page() { bytes[0] = 0; }  // non-trivial: new[] stores an element count (array cookie)
};

void test_new_expressions() {
  for (int i = 0; i < 100; i++) {
    Line *line = new Line();
    TT_CHECK(tt_is_aligned(line, 64));
    escape(line);
    delete line;

    Page *page = new Page();
    TT_CHECK(tt_is_aligned(page, 4096));
    page->bytes[4095] = 1;
    escape(page);
    delete page;

    std::size_t count = tt_opaque(static_cast<std::size_t>(i % 7) + 1);
    Page *pages = new Page[count];
    for (std::size_t k = 0; k < count; k++) TT_CHECK(tt_is_aligned(&pages[k], 4096));
    escape(pages);
    delete[] pages;

    std::string *strings = new std::string[count];
    for (std::size_t k = 0; k < count; k++) strings[k].assign(100 + k, 'x');
    delete[] strings;

    int *ints = new (std::nothrow) int[count];
    TT_CHECK(ints != nullptr);
    escape(ints);
    delete[] ints;
  }
}

void test_bad_alloc() {
  const std::size_t huge[] = {SIZE_MAX, SIZE_MAX / 2, static_cast<std::size_t>(PTRDIFF_MAX) + 1};
  for (std::size_t n : huge) {
    std::size_t size = tt_opaque(n);
    bool threw = false;
    try {
      escape(::operator new(size));
    } catch (const std::bad_alloc &) {
      threw = true;
    }
    TT_CHECKF(threw, "operator new(%#zx) did not throw std::bad_alloc", size);

    threw = false;
    try {
      escape(::operator new[](size));
    } catch (const std::bad_alloc &) {
      threw = true;
    }
    TT_CHECKF(threw, "operator new[](%#zx) did not throw std::bad_alloc", size);

    threw = false;
    try {
      escape(::operator new(size, std::align_val_t{4096}));
    } catch (const std::bad_alloc &) {
      threw = true;
    }
    TT_CHECKF(threw, "operator new(%#zx, align 4096) did not throw std::bad_alloc", size);

    TT_CHECKF(::operator new(size, std::nothrow) == nullptr, "nothrow new(%#zx) != nullptr",
              size);
    TT_CHECKF(::operator new[](size, std::nothrow) == nullptr, "nothrow new[](%#zx)", size);
    TT_CHECKF(::operator new(size, std::align_val_t{64}, std::nothrow) == nullptr,
              "nothrow aligned new(%#zx) != nullptr", size);
  }
  // A new-expression whose element count overflows throws (std::bad_array_new_length is a
  // std::bad_alloc).
  bool threw = false;
  try {
    std::size_t count = tt_opaque(SIZE_MAX / 4);
    escape(new std::uint64_t[count]);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  TT_CHECK(threw);
}

// The new-handler protocol: on failure operator new calls the handler and retries.
void *g_reserve;
int g_handler_calls;
void release_reserve_handler() {
  g_handler_calls++;
  std::free(g_reserve);
  g_reserve = nullptr;
  std::set_new_handler(nullptr);  // uninstall: the next failure throws
}

void test_new_handler() {
  const std::size_t huge = tt_opaque(SIZE_MAX / 2);

  g_reserve = std::malloc(1 << 20);
  g_handler_calls = 0;
  std::set_new_handler(release_reserve_handler);
  bool threw = false;
  try {
    escape(::operator new(huge));
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  TT_CHECKF(threw, "operator new(huge) with a new-handler did not throw in the end");
  TT_CHECKF(g_handler_calls == 1, "new-handler called %d times, want 1", g_handler_calls);
  TT_CHECK(g_reserve == nullptr && std::get_new_handler() == nullptr);

  // The nothrow forms call the handler too, then return nullptr.
  g_reserve = std::malloc(1 << 20);
  g_handler_calls = 0;
  std::set_new_handler(release_reserve_handler);
  TT_CHECK(::operator new(huge, std::nothrow) == nullptr);
  TT_CHECKF(g_handler_calls == 1, "nothrow new: new-handler called %d times, want 1",
            g_handler_calls);

  // Aligned new follows the same protocol.
  g_reserve = std::malloc(1 << 20);
  g_handler_calls = 0;
  std::set_new_handler(release_reserve_handler);
  threw = false;
  try {
    escape(::operator new(huge, std::align_val_t{4096}));
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  TT_CHECK(threw);
  TT_CHECKF(g_handler_calls == 1, "aligned new: new-handler called %d times, want 1",
            g_handler_calls);
}

// A handler that actually fixes the problem: the retried allocation succeeds.
int g_fixing_calls;
void fixing_handler() {
  g_fixing_calls++;
  std::set_new_handler(nullptr);
}

void test_new_handler_not_called_on_success() {
  g_fixing_calls = 0;
  std::set_new_handler(fixing_handler);
  void *p = ::operator new(tt_opaque(1000));
  escape(p);
  ::operator delete(p);
  TT_CHECKF(g_fixing_calls == 0, "new-handler called although memory was available");
  std::set_new_handler(nullptr);
}

void test_stl() {
  std::vector<std::string> words;
  for (int i = 0; i < 50000; i++) words.push_back("word-" + std::to_string(i * 7919 % 50000));
  std::map<std::string, int> ordered;
  std::unordered_map<std::string, std::size_t> lengths;
  for (const auto &w : words) {
    ordered[w]++;
    lengths[w] = w.size();
  }
  TT_CHECK(ordered.size() == 50000 && lengths.size() == 50000);
  TT_CHECK(ordered.begin()->first == "word-0");
  std::size_t total = 0;
  for (const auto &kv : lengths) total += kv.second;
  // "word-" + digits: 10 one-digit, 90 two-digit, 900, 9000, 40000 five-digit numbers.
  TT_CHECKF(total == 50000 * 5 + 10 * 1 + 90 * 2 + 900 * 3 + 9000 * 4 + 40000 * 5,
            "unexpected total length %zu", total);

  std::list<std::shared_ptr<std::vector<int>>> lists;
  for (int i = 0; i < 1000; i++) lists.push_back(std::make_shared<std::vector<int>>(i, i));
  long sum = 0;
  for (const auto &v : lists)
    for (int x : *v) sum += x;
  TT_CHECK(sum == 332833500L);  // sum of i*i for i < 1000

  std::deque<std::unique_ptr<Page>> pages;
  for (int i = 0; i < 64; i++) {
    pages.push_back(std::make_unique<Page>());
    TT_CHECK(tt_is_aligned(pages.back().get(), 4096));
  }
  std::set<long> s;
  for (long i = 0; i < 100000; i++) s.insert((i * 48271) % 100003);
  TT_CHECK(s.size() == 100000);
}

}  // namespace

int main() {
  tt_require_tessera();
  test_plain_forms();
  test_aligned_forms();
  test_new_expressions();
  test_bad_alloc();
  test_new_handler();
  test_new_handler_not_called_on_success();
  test_stl();
  std::printf("api.cxx: ok\n");
  return 0;
}
