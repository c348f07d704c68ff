# SPDX-License-Identifier: MIT
# gawk associative arrays over the generated file
BEGIN { FS = "\t" }
{ byword[$2] += $4; n = split($3, a, " "); for (i = 1; i <= n; i++) { wc[a[i]]++; co[$2 SUBSEP a[i]]++ }
  mail[$5] = mail[$5] $1 ","; }
END {
  nw = 0; for (w in wc) nw++; nc = 0; for (k in co) nc++;
  tot = 0; for (m in mail) tot += length(mail[m]);
  PROCINFO["sorted_in"] = "@val_num_desc"; i = 0
  for (w in byword) { if (++i > 10) break; printf "%s %d\n", w, byword[w] }
  print nw, nc, tot
}
