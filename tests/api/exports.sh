# SPDX-License-Identifier: MIT
# api.exports: libtessera.so exports exactly the public API: the malloc family glibc exports
# (with glibc's __libc_* / __posix_memalign aliases, which some programs and the dynamic
# loader interpose on), C++ operator new/delete, and the functions include/tessera.h
# declares with TESSERA_EXPORT; every one of those header functions is exported.
# With TESSERA_JEMALLOC_COMPAT=OFF the jemalloc-compatible names the header declares
# (mallocx, mallctl, ...) must be absent instead.
# usage: bash exports.sh <libtessera.so> <include/tessera.h> <ON|OFF: jemalloc compat>
set -euo pipefail
LIB=${1:?usage: exports.sh <libtessera.so> <tessera.h> <ON|OFF>}
HEADER=${2:?usage: exports.sh <libtessera.so> <tessera.h> <ON|OFF>}
COMPAT=${3:-ON}
command -v nm > /dev/null || { echo "FAIL: nm (binutils) not found" >&2; exit 1; }

exported=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TtWwiVv]$/ || $2 ~ /^[BDR]$/ { print $3 }' | sort -u)
# A hidden symbol the linker lists in .dynsym (the profiler's section bounds) cannot be
# bound from outside: not an export.
hidden=$(readelf -W --dyn-syms "$LIB" | awk '$6 == "HIDDEN" { print $8 }' | sort -u)
exported=$(comm -23 <(printf '%s\n' $exported) <(printf '%s\n' $hidden))
header_api=$(grep -o '^TESSERA_EXPORT [^(]*(' "$HEADER" | sed 's/($//; s/.*[ *]//' | sort -u)
[ -n "$header_api" ] || { echo "FAIL: no TESSERA_EXPORT declarations found in $HEADER" >&2; exit 1; }
jemalloc_api="mallocx rallocx xallocx sallocx dallocx sdallocx nallocx mallctl mallctlnametomib
mallctlbymib malloc_stats_print"
case "$COMPAT" in
  ON | on | 1 | TRUE | true) ;;
  *) # built without the jemalloc API: those header names are not public API of this build
    header_api=$(grep -vxF -f <(tr ' ' '\n' <<< "$jemalloc_api" | grep .) <<< "$header_api" || true) ;;
esac

allowed_family="malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign
valloc pvalloc malloc_usable_size free_sized free_aligned_sized malloc_trim mallinfo mallinfo2
mallopt malloc_stats malloc_info cfree __libc_malloc __libc_free __libc_calloc __libc_realloc
__libc_memalign __libc_valloc __libc_pvalloc __libc_mallinfo __libc_mallopt __posix_memalign"

status=0
for sym in $exported; do
  case " $(echo $allowed_family) $(echo $header_api) " in
    *" $sym "*) continue ;;
  esac
  case "$sym" in
    _Znwm* | _Znam* | _ZdlPv* | _ZdaPv*) continue ;; # operator new/delete, every form
  esac
  echo "FAIL: $LIB exports $sym, which is not public API" >&2
  status=1
done
for sym in $header_api malloc free calloc realloc; do
  if ! grep -qx "$sym" <<< "$exported"; then
    echo "FAIL: $sym (declared in $HEADER / the malloc family) is not exported" >&2
    status=1
  fi
done
[ "$status" = 0 ] && echo "api.exports: ok: $(wc -l <<< "$exported") symbols, all public API"
exit "$status"
