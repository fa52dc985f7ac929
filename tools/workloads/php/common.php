<?php
// Shared helpers for the PHP workloads (see tools/workloads/README.md).
// Only the low-level MongoDB\Driver\* API of ext-mongodb is available.
// Keep it behaviourally identical to pymongo/common.py and mongosh/common.js.
declare(strict_types=1);

use MongoDB\Driver\BulkWrite;
use MongoDB\Driver\Command;
use MongoDB\Driver\Manager;
use MongoDB\Driver\Query;
use MongoDB\Driver\WriteConcern;
use MongoDB\Driver\WriteResult;

// Nothing but step lines may reach stdout: errors go to stderr and exit 1.
ini_set('display_errors', 'stderr');
ini_set('log_errors', '0');
error_reporting(E_ALL);
set_error_handler(function (int $no, string $str, string $file, int $line): bool {
    throw new ErrorException($str, 0, $no, $file, $line);
});
set_exception_handler(function (Throwable $e): void {
    fwrite(STDERR, get_class($e) . ': ' . $e->getMessage() . "\n" . $e->getTraceAsString() . "\n");
    fwrite(STDERR, errorLine($e) . "\n");
    exit(1);
});

/**
 * `error: CLASS code=N codeName=NAME labels=A,B`, the line js/errors.js prints for the JavaScript
 * clients: the server's code and labels, or the writeConcernError's when a bulk write has one.
 * ext-mongodb keeps the labels in a protected property (only hasErrorLabel() is public).
 */
function errorLine(Throwable $e): string
{
    $code = $e->getCode();
    $codeName = '';
    $labels = [];
    if ($e instanceof MongoDB\Driver\Exception\RuntimeException) {
        $property = new ReflectionProperty(MongoDB\Driver\Exception\RuntimeException::class, 'errorLabels');
        $property->setAccessible(true);
        $labels = $property->getValue($e) ?? [];
    }
    if ($e instanceof MongoDB\Driver\Exception\BulkWriteException) {
        $wce = $e->getWriteResult()->getWriteConcernError();
        if ($wce !== null) {
            $code = $wce->getCode();
            $codeName = $wce->getInfo()->codeName ?? '';
        }
    }
    if ($e instanceof MongoDB\Driver\Exception\CommandException) {
        $codeName = $e->getResultDocument()->codeName ?? '';
    }
    return 'error: ' . get_class($e) . " code=$code codeName=$codeName labels=" . implode(',', $labels);
}

const WL_DIR = __DIR__;
// A step marker's comment; mongotape recognises the ping (src/wire/marker.rs).
const MARKER_PREFIX = 'mongotape:step:';

/** round(base * scale) with halves rounded up, at least $minimum. */
function scaled(int $base, float $scale, int $minimum = 1): int
{
    return max($minimum, (int) floor($base * $scale + 0.5));
}

/** Park-Miller "minimal standard" generator (48271, 2^31-1). */
final class Lcg
{
    private int $state;

    public function __construct(int $seed)
    {
        $this->state = $seed % 2147483647 ?: 1;
    }

    public function next(): int
    {
        $this->state = ($this->state * 48271) % 2147483647;
        return $this->state;
    }

    public function below(int $n): int
    {
        return $this->next() % $n;
    }

    public function letters(int $count): string
    {
        $s = '';
        for ($i = 0; $i < $count; $i++) {
            $s .= chr(97 + $this->below(26));
        }
        return $s;
    }
}

final class Workload
{
    public Manager $manager;
    public string $db;
    public float $scale;
    public WriteConcern $w0;
    public WriteConcern $w1;
    public WriteConcern $j1;
    private ?string $marked = null;
    /** MONGOTAPE_WORKLOAD_TALLY=1: ['ok' => N, 'failed' => M, 'app_retried' => R] of the operations run by attempt(). */
    public ?array $tally = null;
    /** MONGOTAPE_WORKLOAD_APP_RETRY: how many times attempt() runs a failed operation again. */
    private int $appRetries = 0;

