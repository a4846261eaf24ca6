#include "peakcast/serve/service.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cascade/cascade_fixtures.h"
#include "peakcast/core/io.h"
#include "peakcast/core/log.h"
#include "peakcast/serve/metrics.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using nlohmann::json;
using testing::completion_json;
using testing::FaultyStore;
using testing::request_json;
using testing::TempDir;

constexpr int64_t kNow = 1'800'000'000;
constexpr uint64_t kGiB = 1ull << 30;

ServiceOptions fixed_clock() {
  ServiceOptions o;
  o.clock = [] { return kNow; };
  o.limits.max_script_bytes = 4096;
  return o;
}

struct Fixture {
  TempDir dir;
  FaultyStore* faulty = nullptr;
  std::unique_ptr<Service> service;

  explicit Fixture(SqliteOptions so = {},
                   std::shared_ptr<const cascade::Predictor> model = testing::history_model()) {
    auto store = open_sqlite_store(dir.file("h.db"), so);
    EXPECT_TRUE(store.ok()) << store.status().message();
    auto wrapped = std::make_unique<FaultyStore>(std::move(*store));
    faulty = wrapped.get();
    service = std::make_unique<Service>(std::move(model), std::move(wrapped), fixed_clock());
    EXPECT_TRUE(service->rebuild().is_ok());
  }
};

json body_of(const Reply& r) { return json::parse(r.body); }

TEST(Service, PredictsFallbackThenExactScriptAfterACompletion) {
  Fixture f;
  const std::string script = "#!/bin/bash\npython train.py --epochs 3\n";
  Reply r = f.service->predict(request_json("alice", script, kNow, 8 * kGiB).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json p = body_of(r);
  EXPECT_EQ(p["job_id"], "pending");
  EXPECT_EQ(p["predictions"]["mem"]["route"], "no_history");
  EXPECT_TRUE(p["predictions"]["vram"].is_null());

  r = f.service->complete(completion_json("7", "alice", script, kNow - 100, kNow - 10, 8 * kGiB, 2 * kGiB).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["stored"], true);

  r = f.service->predict(request_json("alice", script, kNow, 4 * kGiB).dump());
  p = body_of(r)["predictions"]["mem"];
  EXPECT_EQ(p["route"], "bypass");
  EXPECT_EQ(p["history_level"], "exact_script");
  EXPECT_DOUBLE_EQ(p["util"].get<double>(), 0.25);
  EXPECT_EQ(p["bytes"].get<uint64_t>(), kGiB);  // 0.25 x the new 4 GiB request

  // Same user, other script: the user level answers, not the exact one.
  r = f.service->predict(request_json("alice", "#!/bin/bash\necho other\n", kNow, 4 * kGiB).dump());
  p = body_of(r)["predictions"]["mem"];
  EXPECT_EQ(p["history_level"], "user");
  EXPECT_EQ(p["route"], "no_history");
}

TEST(Service, CompletionIsIdempotentByJobId) {
  Fixture f;
  const std::string body =
      completion_json("42", "bob", "#!/bin/sh\nx\n", kNow - 100, kNow - 50, kGiB, kGiB / 2).dump();
  EXPECT_EQ(body_of(f.service->complete(body))["stored"], true);
  Reply again = f.service->complete(body);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(body_of(again)["duplicate"], true);
  EXPECT_EQ(f.service->history_size(), 1u);
  EXPECT_EQ(*f.service->store().count(), 1u);
}

// A job's name and workload are free text: a secret in them reaches neither the database file
// nor a conflict (the same completion again is a duplicate, not a 409).
TEST(Service, AJobNameOrWorkloadIsStoredRedacted) {
  Fixture f;
  json body = completion_json("43", "bob", "#!/bin/sh\nx\n", kNow - 100, kNow - 50, kGiB, kGiB / 2);
  body["job_name"] = "deploy DB_PASSWORD=NameSecret77";
  body["workload"] = "curl https://bob:WorkloadSecret77@host/x";
  EXPECT_EQ(body_of(f.service->complete(body.dump()))["stored"], true);
  Reply again = f.service->complete(body.dump());
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(body_of(again)["duplicate"], true);
  json other = body;
  other["job_name"] = "deploy something else";
  EXPECT_EQ(f.service->complete(other.dump()).status, 409);  // a real difference still is one

  std::optional<Job> stored = *f.service->store().find("43");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->job_name, "deploy DB_PASSWORD=<SECRET>");
  EXPECT_EQ(stored->workload, "curl https://<USER>:<SECRET>@host/x");
  // Nowhere in the file, not even in pages SQLite has not reused yet.
  f.service.reset();
  for (const char* file : {"h.db", "h.db-wal"}) {
    auto bytes = read_file(f.dir.file(file));
    if (!bytes.ok()) continue;  // no write-ahead log left after a clean close
    EXPECT_EQ(bytes->find("NameSecret77"), std::string::npos) << file;
    EXPECT_EQ(bytes->find("WorkloadSecret77"), std::string::npos) << file;
  }
}

