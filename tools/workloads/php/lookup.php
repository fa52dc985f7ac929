<?php
// lookup (seed 004): string _ids, random lookups by author (no index, then indexed), remove all.
// Mirrors pymongo/lookup.py (with its `views` step under MONGOTAPE_WORKLOAD_TALLY=1).
declare(strict_types=1);
require __DIR__ . '/common.php';

use MongoDB\BSON\UTCDateTime;

const EPOCH_MS = 1356998400000; // 2013-01-01T00:00:00Z
const SEED = 5000000;

function lookups(Workload $wl, string $step, int $n, int $m): void
{
    $rng = new Lcg(SEED);
    $found = 0;
    $last = null;
    $t = $wl->start($step);
    for ($k = 0; $k < $m; $k++) {
        $x = 1 + $rng->below($n);
        $doc = $wl->attempt(fn () => $wl->findOne('userinfo', ['author' => "{$x}Mike"], ['projection' => ['date' => 0]]));
        if ($doc !== null) {
            $found++;
            $last = $doc;
        }
    }
    $wl->emit($step, $m, $wl->since($t), ['lookups' => $m, 'found' => $found, 'last' => $last]);
}

$wl = new Workload('lookup');
$n = $wl->scaled(10000, 2);
$m = $wl->scaled(2000, 10);
$wl->dropDatabase();

$t = $wl->start('insert');
for ($x = 0; $x < $n; $x++) {
    $doc = ['_id' => (string) $x, 'author' => "{$x}Mike", 'text' => 'My first blog post!',
        'tags' => ['mongodb', 'python', 'pymongo'], 'date' => new UTCDateTime(EPOCH_MS + $x * 1000)];
    $wl->attempt(fn () => $wl->insertOne('userinfo', $doc));
}
$wl->emit('insert', $n, $wl->since($t), ['count' => $wl->count('userinfo')]);

lookups($wl, 'lookup_noindex', $n, intdiv($m, 10));

$t = $wl->start('create_index');
$name = $wl->createIndex('userinfo', ['author' => 1]);
$wl->emit('create_index', 1, $wl->since($t), $name);

lookups($wl, 'lookup_index', $n, $m);

if ($wl->tally !== null) {
    $v = $wl->scaled(1000, 10);
    $t = $wl->start('views');
    for ($k = 0; $k < $v; $k++) {
        $wl->attempt(fn () => $wl->updateOne('counters', ['_id' => 'views'], ['$inc' => ['n' => 1]], null, true));
    }
    $seconds = $wl->since($t);
    $counter = $wl->findOne('counters', ['_id' => 'views']);
    $wl->emit('views', $v, $seconds, ['n' => $counter === null ? 0 : $counter->n]);
}

$t = $wl->start('remove_all');
$before = $wl->count('userinfo');
$r = $wl->deleteMany('userinfo', new stdClass());
$after = $wl->count('userinfo');
$wl->emit('remove_all', 3, $wl->since($t), ['before' => $before, 'deleted' => $r->getDeletedCount(), 'after' => $after]);
$wl->end();
