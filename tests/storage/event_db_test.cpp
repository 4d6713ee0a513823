// The event store over RocksDB: gap-free sequences, atomic projections,
// rebuild on open, validation that leaves state unchanged, and the data
// directory lock.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <rocksdb/db.h>

#include "storage/event_db.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;

namespace {

// A projector that counts events per stream: state key "<tenant>/count/<stream>".
status count_projector(const event_record& ev, std::vector<state_write>& out) {
  if (ev.type == "test.refused")
    return status::error(errc::out_of_range, "refused by projection");
  out.push_back({ev.tenant + "/count/" + ev.stream, std::to_string(ev.seq)});
  return status::ok();
}

event_db_options test_options() {
  event_db_options opts;
  opts.projectors.push_back(&count_projector);
  opts.max_event_bytes = 1024;
  opts.max_events_per_append = 8;
  return opts;
}

std::unique_ptr<event_db> open_db(const test::temp_dir& dir) {
  auto db = event_db::open(dir.str() + "/store", test_options());
  REQUIRE(db);
  return std::move(*db);
}

append_request request(std::string tenant, std::string stream, int count,
                       std::string type = "test.event") {
  append_request req;
  req.tenant = std::move(tenant);
  req.stream = std::move(stream);
  for (int idx = 0; idx < count; ++idx)
    req.events.push_back({type, R"({"n":)" + std::to_string(idx) + "}"});
  return req;
}

// Opens the store's RocksDB directly (the event_db must be closed), to tamper
// with it the way a crash or a bug could; `fn(db, column families)`.
template <class F>
void with_raw_store(const test::temp_dir& dir, F fn) {
  rocksdb::DBOptions opts;
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors{
    {rocksdb::kDefaultColumnFamilyName, {}}, {"events", {}}, {"state", {}}, {"vault", {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open(opts, dir.str() + "/store", descriptors, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db{raw};
  fn(*db, handles);
  for (auto* handle : handles)
    db->DestroyColumnFamilyHandle(handle).PermitUncheckedError();
}

uint64_t event_count(event_db& db) {
  auto report = db.verify();
  REQUIRE(report);
  return report->events;
}

} // namespace

TEST_CASE("appends get gap-free sequences per stream") {
  test::temp_dir dir;
  auto db = open_db(dir);
  auto first = db->append(request("t_a", "audit", 3), 1);
  REQUIRE(first);
  CHECK(first->first_seq == 1);
  CHECK(first->last_seq == 3);
  auto second = db->append(request("t_a", "audit", 2), 2);
  REQUIRE(second);
  CHECK(second->first_seq == 4);
  CHECK(second->last_seq == 5);
  auto other = db->append(request("t_a", "runs", 1), 3);
  REQUIRE(other);
  CHECK(other->first_seq == 1);
  auto events = db->read_stream({"t_a", "audit", 1, 100});
  REQUIRE(events);
  REQUIRE(events->size() == 5);
  for (uint64_t idx = 0; idx < 5; ++idx)
    CHECK((*events)[idx].seq == idx + 1);
  CHECK((*events)[3].time_us == 2);
  CHECK((*events)[0].data == R"({"n":0})");
}

TEST_CASE("deferred appends are written unsynced until the next synced write or sync_wal") {
  test::temp_dir dir;
  {
    auto db = open_db(dir); // WAL sync on (the default)
    auto deferred = request("t_a", "run.r_1", 1);
    deferred.sync_deferred = true;
    REQUIRE(db->append(deferred, 1));
    CHECK(db->wal_unsynced());
    auto events = db->read_stream({"t_a", "run.r_1", 1, 100});
    REQUIRE(events);
    CHECK(events->size() == 1); // written, readable at once
    auto synced = db->sync_wal();
    REQUIRE(synced);
    CHECK(*synced);
    CHECK_FALSE(db->wal_unsynced());
    auto again = db->sync_wal();
    REQUIRE(again);
    CHECK_FALSE(*again); // nothing left to sync

    // A synced append syncs what a deferred one left.
    REQUIRE(db->append(deferred, 2));
    CHECK(db->wal_unsynced());
    REQUIRE(db->append(request("t_a", "audit", 1), 3));
    CHECK_FALSE(db->wal_unsynced());

    // A group with one request that is not deferred is synced whole.
    auto intent = request("t_a", "audit", 1);
    std::vector<const append_request*> group{&deferred, &intent};
    auto results = db->append_group(group, 4);
    REQUIRE(results.size() == 2);
    CHECK(results[0]);
    CHECK(results[1]);
    CHECK_FALSE(db->wal_unsynced());

    // A refused request never makes the group unsynced, nor does nothing.
    auto refused = request("t_a", "run.r_1", 1, "test.refused");
    refused.sync_deferred = true;
    CHECK_FALSE(db->append(refused, 5));
    CHECK_FALSE(db->wal_unsynced());
    REQUIRE(db->append(deferred, 6));
    CHECK(db->wal_unsynced());
  } // closing syncs what is left
  auto db = open_db(dir);
  auto events = db->read_stream({"t_a", "run.r_1", 1, 100});
  REQUIRE(events);
  CHECK(events->size() == 4);
  auto audit = db->read_stream({"t_a", "audit", 1, 100});
  REQUIRE(audit);
  CHECK(audit->size() == 2);
}

TEST_CASE("without WAL sync, deferred appends leave nothing to sync") {
  test::temp_dir dir;
  auto opts = test_options();
  opts.sync = false;
  auto db = event_db::open(dir.str() + "/store", opts);
  REQUIRE(db);
  auto deferred = request("t_a", "run.r_1", 1);
  deferred.sync_deferred = true;
  REQUIRE((*db)->append(deferred, 1));
  CHECK_FALSE((*db)->wal_unsynced());
  auto synced = (*db)->sync_wal();
  REQUIRE(synced);
  CHECK_FALSE(*synced);
}

TEST_CASE("a group shares one batch and keeps order within a stream") {
  test::temp_dir dir;
  auto db = open_db(dir);
  auto a = request("t_a", "audit", 2);
  auto b = request("t_a", "audit", 1);
  auto c = request("t_b", "audit", 1);
  auto results = db->append_group({&a, &b, &c}, 5);
  REQUIRE(results.size() == 3);
  REQUIRE(results[0]);
  REQUIRE(results[1]);
  REQUIRE(results[2]);
  CHECK(results[0]->first_seq == 1);
  CHECK(results[1]->first_seq == 3);
  CHECK(results[2]->first_seq == 1);
  auto count = db->get_state("t_a/count/audit");
  REQUIRE(count);
  CHECK(**count == "3");
}

TEST_CASE("a refused request in a group leaves the others and the state as they were") {
  test::temp_dir dir;
  auto db = open_db(dir);
  auto good = request("t_a", "audit", 1);
  auto refused = request("t_a", "audit", 2, "test.refused");
  auto bad_json = request("t_a", "audit", 1);
  bad_json.events[0].data = "{not json";
  auto results = db->append_group({&good, &refused, &bad_json}, 1);
  CHECK(results[0]);
  REQUIRE_FALSE(results[1]);
  CHECK(results[1].error().code() == errc::out_of_range);
  REQUIRE_FALSE(results[2]);
  CHECK(results[2].error().code() == errc::bad_json);
  CHECK(event_count(*db) == 1);
  auto next = db->append(request("t_a", "audit", 1), 2);
  REQUIRE(next);
  CHECK(next->first_seq == 2);
}

TEST_CASE("malformed appends are refused with specific errors and change nothing") {
  test::temp_dir dir;
  auto db = open_db(dir);
  REQUIRE(db->append(request("t_a", "audit", 1), 1));

  auto check_refused = [&](append_request req, errc code) {
    auto res = db->append(req, 9);
    REQUIRE_FALSE(res);
    CHECK(res.error().code() == code);
  };
  check_refused(request("T/A", "audit", 1), errc::out_of_range);
  check_refused(request("t_a", "a/b", 1), errc::out_of_range);
  check_refused(request("t_a", "audit", 0), errc::missing_field);
  check_refused(request("t_a", "audit", 9), errc::out_of_range); // over 8 per append
  check_refused(request("t_a", "audit", 1, "Bad Type"), errc::out_of_range);
  auto big = request("t_a", "audit", 1);
  big.events[0].data = R"({"x":")" + std::string(2000, 'a') + R"("})";
  check_refused(big, errc::out_of_range);
  auto array = request("t_a", "audit", 1);
  array.events[0].data = "[1,2]";
  check_refused(array, errc::bad_json);
  auto conflict = request("t_a", "audit", 1);
  conflict.expected_next = 7;
  check_refused(conflict, errc::sequence_conflict);

  CHECK(event_count(*db) == 1);
  auto count = db->get_state("t_a/count/audit");
  REQUIRE(count);
  CHECK(**count == "1");
}

TEST_CASE("an expected next sequence guards optimistic writers") {
  test::temp_dir dir;
  auto db = open_db(dir);
  auto req = request("t_a", "audit", 1);
  req.expected_next = 1;
  CHECK(db->append(req, 1));
  CHECK_FALSE(db->append(req, 2));
  req.expected_next = 2;
  CHECK(db->append(req, 3));
}

TEST_CASE("projections are rebuilt from events when the database opens") {
  test::temp_dir dir;
  {
    auto db = open_db(dir);
    REQUIRE(db->append(request("t_a", "audit", 4), 1));
    REQUIRE(db->append(request("t_b", "runs", 2), 1));
  }
  // Tamper with the projection behind the store's back: the next open must
  // replace it with what the events say.
  with_raw_store(dir, [](rocksdb::DB& db, auto& cf) {
    REQUIRE(db.Put({}, cf[2], "t_a/count/audit", "999").ok());
    REQUIRE(db.Put({}, cf[2], "t_z/stray", "x").ok());
  });
  auto db = open_db(dir);
  auto count = db->get_state("t_a/count/audit");
  REQUIRE(count);
  CHECK(**count == "4");
  auto stray = db->get_state("t_z/stray");
  REQUIRE(stray);
  CHECK_FALSE(stray->has_value());
  auto next = db->append(request("t_a", "audit", 1), 2);
  REQUIRE(next);
  CHECK(next->first_seq == 5);
  auto report = db->verify();
  REQUIRE(report);
  CHECK(report->events == 7);
  CHECK(report->streams == 2);
  CHECK(report->state_entries == 2);
}

TEST_CASE("a corrupt stored event refuses to open") {
  test::temp_dir dir;
  {
    auto db = open_db(dir);
    REQUIRE(db->append(request("t_a", "audit", 2), 1));
  }
  with_raw_store(dir, [](rocksdb::DB& db, auto& cf) {
    // A torn value: the header of an event without its data.
    std::string key = std::string{"t_a/audit/"} + std::string(7, '\0') + '\2';
    REQUIRE(db.Put({}, cf[1], key, std::string("\1\0\0\0\0\0\0\0\1\4test", 14)).ok());
  });
  auto db = event_db::open(dir.str() + "/store", test_options());
  REQUIRE_FALSE(db);
  CHECK(db.error().code() == errc::corrupt_data);
}

TEST_CASE("a sequence gap in stored events refuses to open") {
  test::temp_dir dir;
  {
    auto db = open_db(dir);
    REQUIRE(db->append(request("t_a", "audit", 3), 1));
  }
  with_raw_store(dir, [](rocksdb::DB& db, auto& cf) {
    std::string key = std::string{"t_a/audit/"} + std::string(7, '\0') + '\2';
    REQUIRE(db.Delete({}, cf[1], key).ok());
  });
  auto db = event_db::open(dir.str() + "/store", test_options());
  REQUIRE_FALSE(db);
  CHECK(db.error().code() == errc::corrupt_data);
}

TEST_CASE("a data directory held by another instance is refused as locked") {
  test::temp_dir dir;
  auto holder = open_db(dir);
  auto second = event_db::open(dir.str() + "/store", test_options());
  REQUIRE_FALSE(second);
  CHECK(second.error().code() == errc::data_dir_locked);
  // The holder is unaffected.
  CHECK(holder->append(request("t_a", "audit", 1), 1));
}

TEST_CASE("reads by tenant prefix never reach another tenant") {
  test::temp_dir dir;
  auto db = open_db(dir);
  REQUIRE(db->append(request("t_a", "audit", 2), 1));
  REQUIRE(db->append(request("t_ab", "audit", 3), 1));
  REQUIRE(db->append(request("t_a", "runs", 1), 1));
  auto events = db->read_tenant("t_a", 100);
  REQUIRE(events);
  CHECK(events->size() == 3);
  for (const auto& ev : *events)
    CHECK(ev.tenant == "t_a");
  auto limited = db->read_tenant("t_ab", 2);
  REQUIRE(limited);
  CHECK(limited->size() == 2);
  CHECK_FALSE(db->read_tenant("t/a", 10));
}

TEST_CASE("a tenant's events page by the last event read, from the streams a prefix names") {
  test::temp_dir dir;
  auto db = open_db(dir);
  REQUIRE(db->append(request("t_a", "audit", 3), 1));
  REQUIRE(db->append(request("t_a", "chat.c1", 4), 1));
  REQUIRE(db->append(request("t_a", "chat.c2", 3), 1));
  REQUIRE(db->append(request("t_a", "run.r1", 2), 1));
  REQUIRE(db->append(request("t_ab", "chat.c1", 2), 1));

  // Pages of 2 through every stream come out as one read does.
  auto all = db->read_tenant("t_a", 100);
  REQUIRE(all);
  REQUIRE(all->size() == 12);
  tenant_query query{"t_a", "", "", 0, 2};
  std::vector<event_record> paged;
  while (true) {
    auto page = db->read_tenant(query);
    REQUIRE(page);
    paged.insert(paged.end(), page->begin(), page->end());
    if (page->size() < query.limit)
      break;
    query.after_stream = page->back().stream;
    query.after_seq = page->back().seq;
  }
  REQUIRE(paged.size() == all->size());
  for (std::size_t idx = 0; idx < paged.size(); ++idx) {
    CHECK(paged[idx].stream == (*all)[idx].stream);
    CHECK(paged[idx].seq == (*all)[idx].seq);
  }

  // A prefix keeps to its streams, and to this tenant's.
  auto chats = db->read_tenant(tenant_query{"t_a", "chat.", "", 0, 100});
  REQUIRE(chats);
  REQUIRE(chats->size() == 7);
  for (const auto& ev : *chats) {
    CHECK(ev.tenant == "t_a");
    CHECK(ev.stream.rfind("chat.", 0) == 0);
  }
  auto after = db->read_tenant(tenant_query{"t_a", "chat.", "chat.c1", 4, 100});
  REQUIRE(after);
  REQUIRE(after->size() == 3);
  CHECK(after->front().stream == "chat.c2");
  CHECK(after->front().seq == 1);

  for (auto bad : {tenant_query{"t/a", "", "", 0, 10}, tenant_query{"t_a", "Chat/", "", 0, 10},
                   tenant_query{"t_a", "", "chat/c1", 1, 10}}) {
    auto refused = db->read_tenant(bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code() == errc::out_of_range);
  }
}

TEST_CASE("sealed values are stored per tenant and record") {
  test::temp_dir dir;
  auto db = open_db(dir);
  REQUIRE(db->put_sealed("t_a", "oauth.srv1", "sealed-bytes"));
  auto found = db->get_sealed("t_a", "oauth.srv1");
  REQUIRE(found);
  REQUIRE(found->has_value());
  CHECK(**found == "sealed-bytes");
  auto other = db->get_sealed("t_b", "oauth.srv1");
  REQUIRE(other);
  CHECK_FALSE(other->has_value());
  CHECK_FALSE(db->put_sealed("t_a", "../x", "v"));
}

TEST_CASE("size_bytes counts what was appended, in memtables and, after a reopen, in SST files") {
  test::temp_dir dir;
  auto opts = test_options();
  opts.max_event_bytes = 128 * 1024;
  constexpr std::size_t appended = 2 * 1024 * 1024;
  // Text a compressor cannot shrink much (the SST files are compressed).
  std::string pad(64 * 1024, ' ');
  uint32_t state = 12345;
  for (auto& c : pad) {
    state = state * 1103515245u + 12345u;
    c = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(state >> 16) % 64];
  }
  uint64_t before = 0;
  {
    auto db = event_db::open(dir.str() + "/store", opts);
    REQUIRE(db);
    before = (*db)->size_bytes();
    for (std::size_t idx = 0; idx < appended / pad.size(); ++idx) {
      append_request req;
      req.tenant = "t1";
      req.stream = "s" + std::to_string(idx);
      req.events.push_back({"test.event", R"({"pad":")" + pad + "\"}"});
      REQUIRE((*db)->append(req, 1));
    }
    CHECK((*db)->size_bytes() >= before + appended / 2);
  }
  auto db = event_db::open(dir.str() + "/store", opts);
  REQUIRE(db);
  CHECK((*db)->size_bytes() >= appended / 2);
}
