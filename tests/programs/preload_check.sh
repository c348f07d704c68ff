# SPDX-License-Identifier: MIT
# programs.preload_check: LD_PRELOAD=libtessera.so really replaces malloc in an unmodified
# system program (python3 finds libtessera in its /proc/self/maps, and a 64 MiB object it
# allocates shows up in tessera_get_counters), and trivial programs run with output intact.
source "$(dirname "$0")/common.sh"

PYTHON=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
[ -n "$PYTHON" ] || die "python3 not found"

out=$(preloaded "$PYTHON" -c '
import ctypes
maps = open("/proc/self/maps").read()
tessera = ctypes.CDLL(None)  # the global scope: the preloaded library comes first
class Counters(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("allocated", "active", "metadata", "resident", "mapped", "retained", "dirty")]
version = tessera.tessera_version
version.restype = ctypes.c_char_p
before, after = Counters(), Counters()
tessera.tessera_get_counters(ctypes.byref(before))
blob = bytes(64 << 20)  # a large object: CPython takes it from malloc()
tessera.tessera_get_counters(ctypes.byref(after))
grew = after.allocated - before.allocated >= (64 << 20)
print("mapped" if "libtessera" in maps else "not-mapped",
      "counted" if grew else "not-counted", version().decode())
')
echo "$out"
case "$out" in
  "mapped counted "*) ;;
  *) die "python3 under LD_PRELOAD does not allocate from tessera: $out" ;;
esac

# Trivial programs run and exit 0 with output intact.
[ "$(preloaded /bin/echo hello)" = hello ] || die "echo under tessera"
[ "$(preloaded /bin/true && echo ok)" = ok ] || die "true under tessera"
[ "$(printf 'b\na\n' | preloaded sort | tr '\n' ,)" = "a,b," ] || die "sort of two lines"
preloaded_checked /bin/ls / > "$SCRATCH/ls.out" || die "ls / under tessera (exit $?)"
ls / > "$SCRATCH/ls.expected"
same_output "$SCRATCH/ls.expected" "$SCRATCH/ls.out" "ls /"
echo "programs.preload_check: ok"
