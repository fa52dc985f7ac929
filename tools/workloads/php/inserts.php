<?php
// inserts: the replay benchmark's workload (tools/bench-replay). Mirrors pymongo/inserts.py:
// N = 20000 * scale acknowledged single inserts of {_id: i, name: "item-<i>", value: (i * 7) % 13, pad: 94 x "x"}.
declare(strict_types=1);
require __DIR__ . '/common.php';

$wl = new Workload('inserts');
$n = $wl->scaled(20000);
$pad = str_repeat('x', 94);
$wl->dropDatabase();
$t = $wl->start('insert');
for ($i = 0; $i < $n; $i++) {
    $wl->insertOne('items', ['_id' => $i, 'name' => "item-$i", 'value' => ($i * 7) % 13, 'pad' => $pad]);
}
$seconds = $wl->since($t);
$wl->emit('insert', $n, $seconds, ['count' => $wl->count('items')]);
$wl->end();
