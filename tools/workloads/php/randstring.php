<?php
// randstring (seed 003): random 26-letter strings, insert / find / delete one / delete all,
// without and then with an index on the field. Mirrors pymongo/randstring.py.
declare(strict_types=1);
require __DIR__ . '/common.php';

const SEED = 20110725;

function runPass(Workload $wl, string $suffix, int $n): void
{
    $rng = new Lcg(SEED);
    $last = null;
    $t = $wl->start("insert_$suffix");
    for ($i = 0; $i < $n; $i++) {
        $last = $rng->letters(26);
        $wl->insertOne('users', ['_id' => $i, 'NewsId' => $last]);
    }
    $wl->emit("insert_$suffix", $n, $wl->since($t), ['count' => $wl->count('users')]);

    $t = $wl->start("find_$suffix");
    $docs = $wl->find('users', ['NewsId' => $last]);
    $wl->emit("find_$suffix", 1, $wl->since($t), $docs);

    $t = $wl->start("delete_one_$suffix");
    $r = $wl->deleteOne('users', ['NewsId' => $last]);
    $wl->emit("delete_one_$suffix", 1, $wl->since($t), ['deleted' => $r->getDeletedCount()]);

    $t = $wl->start("delete_all_$suffix");
    $r = $wl->deleteMany('users', new stdClass());
    $wl->emit("delete_all_$suffix", 1, $wl->since($t), ['deleted' => $r->getDeletedCount()]);
}

$wl = new Workload('randstring');
$n = $wl->scaled(10000, 2);
$wl->dropDatabase();
runPass($wl, 'noindex', $n);

$t = $wl->start('create_index');
$name = $wl->createIndex('users', ['NewsId' => 1]);
$wl->emit('create_index', 1, $wl->since($t), $name);
runPass($wl, 'index', $n);
$wl->end();
