/* SPDX-License-Identifier: MIT */
// stress.tls_destructors: allocation inside thread-exit destructors, which run after (or
// interleaved with) the allocator's own per-thread teardown:
//   - pthread_key destructors that malloc, free and re-set their value, so they run for
//     several destructor iterations;
//   - C++ thread_local objects whose destructors build strings and vectors and free blocks
//     that other threads allocated;
//   - the main thread's thread_local and an atexit handler allocating during exit().
// Every destructor records that it ran; the counts are checked at the end.
#include "tt.h"

#include <malloc.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

pthread_key_t g_key;
std::atomic<long> g_key_destructor_runs{0};
std::atomic<long> g_key_destructor_final{0};
std::atomic<long> g_thread_local_dtors{0};

// A block that also remembers how often it was handed back to the key.
struct KeyValue {
  int rounds_left;
  std::size_t size;
  unsigned char *payload;
};

void key_destructor(void *value) {
  auto *kv = static_cast<KeyValue *>(value);
  g_key_destructor_runs++;
  for (std::size_t i = 0; i < kv->size; i++)
    TT_CHECKF(kv->payload[i] == static_cast<unsigned char>(kv->size + i),
              "key value payload corrupted");
  // Allocate during the destructor: a new, bigger payload.
  std::size_t next = kv->size * 3 + 17;
  auto *fresh = static_cast<unsigned char *>(std::malloc(next));
  TT_CHECK(fresh != nullptr);
  for (std::size_t i = 0; i < next; i++) fresh[i] = static_cast<unsigned char>(next + i);
  std::free(kv->payload);
  kv->payload = fresh;
  kv->size = next;
  if (--kv->rounds_left > 0) {
    // Re-set the value: POSIX runs the destructor again (up to
    // PTHREAD_DESTRUCTOR_ITERATIONS rounds).
    pthread_setspecific(g_key, kv);
  } else {
    std::free(kv->payload);
    std::free(kv);
    g_key_destructor_final++;
  }
}

// A block allocated by the main thread, freed by a thread_local destructor on another thread.
std::vector<void *> g_foreign_blocks;
std::atomic<std::size_t> g_next_foreign{0};

struct LocalState {
  std::map<int, std::string> names;
  std::vector<std::unique_ptr<int[]>> arrays;
  ~LocalState() {
    // Allocate while being destroyed.
    std::string s;
    for (int i = 0; i < 100; i++) s += std::to_string(i);
    std::vector<std::string> copies(50, s);
    TT_CHECK(copies.back().size() == s.size());
    for (auto &kv : names) kv.second.append(1000, 'z');
    arrays.clear();
    std::size_t k = g_next_foreign++;
    if (k < g_foreign_blocks.size()) std::free(g_foreign_blocks[k]);
    g_thread_local_dtors++;
  }
};

thread_local LocalState t_state;

void thread_body(int id) {
  auto *kv = static_cast<KeyValue *>(std::malloc(sizeof(KeyValue)));
  TT_CHECK(kv != nullptr);
  kv->rounds_left = 3;  // PTHREAD_DESTRUCTOR_ITERATIONS is 4 on Linux
  kv->size = static_cast<std::size_t>(id % 50) + 1;
  kv->payload = static_cast<unsigned char *>(std::malloc(kv->size));
  TT_CHECK(kv->payload != nullptr);
  for (std::size_t i = 0; i < kv->size; i++)
    kv->payload[i] = static_cast<unsigned char>(kv->size + i);
  TT_CHECK(pthread_setspecific(g_key, kv) == 0);

  for (int i = 0; i < 50; i++) t_state.names[i] = "name-" + std::to_string(id * 100 + i);
  for (int i = 0; i < 10; i++) t_state.arrays.emplace_back(new int[static_cast<size_t>(i) * 100 + 1]);
}

std::atomic<int> g_atexit_ran{0};
void at_exit_allocates() {
  std::vector<std::string> v(1000, std::string(100, 'q'));
  g_atexit_ran = static_cast<int>(v.size());
  // Checked by the exit status: _exit from here would skip the remaining handlers.
}

}  // namespace

int main(int argc, char **argv) {
  const int threads = static_cast<int>(tt_arg_long(argc, argv, 1, 400));
  tt_require_tessera();
  TT_CHECK(pthread_key_create(&g_key, key_destructor) == 0);
  for (int i = 0; i < threads; i++) g_foreign_blocks.push_back(std::malloc(100 + static_cast<size_t>(i)));

  // Waves of 20 std::threads, each thread running both kinds of destructor at exit.
  for (int wave = 0; wave < threads / 20; wave++) {
    std::vector<std::thread> pool;
    for (int i = 0; i < 20; i++) pool.emplace_back(thread_body, wave * 20 + i);
    for (auto &t : pool) t.join();
  }
  const long expected = (threads / 20) * 20;
  TT_CHECKF(g_key_destructor_final == expected, "key destructor finished %ld times, want %ld",
            g_key_destructor_final.load(), expected);
  TT_CHECKF(g_key_destructor_runs == expected * 3, "key destructor ran %ld times, want %ld",
            g_key_destructor_runs.load(), expected * 3);
  TT_CHECKF(g_thread_local_dtors == expected, "thread_local destructor ran %ld times, want %ld",
            g_thread_local_dtors.load(), expected);
  for (std::size_t k = g_next_foreign; k < g_foreign_blocks.size(); k++)
    std::free(g_foreign_blocks[k]);

  // The main thread's own thread_local and an atexit handler allocate during exit().
  t_state.names[1] = "main";
  std::atexit(at_exit_allocates);
  std::printf("stress.tls_destructors: ok: %ld threads, %ld key destructor runs\n", expected,
              g_key_destructor_runs.load());
  std::fflush(stdout);
  return 0;
}
