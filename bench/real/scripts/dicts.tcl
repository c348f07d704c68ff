# SPDX-License-Identifier: MIT
# Tcl: dicts and lists
set f [open [lindex $argv 0]]
set d [dict create]; set l {}
set n 0
while {[gets $f line] >= 0} {
  set fields [split $line "\t"]
  lassign $fields id w txt num mail
  dict lappend d $w $num
  foreach t [split $txt " "] { dict incr cnt $t }
  if {$num % 4 == 0} { lappend l [list $num $id $w] }
  incr n
}
close $f
set s [lsort -integer -index 0 $l]
set tot 0
dict for {k v} $d { incr tot [llength $v] }
set top [lrange [lsort -stride 2 -index 1 -integer -decreasing [dict get [dict create {*}$cnt]]] 0 19]
puts "$n [llength $s] $tot [dict size $cnt] $top"
