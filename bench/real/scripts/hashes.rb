# SPDX-License-Identifier: MIT
# Ruby: hashes, strings, arrays of structs
R = Struct.new(:id, :w, :n, :mail)
byw = Hash.new { |h, k| h[k] = [] }
cnt = Hash.new(0)
recs = []
File.foreach(ARGV[0]) do |l|
  id, w, txt, n, mail = l.chomp.split("\t")
  r = R.new(id.to_i, w, n.to_i, mail)
  byw[w] << r
  txt.split(" ").each { |t| cnt[t.upcase + "_" + t.length.to_s] += 1 }
  recs << r if r.n.odd?
end
s = recs.sort_by { |r| [r.n, r.id] }
top = cnt.sort_by { |k, v| [-v, k] }.first(10)
str = byw.map { |k, v| "#{k}:#{v.map(&:n).sum}" }.join(";")
puts [s.size, s.first.id, s.last.id, top.inspect, str.length, str.hash == str.hash].inspect