// A body that is not JSON is refused by where it breaks, never by quoting it: the bytes the parser
// last read can be a script's secret, and the Slurm hook logs a refusal's reason.
TEST(Service, MalformedJsonIsRefusedWithoutQuotingTheBody) {
  Fixture f;
  const std::string secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY";
  const std::string body = R"({"job_id": "1", "user": "a", "submit_time": 1704086813, "script": "export AWS_SECRET_ACCESS_KEY=)" +
                           secret + R"("x})";
  Reply r = f.service->predict(body);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body.find(secret.substr(0, 8)), std::string::npos) << r.body;
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("not valid JSON at byte"), std::string::npos) << r.body;
  r = f.service->predict(R"({"job_id": "1", "user": "a", "submit_time": 1e999})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("number overflow: too large for a double"), std::string::npos) << r.body;
}

// Found in review: every malformed body said only "syntax error at byte N"; the CLI's readers
// said why. The daemon now gives the parser's reason too, and still no byte of the body: not
// the token that broke (even one written to look like the rest of the parser's message), not a
// number too large for a double (a key written in decimal), not which control character.
TEST(Service, MalformedJsonSaysWhyAndWhereButQuotesNothing) {
  Fixture f;
  const std::string secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY";
  const std::string head = R"({"job_id": "1", "user": "a", "submit_time": 1704086813, )";
  struct Case {
    std::string body;
    std::string reason;
  };
  const Case cases[] = {
      {head + "\"script\": \"x'; expected " + secret + "\xff\"}", "invalid string: ill-formed UTF-8 byte"},
      {head + "\"script\": \"x'; expected " + secret + "\x01\"}",
       "invalid string: a control character must be escaped"},
      {head + "\"script\": \"x'; expected " + secret + "\\q\"}",
       "invalid string: forbidden character after backslash"},
      {head + "\"req_mem_bytes\": " + std::string(400, '9') + "}", "number overflow: too large for a double"},
      {head + "\"req_mem_bytes\": 1e" + secret + "}", "invalid number; expected '+', '-', or digit after exponent"},
      {head + "\"script\": \"" + secret + "\"", "unexpected end of input; expected '}'"}};
  for (const Case& c : cases) {
    Reply r = f.service->predict(c.body);
    EXPECT_EQ(r.status, 400) << r.body;
    const std::string message = body_of(r)["error"]["message"].get<std::string>();
    EXPECT_NE(message.find(c.reason), std::string::npos) << message;
    EXPECT_TRUE(message.starts_with("body: not valid JSON")) << message;
    EXPECT_EQ(r.body.find(secret.substr(0, 6)), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("999"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("U+00"), std::string::npos) << r.body;
  }
  // Where: the position (from 1) of the byte the parser stopped at, the ill-formed one.
  const std::string message = body_of(f.service->predict(cases[0].body))["error"]["message"];
  const size_t bad = cases[0].body.find('\xff');
  EXPECT_NE(message.find("at byte " + std::to_string(bad + 1) + ":"), std::string::npos) << message << " " << bad;
}

// A field given twice (nlohmann keeps the last; another reader may keep the first) is refused
// naming it, nested objects included; the same name in two different objects is fine.
TEST(Service, AFieldGivenTwiceIsRefusedNamingIt) {
  Fixture f;
  const std::string mem = std::to_string(kGiB);
  const std::string tail = R"(, "submit_time": 1704086813, "req_mem_bytes": )" + mem + "}";
  Reply r = f.service->predict(R"({"job_id": "1", "user": "alice", "user": "root")" + tail);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["error"]["field"], "user");
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("user: given twice"), std::string::npos) << r.body;
  json done = completion_json("60", "bob", "#!/bin/sh\nx\n", kNow - 100, kNow - 50, kGiB, kGiB / 2);
  std::string twice = done.dump();
  twice.insert(twice.size() - 1, R"(, "peak_mem_bytes": 1)");
  r = f.service->complete(twice);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["error"]["field"], "peak_mem_bytes");
  EXPECT_EQ(*f.service->store().count(), 0u);
  // A name shared by a nested object and its parent is not a duplicate; one repeated inside the
  // nested object is.
  r = f.service->predict(R"({"job_id": "1", "user": "alice", "x_meta": {"user": 1})" + tail);
  EXPECT_EQ(r.status, 200) << r.body;
  r = f.service->predict(R"({"job_id": "1", "user": "alice", "x_meta": {"k": 1, "k": 2})" + tail);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["error"]["field"], "k");
}

