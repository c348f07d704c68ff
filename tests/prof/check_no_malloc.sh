#!/bin/bash
# SPDX-License-Identifier: MIT
# The profiler's objects must not reference the allocator or functions that may call it.
# $1: the directory holding the library's object files (prof_*.o).
set -u
dir=$1
shopt -s nullglob
objs=("$dir"/prof_*.o)
[ ${#objs[@]} -gt 0 ] || { echo "no prof_*.o in $dir"; exit 1; }
forbidden='^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|qsort|bsearch|fopen|fclose|fprintf|printf|snprintf|sprintf|vsnprintf|fputs|fwrite|backtrace|backtrace_symbols|dladdr|dladdr1|dlopen|dlsym|pthread_getattr_np|strdup|getenv|_Unwind_.*|__cxa_.*)$'
bad=0
for o in "${objs[@]}"; do
  refs=$(nm -u "$o" | awk '{print $2}' | sed 's/@.*//' | grep -E "$forbidden")
  if [ -n "$refs" ]; then
    echo "$(basename "$o") references: $refs"
    bad=1
  fi
done
echo "checked ${#objs[@]} objects"
exit $bad
