// Shared helpers for the legacy C++ driver's workloads (libmongoclient 1.1.3, the
// `mongo::DBClientConnection` API of seed 003); see tools/workloads/README.md.
//
// Every workload prints one JSON line per step on stdout and nothing else:
//     {"step": NAME, "ops": INT, "seconds": FLOAT, "result": JSON}
// and behaves like pymongo/common.py (scaling, pseudo-random numbers, step markers, output).
//
// What a current server leaves of the legacy API (README, "What the legacy C++ driver sends"):
// - acknowledged insert/update/remove are write commands over OP_QUERY on `DB.$cmd` (the driver
//   picks them when the server's maxWireVersion is >= 2): used as they are;
// - an unacknowledged write is a legacy OP_INSERT/OP_UPDATE/OP_DELETE, which the server answers by
//   closing the connection: w:0 writes are `insert`/`update` commands with `writeConcern: {w: 0}`
//   through runCommand, answered by the server like the Rust driver's;
// - `query()` sends a legacy OP_QUERY on the collection, which the server refuses, and the test
//   server loses the batches of `find`/`getMore` commands sent over OP_QUERY: finds are
//   `aggregate` commands through runCommand, answered in one batch (no getMore).
#ifndef MONGOTAPE_CXX_COMMON_HPP
#define MONGOTAPE_CXX_COMMON_HPP

#include <mongo/client/dbclient.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace wl {

using mongo::BSONArrayBuilder;
using mongo::BSONElement;
using mongo::BSONObj;
using mongo::BSONObjBuilder;
using mongo::BSONObjIterator;

// A step marker's comment; mongotape recognises the ping (src/wire/marker.rs).
const char* const MARKER_PREFIX = "mongotape:step:";

struct Failure : std::runtime_error {
    explicit Failure(const std::string& what) : std::runtime_error(what) {}
};

// round(base * scale) with halves rounded up, at least `minimum`.
inline long scaled(double base, double scale, long minimum = 1) {
    long n = static_cast<long>(std::floor(base * scale + 0.5));
    return n < minimum ? minimum : n;
}

// Park-Miller "minimal standard" generator (multiplier 48271, modulus 2^31-1).
class Lcg {
  public:
    explicit Lcg(long long seed) : state_(seed % MOD) {
        if (state_ == 0) state_ = 1;
    }
    long long next() {
        state_ = (state_ * 48271) % MOD;
        return state_;
    }
    long long below(long long n) { return next() % n; }
    std::string letters(int count) {
        std::string s;
        for (int i = 0; i < count; i++) s.push_back(static_cast<char>('a' + below(26)));
        return s;
    }

  private:
    static const long long MOD = 2147483647LL;
    long long state_;
};

// JSON as Python's json.dumps(separators=(",", ":")) writes it: non-ASCII as \uXXXX.
void json_string(std::ostream& out, const std::string& s);
void json_value(std::ostream& out, const BSONElement& e);
void json_object(std::ostream& out, const BSONObj& doc);
std::string json_docs(const std::vector<BSONObj>& docs);

inline void json_string(std::ostream& out, const std::string& s) {
    out << '"';
    for (size_t i = 0; i < s.size(); i++) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        unsigned long cp = c;
        int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
        if (extra) {
            cp = c & (0x3F >> extra);
            for (int k = 0; k < extra && i + 1 < s.size(); k++) cp = (cp << 6) | (s[++i] & 0x3F);
        }
        char buf[32];
        if (cp == '"' || cp == '\\') {
            out << '\\' << static_cast<char>(cp);
        } else if (cp == '\n') {
            out << "\\n";
        } else if (cp == '\t') {
            out << "\\t";
        } else if (cp == '\r') {
            out << "\\r";
        } else if (cp < 0x20 || (cp >= 0x7F && cp < 0x10000)) {
            std::snprintf(buf, sizeof buf, "\\u%04lx", cp);
            out << buf;
        } else if (cp >= 0x10000) {
            cp -= 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04lx\\u%04lx", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            out << buf;
        } else {
            out << static_cast<char>(cp);
        }
    }
    out << '"';
}

inline void json_value(std::ostream& out, const BSONElement& e) {
    switch (e.type()) {
        case mongo::NumberInt:
            out << e.Int();
            break;
        case mongo::NumberLong:
            out << e.Long();
            break;
        case mongo::NumberDouble: {
            double d = e.Double();
            char buf[32];
            if (d == std::floor(d) && std::fabs(d) < 1e16) {
                std::snprintf(buf, sizeof buf, "%.1f", d);
            } else {
                std::snprintf(buf, sizeof buf, "%.17g", d);
            }
            out << buf;
            break;
        }
        case mongo::String:
            json_string(out, e.String());
            break;
        case mongo::Bool:
            out << (e.Bool() ? "true" : "false");
            break;
        case mongo::jstNULL:
            out << "null";
            break;
        case mongo::Object:
            json_object(out, e.Obj());
            break;
        case mongo::Array: {
            out << '[';
            bool first = true;
            for (BSONObjIterator it(e.Obj()); it.more();) {
                if (!first) out << ',';
                first = false;
                json_value(out, it.next());
            }
            out << ']';
            break;
        }
        default:
            throw Failure("a result holds a BSON value of type " + std::to_string(static_cast<int>(e.type())) +
                          " that the output contract does not allow: " + e.toString());
    }
}