// A completion that ends in the future (beyond a day of skew) or starts before its submission is
// refused naming the field; it would otherwise sit atop /v1/history, out of the history.
TEST(Service, ACompletionFromTheFutureOrStartedBeforeItsSubmissionIs422) {
  Fixture f;
  json future = completion_json("50", "bob", "#!/bin/sh\nx\n", kNow - 100, 32'503'680'000, kGiB, kGiB / 2);
  Reply r = f.service->complete(future.dump());
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["error"]["field"], "end_time");
  json early = completion_json("51", "bob", "#!/bin/sh\nx\n", kNow - 100, kNow - 50, kGiB, kGiB / 2);
  early["start_time"] = kNow - 200;
  r = f.service->complete(early.dump());
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["error"]["field"], "start_time");
  EXPECT_EQ(*f.service->store().count(), 0u);
  // within the day of skew: stored
  json skewed = completion_json("52", "bob", "#!/bin/sh\nx\n", kNow - 100, kNow + 3600, kGiB, kGiB / 2);
  EXPECT_EQ(f.service->complete(skewed.dump()).status, 200);
}

// A misspelt state ("OUT_OF_MEMROY") was stored as-is, and a job killed for memory learned as if
// its peak were exact: a state that is not Slurm's is refused naming the field, the value
// (truncated, never whole) and what is accepted. Slurm's short codes, "CANCELLED by N" and an
// absent state still pass; an empty one is refused by the record's reader (it said nothing about
// how the job ended, and was learned as COMPLETED); a prediction's state, unused, is not checked.
TEST(Service, ACompletionWithAStateThatIsNotSlurmsIs422) {
  Fixture f;
  auto done = [](const std::string& id, const std::string& state) {
    json c = completion_json(id, "bob", "#!/bin/sh\nx\n", kNow - 100, kNow - 50, kGiB, kGiB / 2);
    c["state"] = state;
    return c.dump();
  };
  Reply r = f.service->complete(done("60", "OUT_OF_MEMROY"));
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["error"]["field"], "state");
  const std::string message = body_of(r)["error"]["message"];
  EXPECT_NE(message.find("\"OUT_OF_MEMROY\" is not a Slurm job state"), std::string::npos) << message;
  EXPECT_NE(message.find("OUT_OF_MEMORY"), std::string::npos) << message;
  const std::string hostile = std::string(40, 'Z') + "TAIL\xc3\xa9";
  r = f.service->complete(done("61", hostile));
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_NE(r.body.find(std::string(40, 'Z')), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("TAIL"), std::string::npos) << r.body;
  EXPECT_EQ(f.service->complete(done("62", "\xc3\xa9t\xc3\xa9")).body.find("\xc3\xa9"), std::string::npos);
  r = f.service->complete(done("63", ""));
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["error"]["field"], "state");
  EXPECT_EQ(body_of(r)["error"]["message"], "state: empty");
  EXPECT_EQ(*f.service->store().count(), 0u);
  int id = 70;
  for (const char* ok : {"oom", "CD", "CANCELLED by 0", "timeout", "NF", "BOOT_FAIL"}) {
    EXPECT_EQ(f.service->complete(done(std::to_string(id++), ok)).status, 200) << ok;
  }
  json h = body_of(f.service->history({{"user", "bob"}}));
  std::vector<std::string> states;
  for (const json& j : h["jobs"]) states.push_back(j["state"]);
  std::sort(states.begin(), states.end());
  EXPECT_EQ(states, (std::vector<std::string>{"BOOT_FAIL", "CANCELLED", "COMPLETED", "NODE_FAIL",
                                              "OUT_OF_MEMORY", "TIMEOUT"}));
  json p = request_json("bob", "#!/bin/sh\nx\n", kNow, kGiB);
  p["state"] = "PENDNG";
  EXPECT_EQ(f.service->predict(p.dump()).status, 200);
}

