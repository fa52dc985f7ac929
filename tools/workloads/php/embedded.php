<?php
// embedded (seed 000): 1 KB comments pushed into blog documents vs inserted into their own collection.
// Mirrors pymongo/embedded.py (see there for the prefill rule: only the last min(P, 100) comments of a
// blog are written one by one).
declare(strict_types=1);
require __DIR__ . '/common.php';

use MongoDB\Driver\BulkWrite;
use MongoDB\Driver\WriteConcern;

const PER_BLOG = [1, 10, 100, 1000, 10000];
const PUSH_CAP = 100;

function dropCollection(Workload $wl, string $name): void
{
    try {
        $wl->command(['drop' => $name]);
    } catch (MongoDB\Driver\Exception\CommandException $e) {
        if ($e->getCode() !== 26) { // NamespaceNotFound (servers before 7.0)
            throw $e;
        }
    }
}

function writeEmbedded(Workload $wl, WriteConcern $wc, int $blogs, int $perBlog, int $pushed, string $comment): int
{
    $ops = 0;
    for ($c = 0; $c < $blogs; $c++) {
        $blog = ['_id' => $c, 'title' => 'Mongodb Benchmark'];
        if ($perBlog > $pushed) {
            $blog['comments'] = array_fill(0, $perBlog - $pushed, ['comment' => $comment]);
        }
        $wl->insertOne('blog', $blog, $wc);
        for ($i = 0; $i < $pushed; $i++) {
            $wl->updateOne('blog', ['_id' => $c], ['$push' => ['comments' => ['comment' => $comment]]], $wc);
        }
        $ops += 1 + $pushed;
    }
    return $ops;
}

function writeSeparate(Workload $wl, WriteConcern $wc, int $blogs, int $perBlog, int $pushed, string $comment): int
{
    $ops = 0;
    for ($c = 0; $c < $blogs; $c++) {
        $first = $perBlog - $pushed;
        if ($first > 0) {
            $bulk = new BulkWrite(['ordered' => true]);
            for ($i = 0; $i < $first; $i++) {
                $bulk->insert(['_id' => $c * $perBlog + $i, 'blog' => $c, 'comment' => $comment]);
            }
            $wl->manager->executeBulkWrite($wl->ns('comments'), $bulk, ['writeConcern' => $wc]);
            $ops += 1;
        }
        for ($i = $first; $i < $perBlog; $i++) {
            $wl->insertOne('comments', ['_id' => $c * $perBlog + $i, 'blog' => $c, 'comment' => $comment], $wc);
        }
        $ops += $pushed;
    }
    return $ops;
}

$embeddedTotals = [['$group' => ['_id' => null, 'blogs' => ['$sum' => 1],
    'comments' => ['$sum' => ['$size' => ['$ifNull' => ['$comments', []]]]]]]];
$separateTotals = [['$group' => ['_id' => '$blog', 'n' => ['$sum' => 1]]],
    ['$group' => ['_id' => null, 'blogs' => ['$sum' => 1], 'comments' => ['$sum' => '$n']]]];

$comment = str_repeat('a', 1000);
$wl = new Workload('embedded');
$total = $wl->scaled(10000);
$wl->dropDatabase();
foreach ([['w0', $wl->w0], ['w1', $wl->w1]] as [$ack, $wc]) {
    foreach (['embedded', 'separate'] as $layout) {
        $name = $layout === 'embedded' ? 'blog' : 'comments';
        foreach (PER_BLOG as $perBlog) {
            if ($perBlog > $total) {
                continue;
            }
            $blogs = intdiv($total, $perBlog);
            $pushed = min($perBlog, PUSH_CAP);
            dropCollection($wl, $name);
            $t = $wl->start("{$layout}_{$perBlog}_{$ack}");
            $ops = $layout === 'embedded'
                ? writeEmbedded($wl, $wc, $blogs, $perBlog, $pushed, $comment)
                : writeSeparate($wl, $wc, $blogs, $perBlog, $pushed, $comment);
            if ($ack === 'w0') {
                $wl->count($name); // barrier: all w:0 writes have been applied
                $ops += 1;
            }
            $seconds = $wl->since($t);
            $res = $wl->aggregate($name, $layout === 'embedded' ? $embeddedTotals : $separateTotals);
            $wl->emit("{$layout}_{$perBlog}_{$ack}", $ops, $seconds,
                ['blogs' => $res[0]->blogs, 'comments' => $res[0]->comments]);
        }
    }
}
$wl->end();
