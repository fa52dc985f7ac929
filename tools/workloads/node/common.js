// Shared helpers for the Node.js driver workloads (see tools/workloads/README.md).
//   node WORKLOAD.js --uri URI [--db DB] [--scale S]
// The driver (npm `mongodb`, pinned in tools/setup) is loaded from $MONGOTAPE_NODE_MODULES, else
// ${MONGOTAPE_TOOLS:-/opt/mongotape}/node/node_modules, where tools/setup installs it.
// Keep it behaviourally identical to pymongo/common.py, mongosh/common.js and php/common.php.
'use strict';

const path = require('path');

const MODULES = process.env.MONGOTAPE_NODE_MODULES
  || path.join(process.env.MONGOTAPE_TOOLS || '/opt/mongotape', 'node', 'node_modules');

function loadDriver() {
  try {
    return require(path.join(MODULES, 'mongodb'));
  } catch (err) {
    process.stderr.write(`node driver not found under ${MODULES} (run tools/setup clients): ${err.message}\n`);
    process.exit(1);
  }
}

const { MongoClient } = loadDriver();

const W0 = { w: 0 };
const W1 = { w: 1 };
const J1 = { w: 1, j: true };
// A step marker's comment; mongotape recognises the ping (src/wire/marker.rs).
const MARKER_PREFIX = 'mongotape:step:';
const WL_DIR = __dirname;

function parseArgs(name) {
  const opts = { uri: null, db: 'bench', scale: 1.0 };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    const value = argv[i + 1];
    if (!['--uri', '--db', '--scale'].includes(key) || value === undefined) {
      throw new Error(`${name}: usage: --uri URI [--db DB] [--scale S] (bad argument ${key})`);
    }
    opts[key.slice(2)] = key === '--scale' ? Number(value) : value;
    i++;
  }
  if (!opts.uri) throw new Error(`${name}: --uri is required`);
  if (!(opts.scale > 0)) throw new Error(`${name}: --scale must be > 0`);
  return opts;
}

// The scaling rule and the seeded generator, shared with mongosh's workloads.
const { scaled, Lcg } = require(path.join(__dirname, '..', 'js', 'seeded.js'));
const { errorLine } = require(path.join(__dirname, '..', 'js', 'errors.js'));

// Results hold plain JSON values only (the driver already promotes Int32/Int64/Double to numbers).
function plain(v) {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object') {
    if (v instanceof Date) throw new Error('date in result');
    if (v._bsontype !== undefined) throw new Error('non-deterministic BSON type in result: ' + v._bsontype);
    const out = {};
    for (const k of Object.keys(v)) out[k] = plain(v[k]);
    return out;
  }
  return v;
}

class Workload {
  constructor(name) {
    const opts = parseArgs(name);
    this.name = name;
    this.scale = opts.scale;
    this.client = new MongoClient(opts.uri);
    this.db = this.client.db(opts.db);
    this.marked = null;
    this.tally = process.env.MONGOTAPE_WORKLOAD_TALLY === '1' ? { ok: 0, failed: 0, app_retried: 0 } : null;
    this.appRetries = Number(process.env.MONGOTAPE_WORKLOAD_APP_RETRY || 0);
    if (!Number.isInteger(this.appRetries) || this.appRetries < 0) {
      throw new Error('MONGOTAPE_WORKLOAD_APP_RETRY must be a whole number >= 0, not ' +
        JSON.stringify(process.env.MONGOTAPE_WORKLOAD_APP_RETRY));
    }
  }
  // await op(), counted under MONGOTAPE_WORKLOAD_TALLY=1 (a failure gives null, after up to
  // MONGOTAPE_WORKLOAD_APP_RETRY runs again: pymongo/common.py); else just await op().
  async attempt(op) {
    if (this.tally === null) return op();
    for (let run = 0; run <= this.appRetries; run++) {
      if (run > 0) this.tally.app_retried++;
      try {
        const r = await op();
        this.tally.ok++;
        return r;
      } catch (err) {
        // counted below once every run failed
      }
    }
    this.tally.failed++;
    return null;
  }
  scaled(base, minimum) {
    return scaled(base, this.scale, minimum);
  }
  now() {
    return performance.now();
  }
  // Sends the step marker on the workload's connection (outside any step's clock).
  async mark(step) {
    await this.client.db('admin').command({ ping: 1, comment: MARKER_PREFIX + step });
    this.marked = step;
  }
  // Marks the beginning of `step`, then starts its clock: returns now().
  async start(step) {
    await this.mark(step);
    return this.now();
  }
  since(started) {
    return (performance.now() - started) / 1000;
  }
  emit(step, ops, seconds, result) {
    if (step !== this.marked) throw new Error(`step ${step} was not started with start() (last marker ${this.marked})`);
    const line = JSON.stringify({
      step, ops: Math.trunc(ops), seconds: Math.round(seconds * 1e6) / 1e6, result: plain(result),
    });
    // Escape non-ASCII like Python's json.dumps and PHP's json_encode do.
    process.stdout.write(line.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')) + '\n');
  }
  async dropDatabase() {
    const t = await this.start('drop_database');
    await this.db.dropDatabase();
    this.emit('drop_database', 1, this.since(t), null);
  }
  // Acknowledged `count` command (also the barrier after w:0 writes).
  async count(collection, query) {
    const r = await this.db.command({ count: collection, query: query || {} });
    return Number(r.n);
  }
  // After the last step: the end marker, then close (endSessions).
  async end() {
    await this.mark('end');
    await this.client.close();
    if (this.tally !== null) process.stdout.write(JSON.stringify({ tally: this.tally }) + '\n');
  }
}

// Runs an async main; any error goes to stderr (with its code and labels: js/errors.js) and exits 1
// (stdout carries step lines only).
function runMain(main) {
  main().catch((err) => {
    process.stderr.write((err && err.stack ? err.stack : String(err)) + '\n' + errorLine(err) + '\n');
    process.exit(1);
  });
}

module.exports = { W0, W1, J1, WL_DIR, Lcg, Workload, scaled, runMain };