// A completion posted while the job still ran (RUNNING, its peak so far) was stored as an exact
// label and locked the job_id: the real completion later got 409. A state the job has not ended
// in is 422 naming `state`, nothing is stored, and the final one is taken afterwards. Every
// final state passes, by name and by sacct's short code.
TEST(Service, ACompletionOfAJobThatHasNotFinishedIs422) {
  Fixture f;
  auto done = [](const std::string& id, const std::string& state) {
    json c = completion_json(id, "bob", "#!/bin/sh\nx\n", kNow - 100, kNow - 50, kGiB, kGiB / 2);
    c["state"] = state;
    return c.dump();
  };
  for (const char* running : {"RUNNING", "R", "PENDING", "PD", "SUSPENDED", "COMPLETING", "CG",
                              "REQUEUED", "REQUEUE_HOLD", "CONFIGURING", "SPECIAL_EXIT", "STOPPED",
                              "RESIZING", "SIGNALING", "STAGE_OUT"}) {
    Reply r = f.service->complete(done("80", running));
    EXPECT_EQ(r.status, 422) << running << ": " << r.body;
    EXPECT_EQ(body_of(r)["error"]["field"], "state") << running;
    const std::string message = body_of(r)["error"]["message"];
    EXPECT_NE(message.find("has not finished"), std::string::npos) << message;
  }
  EXPECT_EQ(*f.service->store().count(), 0u);
  EXPECT_EQ(f.service->complete(done("80", "COMPLETED")).status, 200);  // not locked
  int id = 90;
  for (const char* final_state : {"COMPLETED", "FAILED", "OUT_OF_MEMORY", "CANCELLED", "CANCELLED by 1000",
                                  "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "CD", "F",
                                  "OOM", "CA", "TO", "NF", "PR", "BF", "DL"}) {
    EXPECT_EQ(f.service->complete(done(std::to_string(id++), final_state)).status, 200) << final_state;
  }
}

TEST(Service, BadInputGets4xxNamingTheField) {
  Fixture f;
  const json good = request_json("alice", "#!/bin/sh\n", kNow, kGiB);
  struct Case {
    std::string body;
    int status;
    std::string field;
  };
  json wrong_type = good; wrong_type["req_mem_bytes"] = "lots";
  json missing = good; missing.erase("user");
  json unknown = good; unknown["memory"] = 1;
  json negative = good; negative["req_mem_bytes"] = -5;
  json absurd = good; absurd["submit_time"] = 1e300;
  json nul = good; nul["script"] = std::string("a\0b", 3);
  json big = good; big["script"] = std::string(5000, 'x');
  json outcome = good; outcome["peak_mem_bytes"] = 5;
  const std::string invalid_utf8 = R"({"job_id":"p","user":"al)" + std::string("\xff\xfe") +
                                   R"(","submit_time":1})";
  const std::vector<Case> cases = {
      {"{not json", 400, "body"},
      {"", 400, "body"},
      {"[1,2]", 400, "body"},
      {std::string(100, '[') + std::string(100, ']'), 400, "body"},
      {wrong_type.dump(), 422, "req_mem_bytes"},
      {missing.dump(), 422, "user"},
      {unknown.dump(), 422, "memory"},
      {negative.dump(), 422, "req_mem_bytes"},
      {absurd.dump(), 422, "submit_time"},
      {nul.dump(), 422, "script"},
      {big.dump(), 413, "script"},
      {outcome.dump(), 422, "peak_mem_bytes"},
      {invalid_utf8, 400, "body"},
      // Regression (found by request_fuzz): a number beyond a double's range made the JSON
      // parser throw out_of_range, which escaped the handler.
      {R"({"job_id":"p","user":"a","submit_time":1e767228703})", 400, "body"},
  };
  for (const Case& c : cases) {
    Reply r = f.service->predict(c.body);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 80) << " -> " << r.body;
    json e = body_of(r);
    ASSERT_TRUE(e.contains("error")) << r.body;
    EXPECT_EQ(e["error"]["field"], c.field) << r.body;
    // The script is never echoed back.
    EXPECT_EQ(r.body.find(std::string(200, 'x')), std::string::npos);
  }
  // A completion without its outcome names end_time; nothing was written.
  Reply r = f.service->complete(good.dump());
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(body_of(r)["error"]["field"], "end_time");
  EXPECT_EQ(*f.service->store().count(), 0u);
}

