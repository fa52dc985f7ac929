<?php
// basic: a small mixed workload touching every common operation (~400 ops).
// Mirrors pymongo/basic.py; --scale is ignored.
declare(strict_types=1);
require __DIR__ . '/common.php';

function item(int $i, string $kind): array
{
    return ['_id' => $i, 'kind' => $kind, 'group' => $i % 5, 'name' => "item-$i", 'value' => ($i * 7) % 13];
}

$wl = new Workload('basic');
$wl->dropDatabase();

$t = $wl->start('insert_ack');
$n = 0;
for ($i = 0; $i < 50; $i++) {
    if ($wl->insertOne('items', item($i, 'ack'))->isAcknowledged()) {
        $n++;
    }
}
$wl->emit('insert_ack', 50, $wl->since($t), ['inserted' => $n]);

$t = $wl->start('insert_w0');
for ($i = 50; $i < 100; $i++) {
    $wl->insertOne('items', item($i, 'w0'), $wl->w0);
}
$count = $wl->count('items', ['kind' => 'w0']);
$wl->emit('insert_w0', 51, $wl->since($t), ['count' => $count]);

$t = $wl->start('push_ack');
$wl->insertOne('blogs', ['_id' => 1, 'title' => 'No Free Lunch', 'author' => 'Alex', 'comments' => []]);
$matched = $modified = 0;
for ($k = 0; $k < 20; $k++) {
    $r = $wl->updateOne('blogs', ['_id' => 1], ['$push' => ['comments' => ['who' => "user-$k", 'comment' => "comment $k"]]]);
    $matched += $r->getMatchedCount();
    $modified += $r->getModifiedCount();
}
$wl->emit('push_ack', 21, $wl->since($t), ['matched' => $matched, 'modified' => $modified]);

$t = $wl->start('push_w0');
for ($k = 20; $k < 40; $k++) {
    $wl->updateOne('blogs', ['_id' => 1], ['$push' => ['comments' => ['who' => "user-$k", 'comment' => "comment $k"]]], $wl->w0);
}
$blog = $wl->findOne('blogs', ['_id' => 1]);
$wl->emit('push_w0', 21, $wl->since($t), ['comments' => count($blog->comments), 'last' => end($blog->comments)]);

$t = $wl->start('find_noindex');
$docs = $wl->find('items', ['name' => 'item-42']);
$wl->emit('find_noindex', 1, $wl->since($t), $docs);

$t = $wl->start('create_index');
$name = $wl->createIndex('items', ['name' => 1]);
$wl->emit('create_index', 1, $wl->since($t), $name);

$t = $wl->start('find_index');
$docs = $wl->find('items', ['name' => 'item-42']);
$wl->emit('find_index', 1, $wl->since($t), $docs);

$t = $wl->start('find_batches');
$ids = array_map(fn ($d) => $d->_id, $wl->find('items', [], ['sort' => ['_id' => 1], 'batchSize' => 10]));
$wl->emit('find_batches', 1, $wl->since($t), ['ids' => $ids]);

$t = $wl->start('update_many');
$r = $wl->updateMany('items', ['group' => 3], ['$set' => ['flag' => true]]);
$wl->emit('update_many', 1, $wl->since($t), ['matched' => $r->getMatchedCount(), 'modified' => $r->getModifiedCount()]);

$t = $wl->start('delete_one');
$r = $wl->deleteOne('items', ['_id' => 7]);
$wl->emit('delete_one', 1, $wl->since($t), ['deleted' => $r->getDeletedCount()]);

$t = $wl->start('delete_many');
$r = $wl->deleteMany('items', ['kind' => 'w0', 'group' => 1]);
$wl->emit('delete_many', 1, $wl->since($t), ['deleted' => $r->getDeletedCount()]);

$t = $wl->start('counts');
$names = $wl->collectionNames();
$counts = [];
foreach ($names as $c) {
    $counts[$c] = $wl->count($c);
}
$wl->emit('counts', 1 + count($names), $wl->since($t), $counts);
$wl->end();
