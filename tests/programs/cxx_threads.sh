# SPDX-License-Identifier: MIT
# programs.cxx_threads: a multi-threaded C++ program (std::thread producers and consumers
# passing heap-allocated vectors of strings, so blocks are freed by other threads than the
# ones that allocated them), run with LD_PRELOAD; its checksum must be the known one. Run
# several times: thread interleavings differ from run to run, the result must not.
source "$(dirname "$0")/common.sh"
PROGRAM=${1:?usage: cxx_threads.sh <lib> <scratch> <stl_program>}

printf 'allocator: tessera\nthreads: 4 producers, 4 consumers, checksum fdd85a47cdd25a74\n' \
  > "$SCRATCH/expected.out"
for run in 1 2 3 4 5; do
  preloaded "$PROGRAM" threads > "$SCRATCH/tessera.$run.out" ||
    die "run $run: stl_program threads under tessera exited with status $?"
  same_output "$SCRATCH/expected.out" "$SCRATCH/tessera.$run.out" "stl_program threads (run $run)"
done
echo "programs.cxx_threads: ok: 5 runs"
