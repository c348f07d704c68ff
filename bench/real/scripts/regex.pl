# SPDX-License-Identifier: MIT
# regex-heavy text processing: substitutions, captures, tokenization
use strict; use warnings;
my (%dom, %pairs); my $out = 0;
open(my $fh, '<', $ARGV[0]) or die;
while (my $l = <$fh>) {
  if ($l =~ /\@host(\d+)\.example\.com/) { $dom{$1}++ }
  (my $t = $l) =~ s/([aeiou])([a-z])/$2$1/g;
  $t =~ s/\b(\w)(\w*)\b/\u$1\L$2/g;
  my @w = ($t =~ /\b([A-Z][a-z]{3,})\b/g);
  for (my $i = 0; $i + 1 < @w; $i++) { $pairs{"$w[$i] $w[$i+1]"}++ if length($w[$i]) > 6 }
  $out += length $t;
}
my @k = sort { $pairs{$b} <=> $pairs{$a} || $a cmp $b } keys %pairs;
print "$out ", scalar(keys %dom), " ", scalar(@k), " @k[0..9]\n";
