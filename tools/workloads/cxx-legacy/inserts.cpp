// inserts: the replay benchmark's workload (tools/bench-replay): N = 20000 * scale acknowledged
// DBClientConnection::insert of a 150-byte document {_id, name, value, pad}; mirrors
// pymongo/inserts.py (without its MONGOTAPE_WORKLOAD_EXTRA_INDEXES option).
#include "common.hpp"

using namespace wl;

int main(int argc, char** argv) {
    return run([&] {
        Workload w("inserts", argc, argv);
        long n = w.scaled(20000);
        const std::string pad(94, 'x');
        w.drop_database();
        Started t = w.start("insert");
        for (long i = 0; i < n; i++) {
            int id = static_cast<int>(i);
            w.insert("items", BSON("_id" << id << "name" << ("item-" + std::to_string(id)) << "value"
                                         << (id * 7) % 13 << "pad" << pad));
        }
        double seconds = w.since(t);
        w.emit("insert", n, seconds, "{\"count\":" + std::to_string(w.count("items")) + "}");
        w.close();
    });
}
