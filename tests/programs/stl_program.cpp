/* SPDX-License-Identifier: MIT */
// A C++ program of the kind real code is: STL containers, strings, shared_ptr graphs, sized
// delete, and (in "threads" mode) std::thread workers passing heap objects to each other.
// It is not linked against tessera: the programs.cxx_* tests run it with LD_PRELOAD and
// compare its output with a known answer. The output depends only on the computation, never
// on addresses or scheduling.
//
// usage: stl_program stl|threads
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

std::uint64_t fnv1a(const std::string &s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Deterministic pseudo-random words.
std::string word(std::uint64_t n) {
  static const char *const syllables[] = {"ka", "lo", "mi", "ne", "su", "ta", "ri", "po",
                                          "ve", "qu", "zen", "dor", "al", "ix", "um", "ber"};
  std::string w;
  std::uint64_t x = n * 2654435761u + 12345;
  int len = 1 + static_cast<int>(x % 4);
  for (int i = 0; i < len; i++) {
    w += syllables[x % 16];
    x = x / 16 + n * 7 + static_cast<std::uint64_t>(i);
  }
  return w;
}

// A polymorphic node: `delete node` goes through the virtual destructor and the sized
// operator delete with the dynamic type's size.
struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
};
struct Rect : Shape {
  double w, h;
  Rect(double a, double b) : w(a), h(b) {}
  double area() const override { return w * h; }
};
struct Big : Shape {
  double values[300];
  explicit Big(double v) {
    for (double &x : values) x = v;
  }
  double area() const override { return values[0] + values[299]; }
};

struct TreeNode {
  std::string name;
  std::vector<std::shared_ptr<TreeNode>> children;
  std::weak_ptr<TreeNode> parent;
};

std::size_t count_nodes(const std::shared_ptr<TreeNode> &n) {
  std::size_t c = 1;
  for (const auto &ch : n->children) c += count_nodes(ch);
  return c;
}

int run_stl() {
  // Word frequencies in an ordered and an unordered map.
  std::map<std::string, int> freq;
  std::unordered_map<std::string, std::vector<int>> positions;
  std::vector<std::string> words;
  for (std::uint64_t i = 0; i < 200000; i++) {
    std::string w = word(i % 5003);
    freq[w]++;
    positions[w].push_back(static_cast<int>(i));
    words.push_back(std::move(w));
  }
  std::printf("distinct words: %zu\n", freq.size());
  auto top = freq.begin();
  for (auto it = freq.begin(); it != freq.end(); ++it)
    if (it->second > top->second) top = it;
  std::printf("most frequent: %s x%d\n", top->first.c_str(), top->second);

  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  std::uint64_t h = 1469598103934665603ull;
  for (const auto &w : words) h = fnv1a(w, h);
  std::printf("sorted unique words hash: %016llx\n", static_cast<unsigned long long>(h));

  std::size_t total_positions = 0;
  for (const auto &kv : positions) total_positions += kv.second.size();
  std::printf("positions: %zu\n", total_positions);

  // Strings built up and cut down.
  std::string text;
  for (int i = 0; i < 20000; i++) text += word(static_cast<std::uint64_t>(i)) + ' ';
  std::istringstream in(text);
  std::string token;
  std::size_t tokens = 0, longest = 0;
  while (in >> token) {
    tokens++;
    longest = std::max(longest, token.size());
  }
  std::printf("tokens: %zu, longest %zu, text hash %016llx\n", tokens, longest,
              static_cast<unsigned long long>(fnv1a(text)));

  // shared_ptr tree with weak parent links.
  auto root = std::make_shared<TreeNode>();
  root->name = "root";
  std::vector<std::shared_ptr<TreeNode>> frontier{root};
  for (int level = 0; level < 6; level++) {
    std::vector<std::shared_ptr<TreeNode>> next;
    for (auto &n : frontier)
      for (int k = 0; k < 4; k++) {
        auto c = std::make_shared<TreeNode>();
        c->name = n->name + "/" + std::to_string(k);
        c->parent = n;
        n->children.push_back(c);
        next.push_back(c);
      }
    frontier.swap(next);
  }
  std::size_t depth = 0;
  for (auto p = frontier.back(); p; p = p->parent.lock()) depth++;
  std::printf("tree: %zu nodes, leaf depth %zu, last leaf %s\n", count_nodes(root), depth,
              frontier.back()->name.c_str());
  frontier.clear();

  // Polymorphic objects deleted through the base pointer (sized delete of the real size),
  // and explicit sized operator delete.
  double area = 0;
  for (int i = 0; i < 50000; i++) {
    Shape *s = (i % 3 == 0) ? static_cast<Shape *>(new Big(i)) : new Rect(i, 2);
    area += s->area();
    delete s;
  }
  for (std::size_t n = 1; n < 70000; n = n * 3 + 1) {
    void *p = ::operator new(n);
    std::memset(p, 0x5c, n);
    ::operator delete(p, n);
  }
  std::printf("area: %.1f\n", area);

  std::set<std::string> ordered(words.begin(), words.end());
  std::deque<std::unique_ptr<std::string>> dq;
  for (const auto &w : ordered) dq.push_front(std::make_unique<std::string>(w + w));
  std::printf("deque front: %s, back: %s\n", dq.front()->c_str(), dq.back()->c_str());
  return 0;
}