TEST(Service, StorageFailureRefusesCompletionsButPredictionsWork) {
  Fixture f;
  const std::string script = "#!/bin/sh\nrun\n";
  ASSERT_EQ(f.service->complete(completion_json("1", "u", script, kNow - 99, kNow - 9, kGiB, kGiB / 4).dump()).status, 200);
  std::vector<std::string> errors;  // the log: one line for the cause, not one per refused job
  set_log_sink([&errors](LogLevel level, std::string_view m) {
    if (level == LogLevel::kError) errors.emplace_back(m);
  });
  f.faulty->fail_writes = true;
  Reply r = f.service->complete(completion_json("2", "u", script, kNow - 99, kNow - 5, kGiB, kGiB).dump());
  EXPECT_EQ(r.status, 503);
  for (const char* id : {"3", "4", "5"}) {
    EXPECT_EQ(f.service->complete(completion_json(id, "u", script, kNow - 99, kNow - 5, kGiB, kGiB).dump()).status, 503);
  }
  set_log_sink({});
  EXPECT_EQ(errors.size(), 1u) << (errors.empty() ? "" : errors.back());
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("disk is full"), std::string::npos);
  // Nothing half-done: the refused completion is not in memory either.
  EXPECT_EQ(f.service->history_size(), 1u);
  r = f.service->predict(request_json("u", script, kNow, kGiB).dump());
  ASSERT_EQ(r.status, 200);
  EXPECT_DOUBLE_EQ(body_of(r)["predictions"]["mem"]["util"].get<double>(), 0.25);
  json h = body_of(f.service->healthz());
  EXPECT_EQ(h["storage"]["ok"], false);
  EXPECT_NE(f.service->metrics_text().body.find("peakcast_storage_ok 0"), std::string::npos);
  f.faulty->fail_writes = false;
  EXPECT_EQ(f.service->complete(completion_json("2", "u", script, kNow - 99, kNow - 5, kGiB, kGiB).dump()).status, 200);
  EXPECT_EQ(body_of(f.service->healthz())["storage"]["ok"], true);
}

TEST(Service, ReadOnlyDatabaseGives503) {
  Fixture f(SqliteOptions{.query_only = true});
  Reply r = f.service->complete(completion_json("1", "u", "#!/bin/sh\n", kNow - 9, kNow - 1, kGiB, 1).dump());
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(f.service->predict(request_json("u", "#!/bin/sh\n", kNow, kGiB).dump()).status, 200);
}

TEST(Service, RebuildsHistoryFromTheDatabase) {
  TempDir dir;
  const std::string script = "#!/bin/sh\nwork\n";
  {
    auto store = open_sqlite_store(dir.file("h.db"));
    ASSERT_TRUE(store.ok());
    Service s(testing::history_model(), std::move(*store), fixed_clock());
    ASSERT_TRUE(s.rebuild().is_ok());
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(s.complete(completion_json(std::to_string(i), "u", script, kNow - 1000 + i,
                                           kNow - 500 + i, kGiB, kGiB / 8 * (i + 1)).dump()).status, 200);
    }
  }
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store.ok());
  Service s(testing::history_model(), std::move(*store), fixed_clock());
  ASSERT_TRUE(s.rebuild().is_ok());
  EXPECT_EQ(s.history_size(), 5u);
  json p = body_of(s.predict(request_json("u", script, kNow, kGiB).dump()))["predictions"]["mem"];
  EXPECT_EQ(p["history_n"], 5);
  EXPECT_DOUBLE_EQ(p["util"].get<double>(), 5.0 / 8.0);  // last1 = the latest end time
}

