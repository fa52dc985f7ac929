<?php
// writeconcern (seed 002): inserts with w:0, w:1 and {w:1, j:true}, then with three secondary indexes.
// Mirrors pymongo/writeconcern.py.
declare(strict_types=1);
require __DIR__ . '/common.php';

use MongoDB\BSON\UTCDateTime;
use MongoDB\Driver\WriteConcern;

function activity(int $i, UTCDateTime $time): array
{
    return [
        '_id' => $i,
        'Aid' => '56aacfd4d4307006200d0bac',
        'Cid' => 111,
        'At' => '56aacfd4d4307006200d0bac',
        'Time' => $time,
        'EvtN' => null,
        'Evt' => null,
        'As' => 0,
        'Mis' => [
            'Mid' => 'e3196ec3-b624-4b11-a5e7-df7c4400ba75',
            'Mt' => 'asdf',
            'Ms' => 1,
            'Filter' => [['Fs' => true, 'Exp' => 'Evt.Amount>0', 'Pro' => 'GetInfo']],
            'Rew' => [['Rid' => '123', 'Ra' => '', 'Rs' => 0]],
        ],
    ];
}

function inserts(Workload $wl, string $step, string $collection, WriteConcern $wc, int $n, UTCDateTime $time): void
{
    $t = $wl->start($step);
    for ($i = 0; $i < $n; $i++) {
        $wl->insertOne($collection, activity($i, $time), $wc);
    }
    $ops = $n;
    if ($wc === $wl->w0) {
        $wl->count($collection); // barrier: all w:0 inserts have been applied
        $ops += 1;
    }
    $seconds = $wl->since($t);
    $last = $wl->findOne($collection, ['_id' => $n - 1], ['projection' => ['Time' => 0]]);
    $wl->emit($step, $ops, $seconds, ['count' => $wl->count($collection), 'last' => $last]);
}

$time = new UTCDateTime(1490693705779); // 2017-03-28T09:35:05.779Z
$wl = new Workload('writeconcern');
$n = $wl->scaled(5000);
$wl->dropDatabase();
inserts($wl, 'insert_w0', 'wc_w0', $wl->w0, $n, $time);
inserts($wl, 'insert_w1', 'wc_w1', $wl->w1, $n, $time);
inserts($wl, 'insert_j', 'wc_j', $wl->j1, $n, $time);

$t = $wl->start('create_indexes');
$names = [];
foreach (['Aid', 'Cid', 'Mis.Mid'] as $key) {
    $names[] = $wl->createIndex('wc_indexed', [$key => 1]);
}
sort($names, SORT_STRING);
$wl->emit('create_indexes', 3, $wl->since($t), $names);
inserts($wl, 'insert_w1_indexed', 'wc_indexed', $wl->w1, $n, $time);
$wl->end();
