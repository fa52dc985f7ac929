<?php
// docsize (seed 001): small (~130 byte) and large (~2,400 byte) documents inserted one by one.
// Mirrors pymongo/docsize.py.
declare(strict_types=1);
require __DIR__ . '/common.php';

function member(int $i, bool $large, string $lorem): array
{
    $doc = ['_id' => $i, 'uname' => "chuchuchu_$i", 'name' => "\u{891a}\u{891a}\u{891a}",
            'password' => 'e10adc3949ba59abbe56e057f20f883e', 'email' => '[e-mail]'];
    if ($large) {
        $doc['description'] = $lorem;
    }
    return $doc;
}

function sizes(Workload $wl, string $collection): array
{
    $res = $wl->aggregate($collection, [
        ['$group' => ['_id' => null, 'count' => ['$sum' => 1], 'bytes' => ['$sum' => ['$bsonSize' => '$$ROOT']],
                      'max' => ['$max' => ['$bsonSize' => '$$ROOT']]]]]);
    return ['count' => $res[0]->count, 'bytes' => $res[0]->bytes, 'max_bytes' => $res[0]->max];
}

$lorem = trim(file_get_contents(WL_DIR . '/../data/lorem.txt'));
$wl = new Workload('docsize');
$n = $wl->scaled(10000);
$wl->dropDatabase();
foreach ([['insert_small', 'members', false], ['insert_large', 'members_large', true]] as [$step, $collection, $large]) {
    $t = $wl->start($step);
    for ($i = 0; $i < $n; $i++) {
        $wl->insertOne($collection, member($i, $large, $lorem));
    }
    $seconds = $wl->since($t);
    $wl->emit($step, $n, $seconds, sizes($wl, $collection));
}
$wl->end();
