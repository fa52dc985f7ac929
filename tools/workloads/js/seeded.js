// What the JavaScript clients (mongosh and the Node.js driver) share: the scaling rule and the seeded
// generator, the same as pymongo's and PHP's (tools/workloads/README.md). A CommonJS module; mongosh's
// common.js and node/common.js require it by path.

// round(base * scale) with halves rounded up, at least `minimum`.
function scaled(base, scale, minimum) {
  return Math.max(minimum === undefined ? 1 : minimum, Math.floor(base * scale + 0.5));
}

// Park-Miller "minimal standard" generator (48271, 2^31-1); products stay below 2^53.
class Lcg {
  constructor(seed) {
    this.state = seed % 2147483647 || 1;
  }
  next() {
    this.state = (this.state * 48271) % 2147483647;
    return this.state;
  }
  below(n) {
    return this.next() % n;
  }
  letters(count) {
    let s = '';
    for (let i = 0; i < count; i++) s += String.fromCharCode(97 + this.below(26));
    return s;
  }
}

module.exports = { scaled, Lcg };
