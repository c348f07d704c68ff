/* SPDX-License-Identifier: MIT */
// Workload 10e: a C++ STL-heavy program.
//
// What typical C++ does all day: strings built and copied, node containers (std::map,
// std::unordered_map, std::list) filled and torn down, vectors grown, shared_ptr graphs
// made and dropped. Every container uses operator new/delete, which the preloaded
// allocator serves (each peer replaces operator new too, or it falls through to malloc).
//
//   stl rounds=12 words=200000
//   stl pairs=N         only N new/delete pairs of a 32-byte object (sized delete): the
//                       instructions of one pair, counted with callgrind at two N
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

long long arg(int argc, char **argv, const char *key, long long fallback) {
  size_t n = std::strlen(key);
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], key, n) == 0 && argv[i][n] == '=') return std::atoll(argv[i] + n + 1);
  return fallback;
}

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
};

// A random word of 2..40 letters: most fit in the small-string buffer, many do not.
std::string word(Rng &rng) {
  size_t len = 2 + rng.next() % ((rng.next() & 3) == 0 ? 39 : 14);
  std::string w;
  for (size_t i = 0; i < len; i++) w += static_cast<char>('a' + rng.next() % 26);
  return w;
}

struct Node {
  std::string name;
  std::vector<std::shared_ptr<Node>> children;
};

std::shared_ptr<Node> tree(Rng &rng, int depth) {
  auto n = std::make_shared<Node>();
  n->name = word(rng);
  if (depth > 0)
    for (int i = 0, k = 1 + static_cast<int>(rng.next() % 4); i < k; i++)
      n->children.push_back(tree(rng, depth - 1));
  return n;
}

size_t count(const Node &n) {
  size_t c = n.name.size();
  for (auto &ch : n.children) c += count(*ch);
  return c;
}

}  // namespace

// new and sized delete of one object, n times: C++'s fast path.
static void run_pairs(long long n) {
  struct Node {
    uint64_t words[4];
  };
  for (long long i = 0; i < n; i++) {
    Node *volatile p = new Node;
    delete p;
  }
}

int main(int argc, char **argv) {
  long long pairs = arg(argc, argv, "pairs", 0);
  if (pairs > 0) {
    run_pairs(pairs);
    std::printf("stl: %lld new/delete pairs\n", pairs);
    return 0;
  }
  long long rounds = arg(argc, argv, "rounds", 12);
  long long words = arg(argc, argv, "words", 200000);
  Rng rng{12345};
  uint64_t checksum = 0;
  for (long long r = 0; r < rounds; r++) {
    // Word counting in an ordered and a hashed map.
    std::map<std::string, int> ordered;
    std::unordered_map<std::string, std::vector<int>> where;
    std::vector<std::string> all;
    for (long long i = 0; i < words; i++) {
      std::string w = word(rng);
      ordered[w]++;
      where[w].push_back(static_cast<int>(i));
      all.push_back(std::move(w));
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    checksum += ordered.size() + where.size() + all.size();
    // Concatenations: a document assembled from the words.
    std::string doc;
    for (size_t i = 0; i < all.size(); i += 3) doc += all[i] + " " + std::to_string(i) + "\n";
    checksum += doc.size();
    // A list edited in the middle.
    std::list<std::string> lst(all.begin(), all.begin() + static_cast<long>(all.size() / 4));
    for (auto it = lst.begin(); it != lst.end();) {
      if (it->size() & 1) it = lst.erase(it);
      else {
        lst.insert(it, *it + "!");
        ++it;
      }
    }
    checksum += lst.size();
    // Shared-pointer trees.
    for (int t = 0; t < 8; t++) checksum += count(*tree(rng, 8));
  }
  std::printf("stl: %lld rounds, checksum %llu\n", rounds, static_cast<unsigned long long>(checksum));
  std::printf("RESULT checksum=%llu\n", static_cast<unsigned long long>(checksum));
  return 0;
}