// --history-days: at start only the completions that ended in the last N days are learned; the
// database keeps them all, and with 0 they are all learned again.
// A service on the database h.db in `dir`, rebuilt from it (what peakcastd does at start).
std::unique_ptr<Service> open_rebuilt(TempDir& dir, ServiceOptions o) {
  auto store = open_sqlite_store(dir.file("h.db"));
  EXPECT_TRUE(store.ok()) << store.status().message();
  auto s = std::make_unique<Service>(testing::history_model(), std::move(*store), std::move(o));
  EXPECT_TRUE(s->rebuild().is_ok());
  return s;
}

TEST(Service, RebuildLearnsOnlyTheLastDaysWhenAsked) {
  TempDir dir;
  const std::string script = "#!/bin/sh\nwork\n";
  {
    auto s = open_rebuilt(dir, fixed_clock());
    const int64_t days_ago[] = {400, 45, 29, 2};
    for (int i = 0; i < 4; ++i) {
      const int64_t end = kNow - days_ago[i] * 86400;
      ASSERT_EQ(s->complete(completion_json(std::to_string(i), "u", script, end - 600, end, kGiB,
                                            kGiB / 8 * (i + 1)).dump()).status, 200);
    }
  }
  const auto restart = [&](int64_t days) {
    ServiceOptions o = fixed_clock();
    o.history_days = days;
    return open_rebuilt(dir, o);
  };
  auto recent = restart(30);
  EXPECT_EQ(recent->history_size(), 2u);
  EXPECT_EQ(*recent->store().count(), 4u);
  json p = body_of(recent->predict(request_json("u", script, kNow, kGiB).dump()))["predictions"]["mem"];
  EXPECT_EQ(p["history_n"], 2);
  recent.reset();
  auto all = restart(0);
  EXPECT_EQ(all->history_size(), 4u);
}

// --history-days while the daemon runs: a script and a user with no completion in that many days
// are forgotten at the next sweep, and the daemon then answers as one restarted would.
TEST(Service, ForgetsRunsOlderThanTheHistoryDaysAsARestartWould) {
  TempDir dir;
  auto now = std::make_shared<int64_t>(kNow);
  const auto open = [&] {
    ServiceOptions o = fixed_clock();
    o.clock = [now] { return *now; };
    o.history_days = 10;
    return open_rebuilt(dir, o);
  };
  const std::string idle = "#!/bin/sh\nonce\n", busy = "#!/bin/sh\nagain\n";
  auto s = open();
  const auto done = [&](const std::string& id, const std::string& user, const std::string& script, int64_t end) {
    ASSERT_EQ(s->complete(completion_json(id, user, script, end - 3600, end, kGiB, kGiB / 4).dump()).status, 200);
  };
  done("1", "alice", idle, *now - 3600);
  done("2", "bob", busy, *now - 3600);
  EXPECT_EQ(body_of(s->healthz())["history_keys"], 4);
  *now += 11 * 86400;
  done("3", "bob", busy, *now - 3600);  // the sweep: runs 1 and 2 ended 11 days ago
  EXPECT_EQ(body_of(s->healthz())["history_keys"], 2);
  done("4", "bob", busy, *now - 12 * 86400);  // reported late, ended before the horizon
  EXPECT_EQ(s->history_size(), 3u);           // stored, not learned
  const auto mem = [&](Service& svc, const std::string& user, const std::string& script) {
    return body_of(svc.predict(request_json(user, script, *now, kGiB).dump()))["predictions"]["mem"];
  };
  EXPECT_EQ(mem(*s, "alice", idle)["history_level"], "none");
  EXPECT_EQ(mem(*s, "bob", busy)["history_level"], "exact_script");
  EXPECT_EQ(mem(*s, "bob", busy)["history_n"], 1);  // run 2 is forgotten though bob ran since
  EXPECT_EQ(body_of(s->history({{"user", "bob"}}))["jobs"].size(), 3u);  // all three on record
  s.reset();
  auto restarted = open();  // learns the completions of the last 10 days: the same history
  EXPECT_EQ(body_of(restarted->healthz())["history_keys"], 2);
  EXPECT_EQ(mem(*restarted, "alice", idle)["history_level"], "none");
  EXPECT_EQ(mem(*restarted, "bob", busy)["history_n"], 1);
}