    public function __construct(public string $name)
    {
        $opts = ['uri' => null, 'db' => 'bench', 'scale' => '1.0'];
        $args = array_slice($GLOBALS['argv'], 1);
        for ($i = 0; $i < count($args); $i++) {
            $arg = $args[$i];
            if (!str_starts_with($arg, '--')) {
                $this->usage("unexpected argument $arg");
            }
            $key = substr($arg, 2);
            if (str_contains($key, '=')) {
                [$key, $value] = explode('=', $key, 2);
            } else {
                if ($i + 1 >= count($args)) {
                    $this->usage("$arg needs a value");
                }
                $value = $args[++$i];
            }
            if (!array_key_exists($key, $opts)) {
                $this->usage("unknown option --$key");
            }
            $opts[$key] = $value;
        }
        if ($opts['uri'] === null) {
            $this->usage('--uri is required');
        }
        if (!is_numeric($opts['scale']) || (float) $opts['scale'] <= 0) {
            $this->usage('--scale must be a number > 0');
        }
        $this->scale = (float) $opts['scale'];
        $this->db = $opts['db'];
        $this->manager = new Manager($opts['uri']);
        $this->w0 = new WriteConcern(0);
        $this->w1 = new WriteConcern(1);
        $this->j1 = new WriteConcern(1, 0, true);
        if (getenv('MONGOTAPE_WORKLOAD_TALLY') === '1') {
            $this->tally = ['ok' => 0, 'failed' => 0, 'app_retried' => 0];
            $retries = getenv('MONGOTAPE_WORKLOAD_APP_RETRY') ?: '0';
            if (!ctype_digit($retries)) {
                fwrite(STDERR, "MONGOTAPE_WORKLOAD_APP_RETRY must be a whole number >= 0, not '$retries'\n");
                exit(2);
            }
            $this->appRetries = (int) $retries;
        }
    }

    /**
     * $op(), counted under MONGOTAPE_WORKLOAD_TALLY=1 (a failure gives null, after up to
     * MONGOTAPE_WORKLOAD_APP_RETRY runs again: pymongo/common.py); else just $op().
     */
    public function attempt(callable $op): mixed
    {
        if ($this->tally === null) {
            return $op();
        }
        for ($run = 0; $run <= $this->appRetries; $run++) {
            if ($run > 0) {
                $this->tally['app_retried']++;
            }
            try {
                $r = $op();
            } catch (MongoDB\Driver\Exception\Exception $e) {
                continue;
            }
            $this->tally['ok']++;
            return $r;
        }
        $this->tally['failed']++;
        return null;
    }

    private function usage(string $msg): never
    {
        fwrite(STDERR, "{$this->name}: $msg\nusage: php {$this->name}.php --uri URI [--db DB] [--scale S]\n");
        exit(2);
    }

    public function scaled(int $base, int $minimum = 1): int
    {
        return scaled($base, $this->scale, $minimum);
    }

    public function now(): int
    {
        return hrtime(true);
    }

    /** Sends the step marker on the workload's connection (outside any step's clock). */
    public function mark(string $step): void
    {
        $this->manager->executeCommand('admin', new Command(['ping' => 1, 'comment' => MARKER_PREFIX . $step]));
        $this->marked = $step;
    }

    /** Marks the beginning of $step, then starts its clock: returns now(). */
    public function start(string $step): int
    {
        $this->mark($step);
        return $this->now();
    }

    /** After the last step. */
    public function end(): void
    {
        $this->mark('end');
        if ($this->tally !== null) {
            echo json_encode(['tally' => $this->tally]), "\n";
        }
    }

    public function since(int $started): float
    {
        return (hrtime(true) - $started) / 1e9;
    }

