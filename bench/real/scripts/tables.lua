-- SPDX-License-Identifier: MIT
-- Lua: table-heavy: build records, string keys, sort, concat
local recs, cnt, byw = {}, {}, {}
for line in io.lines(arg[1]) do
  local id, w, txt, n, mail = line:match("^(%d+)\t([^\t]*)\t([^\t]*)\t(%d+)\t(.*)$")
  n = tonumber(n)
  local r = {id = tonumber(id), w = w, n = n, mail = mail, parts = {}}
  for t in txt:gmatch("%S+") do cnt[t] = (cnt[t] or 0) + 1; r.parts[#r.parts + 1] = t:upper() end
  local b = byw[w]; if not b then b = {}; byw[w] = b end; b[#b + 1] = r
  if n % 2 == 0 then recs[#recs + 1] = r end
end
table.sort(recs, function(a, b) if a.n ~= b.n then return a.n < b.n end return a.id < b.id end)
local keys = {}
for k in pairs(cnt) do keys[#keys + 1] = k end
table.sort(keys, function(a, b) if cnt[a] ~= cnt[b] then return cnt[a] > cnt[b] end return a < b end)
local out = {}
for i = 1, 20 do out[#out + 1] = keys[i] .. "=" .. cnt[keys[i]] end
local tot = 0
for w, b in pairs(byw) do local s = {} for i, r in ipairs(b) do s[i] = table.concat(r.parts, "-") end tot = tot + #table.concat(s, "|") end
print(#recs, recs[1].id, recs[#recs].id, tot, table.concat(out, " "))