inline void json_object(std::ostream& out, const BSONObj& doc) {
    out << '{';
    bool first = true;
    for (BSONObjIterator it(doc); it.more();) {
        BSONElement e = it.next();
        if (!first) out << ',';
        first = false;
        json_string(out, e.fieldName());
        out << ':';
        json_value(out, e);
    }
    out << '}';
}

inline std::string json(const BSONObj& doc) {
    std::ostringstream out;
    json_object(out, doc);
    return out.str();
}

inline std::string json_docs(const std::vector<BSONObj>& docs) {
    std::ostringstream out;
    out << '[';
    for (size_t i = 0; i < docs.size(); i++) {
        if (i) out << ',';
        json_object(out, docs[i]);
    }
    out << ']';
    return out.str();
}

inline std::string json_str(const std::string& s) {
    std::ostringstream out;
    json_string(out, s);
    return out.str();
}

// tools/workloads/data/NAME, its trailing whitespace stripped (the directory is compiled in).
std::string data_file(const std::string& name);

// host:port of a single-host mongodb:// URI. The legacy driver knows none of the URI options the
// other clients take; the ones that change nothing on the wire are accepted, any other is refused.
std::string host_of(const std::string& uri, double* socket_timeout_ms = nullptr);

typedef std::chrono::steady_clock::time_point Started;

class Workload {
  public:
    Workload(const std::string& name, int argc, char** argv);
    ~Workload() {}

    long scaled(double base, long minimum = 1) const { return wl::scaled(base, scale_, minimum); }
    std::string ns(const std::string& coll) const { return db_ + "." + coll; }
    const std::string& db() const { return db_; }
    mongo::DBClientConnection& conn() { return conn_; }

    // A command on `db` (default: the workload's); throws unless `ok` and without write errors.
    BSONObj command(const BSONObj& cmd, const std::string& db = "");
    void mark(const std::string& step);
    Started start(const std::string& step);
    static double since(Started started);
    void emit(const std::string& step, long ops, double seconds, const std::string& result);
    void drop_database();
    // The end marker; under MONGOTAPE_WORKLOAD_TALLY=1, then one more line:
    // {"tally":{"ok":N,"failed":M,"app_retried":R}}.
    void close();

    // op(), counted under MONGOTAPE_WORKLOAD_TALLY=1: an exception (a write error, an error
    // reply, a lost connection) runs it again, up to MONGOTAPE_WORKLOAD_APP_RETRY times, then is
    // counted and gives false instead of ending the workload; without the tally, op() as it is.
    // The driver retries nothing itself (no sessions, no retryable writes).
    template <typename F>
    bool attempt(F op) {
        if (!tally_) {
            op();
            return true;
        }
        for (long run = 0; run <= app_retries_; run++) {
            if (run > 0) app_retried_++;
            try {
                op();
            } catch (const std::exception&) {
                continue;
            }
            ok_++;
            return true;
        }
        failed_++;
        return false;
    }
    bool tallying() const { return tally_; }

    // Acknowledged `count` command (also the barrier after w:0 writes).
    long count(const std::string& coll, const BSONObj& query = BSONObj());
    // DBClientConnection::insert, acknowledged: an `insert` command over OP_QUERY (with the
    // connection's default write concern, sent as `writeConcern: {}`, unless `wc` is given).
    void insert(const std::string& coll, const BSONObj& doc, const mongo::WriteConcern* wc = NULL);
    // Unacknowledged writes: the commands with writeConcern {w: 0}, through runCommand.
    void insert_w0(const std::string& coll, const BSONObj& doc);
    void update_w0(const std::string& coll, const BSONObj& q, const BSONObj& u, bool upsert = false);
    // Acknowledged update/delete through the legacy bulk API (write commands, counts in WriteResult).
    mongo::WriteResult update(const std::string& coll, const BSONObj& q, const BSONObj& u, bool multi,
                              bool upsert = false);
    mongo::WriteResult remove(const std::string& coll, const BSONObj& q, bool just_one);
    // A find as an `aggregate` command ($match, $sort, $limit, $project), all in its first batch.
    std::vector<BSONObj> find(const std::string& coll, const BSONObj& filter, const BSONObj& sort = BSONObj(),
                              const BSONObj& projection = BSONObj(), int limit = 0);
    // DBClientConnection::createIndex (a `createIndexes` command); returns the index name.
    std::string create_index(const std::string& coll, const BSONObj& keys);

  private:
    mongo::client::GlobalInstance instance_;
    mongo::DBClientConnection conn_;
    std::string name_;
    std::string db_ = "bench";
    double scale_ = 1.0;
    std::string marked_;
    bool tally_ = false;
    long ok_ = 0;
    long failed_ = 0;
    long app_retries_ = 0;
    long app_retried_ = 0;
};

// Runs `body`, turning every failure into a message on stderr and exit status 1.
template <typename F>
int run(F body) {
    try {
        body();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "cxx workload failed: " << e.what() << std::endl;
        return 1;
    }
}

}  // namespace wl

#endif
