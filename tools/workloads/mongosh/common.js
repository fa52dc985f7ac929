// Shared helpers for the mongosh workloads (see tools/workloads/README.md).
// Loaded before WORKLOAD.js in the same mongosh context:
//   MONGOTAPE_WORKLOAD_PARAMS='{"db":"bench","scale":1}' mongosh URI --quiet --norc common.js WORKLOAD.js
// Keep it behaviourally identical to pymongo/common.py and php/common.php.

const W0 = { w: 0 };
const W1 = { w: 1 };
const J1 = { w: 1, j: true };
// A step marker's comment; mongotape recognises the ping (src/wire/marker.rs).
const MARKER_PREFIX = 'mongotape:step:';

const WL_DIR = __dirname;

function wlParams() {
  const raw = process.env.MONGOTAPE_WORKLOAD_PARAMS;
  if (!raw) throw new Error('MONGOTAPE_WORKLOAD_PARAMS is not set (run through tools/workloads/run)');
  const p = JSON.parse(raw);
  const scale = Number(p.scale === undefined ? 1 : p.scale);
  if (!(scale > 0)) throw new Error('scale must be > 0');
  return { db: p.db || 'bench', scale };
}

// The scaling rule and the seeded generator, shared with the Node.js driver's workloads.
const { scaled, Lcg } = require(require('path').join(__dirname, '..', 'js', 'seeded.js'));
const { errorLine } = require(require('path').join(__dirname, '..', 'js', 'errors.js'));

// Runs a workload's main; an error is thrown on to mongosh (which prints it and exits 1) after a
// line with its code and labels on stderr (js/errors.js).
function runMain(main) {
  try {
    main();
  } catch (err) {
    process.stderr.write(errorLine(err) + '\n');
    throw err;
  }
}

// Strip BSON wrapper types so results serialise like pymongo/PHP values.
function plain(v) {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object') {
    switch (v._bsontype) {
      case 'Long': case 'Int32': case 'Double': return Number(v.valueOf ? v.valueOf() : v.toString());
      case undefined: break;
      default: throw new Error('non-deterministic BSON type in result: ' + v._bsontype);
    }
    if (v instanceof Date) throw new Error('date in result');
    const out = {};
    for (const k of Object.keys(v)) out[k] = plain(v[k]);
    return out;
  }
  return v;
}

class Workload {
  constructor(name) {
    const p = wlParams();
    this.name = name;
    this.scale = p.scale;
    this.db = db.getSiblingDB(p.db);
    this.marked = null;
    this.tally = process.env.MONGOTAPE_WORKLOAD_TALLY === '1' ? { ok: 0, failed: 0, app_retried: 0 } : null;
    this.appRetries = Number(process.env.MONGOTAPE_WORKLOAD_APP_RETRY || 0);
    if (!Number.isInteger(this.appRetries) || this.appRetries < 0) {
      throw new Error('MONGOTAPE_WORKLOAD_APP_RETRY must be a whole number >= 0, not ' +
        JSON.stringify(process.env.MONGOTAPE_WORKLOAD_APP_RETRY));
    }
  }
  // op(), counted under MONGOTAPE_WORKLOAD_TALLY=1 (a failure gives null, after up to
  // MONGOTAPE_WORKLOAD_APP_RETRY runs again: pymongo/common.py); else just op().
  attempt(op) {
    if (this.tally === null) return op();
    for (let run = 0; run <= this.appRetries; run++) {
      if (run > 0) this.tally.app_retried++;
      try {
        const r = op();
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
  mark(step) {
    const r = this.db.getSiblingDB('admin').runCommand({ ping: 1, comment: MARKER_PREFIX + step });
    if (!r.ok) throw new Error('step marker failed: ' + JSON.stringify(r));
    this.marked = step;
  }
  // Marks the beginning of `step`, then starts its clock: returns now().
  start(step) {
    this.mark(step);
    return this.now();
  }
  // After the last step.
  end() {
    this.mark('end');
    if (this.tally !== null) print(JSON.stringify({ tally: this.tally }));
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
    print(line.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')));
  }
  dropDatabase() {
    const t = this.start('drop_database');
    this.db.dropDatabase();
    this.emit('drop_database', 1, this.since(t), null);
  }
  // Acknowledged `count` command (also the barrier after w:0 writes).
  count(collection, query) {
    const r = this.db.runCommand({ count: collection, query: query || {} });
    if (!r.ok) throw new Error('count failed: ' + JSON.stringify(r));
    return Number(r.n);
  }
}
