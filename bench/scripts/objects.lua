-- SPDX-License-Identifier: MIT
-- Workload 10d: object-heavy Lua (binary trees, table churn, string building).
-- Run by bench/run as `lua5.4 objects.lua SCALE`. Lua allocates every table, closure and
-- string through one realloc-style function backed by the C allocator under test.
local scale = tonumber(arg[1]) or 4

local function tree(depth)
  if depth == 0 then return {} end
  return { tree(depth - 1), tree(depth - 1) }
end

local function check(t)
  if not t[1] then return 1 end
  return 1 + check(t[1]) + check(t[2])
end

local checksum = 0
for round = 1, scale do
  -- Binary trees: many short-lived small tables, one long-lived tree.
  local long_lived = tree(14)
  for d = 4, 14, 2 do
    for _ = 1, 2 ^ (16 - d) do checksum = checksum + check(tree(d)) end
  end
  checksum = checksum + check(long_lived)
  -- Objects with fields and methods, kept in a growing array then dropped.
  local objs = {}
  for i = 1, 100000 do
    objs[i] = { id = i, name = "obj" .. i, pos = { x = i % 17, y = i % 31 }, tags = { "a", "b" } }
  end
  for i = 1, #objs, 7 do objs[i].tags[#objs[i].tags + 1] = objs[i].name .. "!" end
  checksum = checksum + #objs
  -- String building.
  local parts = {}
  for i = 1, 50000 do parts[#parts + 1] = string.format("%d:%s", i, objs[i].name) end
  checksum = checksum + #table.concat(parts, ",")
end
print(string.format("lua: %d rounds, checksum %d", scale, checksum))
print(string.format("RESULT checksum=%d", checksum))
