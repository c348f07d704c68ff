# SPDX-License-Identifier: MIT
# programs.cxx_stl: a C++ program (map, unordered_map, vector<string>, set, deque,
# shared_ptr/weak_ptr trees, polymorphic delete = sized delete, explicit sized operator
# delete), not linked against tessera, run with LD_PRELOAD: its output must be the known one.
source "$(dirname "$0")/common.sh"
PROGRAM=${1:?usage: cxx_stl.sh <lib> <scratch> <stl_program>}

cat > "$SCRATCH/expected.out" <<'OUT'
allocator: tessera
distinct words: 2343
most frequent: al x12512
sorted unique words hash: a015903073a12730
positions: 200000
tokens: 20000, longest 12, text hash af1c680f17d0e6c8
tree: 5461 nodes, leaf depth 7, last leaf root/3/3/3/3/3/3
area: 2499950000.0
deque front: zenzenzenzenzenzen, back: alal
OUT
preloaded "$PROGRAM" stl > "$SCRATCH/tessera.out" || die "stl_program under tessera exited with status $?"
same_output "$SCRATCH/expected.out" "$SCRATCH/tessera.out" "stl_program stl"
echo "programs.cxx_stl: ok"