    public function emit(string $step, int $ops, float $seconds, mixed $result): void
    {
        if ($step !== $this->marked) {
            throw new LogicException("step $step was not started with start() (last marker {$this->marked})");
        }
        $line = json_encode(
            ['step' => $step, 'ops' => $ops, 'seconds' => round($seconds, 6), 'result' => $result],
            JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION
        );
        fwrite(STDOUT, $line . "\n");
    }

    public function ns(string $collection): string
    {
        return $this->db . '.' . $collection;
    }

    /** Runs a command on the workload database and returns its reply document. */
    public function command(array $command): object
    {
        $cursor = $this->manager->executeCommand($this->db, new Command($command));
        return $cursor->toArray()[0];
    }

    public function dropDatabase(): void
    {
        $t = $this->start('drop_database');
        $this->command(['dropDatabase' => 1]);
        $this->emit('drop_database', 1, $this->since($t), null);
    }

    /** Acknowledged `count` command (also the barrier after w:0 writes). */
    public function count(string $collection, array|object $query = []): int
    {
        return (int) $this->command(['count' => $collection, 'query' => (object) $query])->n;
    }

    public function insertOne(string $collection, array $doc, ?WriteConcern $wc = null): WriteResult
    {
        $bulk = new BulkWrite();
        $bulk->insert($doc);
        return $this->write($collection, $bulk, $wc);
    }

    public function updateOne(string $collection, array $filter, array $update, ?WriteConcern $wc = null, bool $upsert = false): WriteResult
    {
        $bulk = new BulkWrite();
        $bulk->update($filter, $update, ['multi' => false, 'upsert' => $upsert]);
        return $this->write($collection, $bulk, $wc);
    }

    public function updateMany(string $collection, array $filter, array $update, ?WriteConcern $wc = null): WriteResult
    {
        $bulk = new BulkWrite();
        $bulk->update($filter, $update, ['multi' => true]);
        return $this->write($collection, $bulk, $wc);
    }

    public function deleteOne(string $collection, array|object $filter, ?WriteConcern $wc = null): WriteResult
    {
        $bulk = new BulkWrite();
        $bulk->delete($filter, ['limit' => 1]);
        return $this->write($collection, $bulk, $wc);
    }

    public function deleteMany(string $collection, array|object $filter, ?WriteConcern $wc = null): WriteResult
    {
        $bulk = new BulkWrite();
        $bulk->delete($filter, ['limit' => 0]);
        return $this->write($collection, $bulk, $wc);
    }

    private function write(string $collection, BulkWrite $bulk, ?WriteConcern $wc): WriteResult
    {
        $options = $wc === null ? [] : ['writeConcern' => $wc];
        return $this->manager->executeBulkWrite($this->ns($collection), $bulk, $options);
    }

    /** Runs a find and returns all documents (stdClass objects, arrays as PHP lists). */
    public function find(string $collection, array|object $filter, array $options = []): array
    {
        return $this->manager->executeQuery($this->ns($collection), new Query($filter, $options))->toArray();
    }

    public function findOne(string $collection, array|object $filter, array $options = []): ?object
    {
        $docs = $this->find($collection, $filter, ['limit' => 1, 'singleBatch' => true] + $options);
        return $docs[0] ?? null;
    }

    public function aggregate(string $collection, array $pipeline): array
    {
        $cursor = $this->manager->executeCommand($this->db, new Command([
            'aggregate' => $collection, 'pipeline' => $pipeline, 'cursor' => new stdClass(),
        ]));
        return $cursor->toArray();
    }

    public function createIndex(string $collection, array $key): string
    {
        $name = implode('_', array_map(fn ($k, $v) => "{$k}_{$v}", array_keys($key), $key));
        $this->command(['createIndexes' => $collection, 'indexes' => [['key' => $key, 'name' => $name]]]);
        return $name;
    }

    public function collectionNames(): array
    {
        $cursor = $this->manager->executeCommand($this->db, new Command(['listCollections' => 1, 'nameOnly' => true]));
        $names = array_map(fn ($c) => $c->name, $cursor->toArray());
        sort($names, SORT_STRING);
        return $names;
    }
}
