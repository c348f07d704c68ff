# SPDX-License-Identifier: MIT
# build big hashes of strings, nested arrays, sort, join
use strict; use warnings;
my %h; my %cnt; my @recs;
open(my $fh, '<', $ARGV[0]) or die;
while (my $l = <$fh>) {
  chomp $l; my ($id, $w, $txt, $n, $mail) = split /\t/, $l;
  $h{$mail} .= "$w,";
  for my $t (split / /, $txt) { $cnt{$t}++; }
  push @recs, [$id, $w, $n, length $txt] if $n % 3 == 0;
  if ($id % 50000 == 0) { %h = () if $id % 200000 == 0; }
}
my @top = (sort { $cnt{$b} <=> $cnt{$a} || $a cmp $b } keys %cnt)[0..49];
my @s = sort { $a->[2] <=> $b->[2] || $a->[0] <=> $b->[0] } @recs;
my $tot = 0; $tot += length($h{$_}) for keys %h;
print join(" ", @top), "\n", scalar(@s), " ", $s[0][0], " ", $s[-1][0], " $tot\n";
