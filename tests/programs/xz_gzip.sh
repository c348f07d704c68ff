# SPDX-License-Identifier: MIT
# programs.xz_gzip: multi-threaded xz (-T2) and gzip compress and decompress a generated
# file under tessera; the round trip must restore it exactly, and the compressed streams
# must decompress without tessera too.
source "$(dirname "$0")/common.sh"

head -c 20000000 /dev/zero | tr '\0' 'a' > "$SCRATCH/data"
seq 1 2000000 >> "$SCRATCH/data"
awk 'BEGIN { for (i = 0; i < 200000; i++) print i * 7919 % 100003, "line", i }' >> "$SCRATCH/data"
sum_before=$(sha256sum < "$SCRATCH/data")

ran=0
if command -v xz > /dev/null; then
  preloaded_checked xz -T2 -3 -k -c "$SCRATCH/data" > "$SCRATCH/data.xz" ||
    die "xz -T2 under tessera exited with status $?"
  [ "$(xz -dc "$SCRATCH/data.xz" | sha256sum)" = "$sum_before" ] ||
    die "xz stream written under tessera does not decompress to the input"
  preloaded_checked xz -T2 -dc "$SCRATCH/data.xz" > "$SCRATCH/data.unxz" ||
    die "xz -d under tessera exited with status $?"
  [ "$(sha256sum < "$SCRATCH/data.unxz")" = "$sum_before" ] || die "xz round trip under tessera"
  ran=$((ran + 1))
fi
if command -v gzip > /dev/null; then
  preloaded_checked gzip -c -6 "$SCRATCH/data" > "$SCRATCH/data.gz" ||
    die "gzip under tessera exited with status $?"
  [ "$(gzip -dc "$SCRATCH/data.gz" | sha256sum)" = "$sum_before" ] ||
    die "gzip stream written under tessera does not decompress to the input"
  preloaded_checked gzip -dc "$SCRATCH/data.gz" > "$SCRATCH/data.ungz" ||
    die "gzip -d under tessera exited with status $?"
  [ "$(sha256sum < "$SCRATCH/data.ungz")" = "$sum_before" ] || die "gzip round trip under tessera"
  ran=$((ran + 1))
fi
[ "$ran" -gt 0 ] || die "neither xz nor gzip is installed"
echo "programs.xz_gzip: ok: $ran round trips"
