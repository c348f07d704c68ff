/* SPDX-License-Identifier: MIT */
// Workload 10d: object-heavy JavaScript for duktape (binary trees, object churn, strings).
// bench/run prepends `var SCALE = N;`. duktape allocates every object, string and
// property table through the C allocator under test, so a JavaScript engine's allocation
// pattern is measured through its real malloc calls.
function tree(depth) {
  if (depth === 0) return { l: null, r: null };
  return { l: tree(depth - 1), r: tree(depth - 1) };
}
function check(t) { return t.l === null ? 1 : 1 + check(t.l) + check(t.r); }

var checksum = 0;
for (var round = 0; round < SCALE; round++) {
  var longLived = tree(12);
  for (var d = 4; d <= 12; d += 2) {
    for (var i = 0; i < Math.pow(2, 14 - d); i++) checksum += check(tree(d));
  }
  checksum += check(longLived);
  var objs = [];
  for (var j = 0; j < 40000; j++) {
    objs.push({ id: j, name: 'obj' + j, pos: { x: j % 17, y: j % 31 }, tags: ['a', 'b'] });
  }
  for (var k = 0; k < objs.length; k += 7) objs[k].tags.push(objs[k].name + '!');
  checksum += objs.length;
  var parts = [];
  for (var m = 0; m < 20000; m++) parts.push(m + ':' + objs[m].name);
  checksum += parts.join(',').length;
  checksum += JSON.stringify(objs.slice(0, 5000)).length;
}
print('js: ' + SCALE + ' rounds, checksum ' + checksum);
print('RESULT checksum=' + checksum);