TEST(Service, HistoryEndpointListsJobsAndRejectsBadQueries) {
  Fixture f;
  ASSERT_EQ(f.service->complete(completion_json("9", "carol", "#!/bin/sh\n", kNow - 9, kNow - 1, kGiB, kGiB / 2).dump()).status, 200);
  Reply r = f.service->history({{"user", "carol"}});
  ASSERT_EQ(r.status, 200);
  json h = body_of(r);
  ASSERT_EQ(h["jobs"].size(), 1u);
  EXPECT_EQ(h["jobs"][0]["peak_mem_bytes"], kGiB / 2);
  EXPECT_EQ(h["history"]["mem"]["count"], 1);
  const std::string key = h["jobs"][0]["script_sha256"];
  EXPECT_EQ(body_of(f.service->history({{"script_sha256", key}}))["jobs"].size(), 1u);
  EXPECT_EQ(f.service->history({}).status, 422);
  EXPECT_EQ(f.service->history({{"script_sha256", "xyz"}}).status, 422);
  EXPECT_EQ(f.service->history({{"color", "red"}}).status, 422);
}

TEST(Errors, OneMappingFromKindToStatus) {
  EXPECT_EQ(http_status(ApiErrorKind::kMalformedJson), 400);
  EXPECT_EQ(http_status(ApiErrorKind::kInvalidField), 422);
  EXPECT_EQ(http_status(ApiErrorKind::kTooLarge), 413);
  EXPECT_EQ(http_status(ApiErrorKind::kStorageUnavailable), 503);
  EXPECT_EQ(from_status(Status::io("disk")).kind, ApiErrorKind::kStorageUnavailable);
  EXPECT_EQ(from_status(Status::invalid("user: bad")).field, "user");
}

// Every route has its own /metrics label, and a tree-route answer (the code model did not run)
// is no encoder call.
TEST(Metrics, EveryRouteHasItsLabelAndTreeIsNoEncoderCall) {
  Metrics m;
  m.count_route(Resource::kMem, cascade::Route::kTree);
  m.count_route(Resource::kMem, cascade::Route::kTree);
  m.count_route(Resource::kVram, cascade::Route::kEncoder);
  const std::string text = m.render(Gauges{});
  for (cascade::Route r : cascade::kRoutes) {
    for (const char* res : {"mem", "vram"}) {
      EXPECT_NE(text.find(fmt::format("peakcast_predictions_total{{resource=\"{}\",route=\"{}\"}}", res,
                                      cascade::route_name(r))),
                std::string::npos)
          << res << " " << cascade::route_name(r);
    }
  }
  EXPECT_NE(text.find("peakcast_predictions_total{resource=\"mem\",route=\"tree\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("peakcast_encoder_calls_total 1\n"), std::string::npos) << text;
}

// A job with no history at all is answered by the code model's Q (route no_history): that run
// is an encoder call, and the same job again a cache hit. /metrics counted only the encoder
// route, so a daemon answering newcomers showed no code-model calls at all.
TEST(Metrics, ACodeModelRunForAJobWithNoHistoryIsAnEncoderCall) {
  const std::vector<Job> jobs = cascade::testing::synth_jobs(800, 5);
  const cascade::TrainingInput input =
      cascade::testing::make_input(jobs, cascade::testing::roles_by_share(jobs.size(), 0.6, 0.2));
  cascade::CascadeConfig cfg = cascade::testing::tiny_config();
  cfg.q_source = "code_model";
  auto trained = cascade::CascadeModel::train(input, cfg);
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  Fixture f({}, std::make_shared<const cascade::CascadeModel>(std::move(trained).value()));
  const std::string request = request_json("newcomer", "#!/bin/bash\npython fit.py\n", kNow, 8 * kGiB).dump();
  for (int i = 0; i < 2; ++i) {
    Reply r = f.service->predict(request);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(body_of(r)["predictions"]["mem"]["route"], "no_history");
  }
  const std::string text = f.service->metrics_text().body;
  EXPECT_NE(text.find("peakcast_encoder_calls_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("peakcast_cache_hits_total 1\n"), std::string::npos) << text;
  // The history-only kind answers no_history with its fallback: no code model, no call.
  Fixture history_only;
  ASSERT_EQ(history_only.service->predict(request).status, 200);
  EXPECT_NE(history_only.service->metrics_text().body.find("peakcast_encoder_calls_total 0\n"), std::string::npos);
}

}  // namespace
}  // namespace peakcast::serve