// Producer/consumer workers: items allocated on one thread are freed on another.
struct Channel {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::unique_ptr<std::vector<std::string>>> items;
  int producers_left = 0;
};

int run_threads() {
  const int producers = 4, consumers = 4, batches = 4000;
  Channel ch;
  ch.producers_left = producers;
  std::vector<std::uint64_t> sums(consumers, 0);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; p++)
    threads.emplace_back([&ch, p] {
      for (int b = 0; b < batches; b++) {
        auto batch = std::make_unique<std::vector<std::string>>();
        for (int k = 0; k < 1 + (b % 16); k++)
          batch->push_back(word(static_cast<std::uint64_t>(p * 1000003 + b * 17 + k)) +
                           std::string(static_cast<std::size_t>(b % 300), 'x'));
        std::lock_guard<std::mutex> lock(ch.m);
        ch.items.push_back(std::move(batch));
        ch.cv.notify_one();
      }
      std::lock_guard<std::mutex> lock(ch.m);
      ch.producers_left--;
      ch.cv.notify_all();
    });
  for (int c = 0; c < consumers; c++)
    threads.emplace_back([&ch, &sums, c] {
      for (;;) {
        std::unique_ptr<std::vector<std::string>> batch;
        {
          std::unique_lock<std::mutex> lock(ch.m);
          ch.cv.wait(lock, [&] { return !ch.items.empty() || ch.producers_left == 0; });
          if (ch.items.empty()) return;
          batch = std::move(ch.items.front());
          ch.items.pop_front();
        }
        // Order-independent: a sum of hashes.
        for (const auto &s : *batch) sums[static_cast<std::size_t>(c)] += fnv1a(s) >> 8;
        std::map<std::string, std::size_t> local;  // per-thread allocations too
        for (const auto &s : *batch) local[s] += s.size();
      }  // the batch, built by a producer, is freed here by a consumer
    });
  for (auto &t : threads) t.join();
  std::uint64_t total = std::accumulate(sums.begin(), sums.end(), std::uint64_t{0});
  std::printf("threads: %d producers, %d consumers, checksum %016llx\n", producers, consumers,
              static_cast<unsigned long long>(total));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  // First line: which allocator this process runs on (the drivers require "tessera" under
  // LD_PRELOAD and compare everything after it).
  std::ifstream maps("/proc/self/maps");
  std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  std::printf("allocator: %s\n",
              all.find("libtessera") != std::string::npos ? "tessera" : "system");
  if (argc == 2 && std::strcmp(argv[1], "stl") == 0) return run_stl();
  if (argc == 2 && std::strcmp(argv[1], "threads") == 0) return run_threads();
  std::fprintf(stderr, "usage: stl_program stl|threads\n");
  return 2;
}
