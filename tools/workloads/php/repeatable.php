<?php
// repeatable: writes that `mongotape replay --repeat` applies again (tests/replay_repeat.rs).
// Mirrors pymongo/repeatable.py: inserts without an explicit _id (acknowledged, w:0, one bulk insert),
// $push through an upsert (acknowledged, w:0), $inc of an upserted counter, update many, delete many.
declare(strict_types=1);
require __DIR__ . '/common.php';

use MongoDB\Driver\BulkWrite;
use MongoDB\Driver\WriteConcern;

function upsert(Workload $wl, array $filter, array $update, ?WriteConcern $wc = null): void
{
    $bulk = new BulkWrite();
    $bulk->update($filter, $update, ['multi' => false, 'upsert' => true]);
    $wl->manager->executeBulkWrite($wl->ns('blogs'), $bulk, $wc === null ? [] : ['writeConcern' => $wc]);
}

$wl = new Workload('repeatable');
$n = $wl->scaled(100, 4);
$m = $wl->scaled(50);
$k = $wl->scaled(20);
$comments = fn () => count($wl->findOne('blogs', ['_id' => 'blog'])->comments);
$wl->dropDatabase();

$t = $wl->start('insert_ack');
for ($i = 0; $i < $n; $i++) {
    $wl->insertOne('docs', ['kind' => 'ack', 'i' => $i]);
}
$wl->emit('insert_ack', $n, $wl->since($t), ['count' => $wl->count('docs', ['kind' => 'ack'])]);

$t = $wl->start('insert_w0');
for ($i = 0; $i < $n; $i++) {
    $wl->insertOne('docs', ['kind' => 'w0', 'i' => $i], $wl->w0);
}
$count = $wl->count('docs', ['kind' => 'w0']);
$wl->emit('insert_w0', $n + 1, $wl->since($t), ['count' => $count]);

$t = $wl->start('insert_many');
$bulk = new BulkWrite();
for ($i = 0; $i < $m; $i++) {
    $bulk->insert(['kind' => 'many', 'i' => $i]);
}
$wl->manager->executeBulkWrite($wl->ns('docs'), $bulk);
$wl->emit('insert_many', 1, $wl->since($t), ['count' => $wl->count('docs', ['kind' => 'many'])]);

$t = $wl->start('push_ack');
for ($j = 0; $j < $k; $j++) {
    upsert($wl, ['_id' => 'blog'], ['$push' => ['comments' => ['who' => "user-$j"]]]);
}
$seconds = $wl->since($t);
$wl->emit('push_ack', $k, $seconds, ['comments' => $comments()]);

$t = $wl->start('push_w0');
for ($j = 0; $j < $k; $j++) {
    upsert($wl, ['_id' => 'blog'], ['$push' => ['comments' => ['who' => "user-$j"]]], $wl->w0);
}
$pushed = $comments();
$wl->emit('push_w0', $k + 1, $wl->since($t), ['comments' => $pushed]);

$t = $wl->start('inc');
for ($j = 0; $j < $k; $j++) {
    upsert($wl, ['_id' => 'counter'], ['$inc' => ['n' => 1]]);
}
$seconds = $wl->since($t);
$wl->emit('inc', $k, $seconds, ['n' => $wl->findOne('blogs', ['_id' => 'counter'])->n]);

$t = $wl->start('update_many');
$r = $wl->updateMany('docs', ['kind' => 'ack'], ['$inc' => ['touched' => 1]]);
$wl->emit('update_many', 1, $wl->since($t), ['matched' => $r->getMatchedCount(), 'modified' => $r->getModifiedCount()]);

$t = $wl->start('delete_many');
$r = $wl->deleteMany('docs', ['kind' => 'w0', 'i' => ['$lt' => intdiv($n, 4)]]);
$wl->emit('delete_many', 1, $wl->since($t), ['deleted' => $r->getDeletedCount()]);
$wl->end();
