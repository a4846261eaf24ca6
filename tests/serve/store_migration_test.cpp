// Opening a SQLite store's file of another schema version: a newer one is refused; an older one
// (versions 1, 3, 4, 5) a reader reads as it is and the daemon migrates, keeping every row; and a
// file another process migrated while this open waited for the write lock is migrated once.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "peakcast/core/log.h"
#include "peakcast/serve/store.h"
#include "serve_test_util.h"
#include "support/command.h"
#include "store_test_util.h"

namespace peakcast::serve {
namespace {

using namespace store_testing;
using testing::TempDir;

int user_version(const std::string& path) { return query_int(path, "PRAGMA user_version"); }

TEST(SqliteStore, RefusesANewerSchema) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  { ASSERT_TRUE(open_sqlite_store(path).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto s = open_sqlite_store(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().kind(), ErrorKind::kUnsupported);
  EXPECT_NE(s.status().message().find("newer"), std::string::npos);
}

// Another program's SQLite file given as --db (peakcastd's, or train/report's read-only --db) is
// refused and left byte for byte as it was: no peakcastd tables added, its journal mode unchanged.
TEST(SqliteStore, AnotherProgramsDatabaseIsRefusedAndLeftAsItWas) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  exec_sql(path, "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO jobs VALUES (1, 'x');"
                 "CREATE TABLE users (id INTEGER)");
  const std::string before = test_support::slurp(path);
  for (bool reader : {true, false}) {
    auto s = open_sqlite_store(path, SqliteOptions{.query_only = reader});
    ASSERT_FALSE(s.ok()) << (reader ? "reader" : "writer");
    EXPECT_EQ(s.status().kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(s.status().message().find(path + ": not a peakcastd database"), std::string::npos)
        << s.status().message();
    EXPECT_NE(s.status().message().find("(jobs, users)"), std::string::npos) << s.status().message();
    EXPECT_EQ(test_support::slurp(path), before) << (reader ? "reader" : "writer") << " changed the file";
    EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  }
  // An empty SQLite file is a new database, as before.
  const std::string fresh = dir.file("fresh.db");
  exec_sql(fresh, "PRAGMA user_version=0");
  EXPECT_TRUE(open_sqlite_store(fresh).ok());
  EXPECT_GT(user_version(fresh), 0);
}

// A database as schema version 5 wrote it (completions keyed by job_id), with one completion.
constexpr const char* kVersion5File =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE completions (job_id TEXT PRIMARY KEY NOT NULL, user TEXT NOT NULL, script_key TEXT NOT "
    "NULL, submit_time INTEGER NOT NULL, start_time INTEGER, end_time INTEGER NOT NULL, state TEXT NOT NULL, "
    "req_cpus REAL, req_mem_bytes INTEGER, req_gpus INTEGER, req_time_s INTEGER, gpu_mem_bytes INTEGER, "
    "peak_mem_bytes INTEGER, peak_vram_bytes INTEGER, mem_util REAL NOT NULL, vram_util REAL NOT NULL, "
    "valid_mask INTEGER NOT NULL, clipped_mask INTEGER NOT NULL, censored INTEGER NOT NULL, job_name TEXT "
    "NOT NULL, partition TEXT NOT NULL, account TEXT NOT NULL, workload TEXT, script TEXT, stored_at "
    "INTEGER NOT NULL DEFAULT (strftime('%s','now')), ran_mem_bytes INTEGER, answer_id TEXT);"
    "CREATE INDEX completions_user ON completions(user, end_time);"
    "CREATE INDEX completions_script ON completions(script_key, end_time);"
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
    "CREATE TABLE answers (seq INTEGER PRIMARY KEY, user TEXT NOT NULL, script_key TEXT NOT NULL, "
    "submit_time INTEGER NOT NULL, req_mem_bytes INTEGER, recommended_mem_bytes INTEGER, mem_util REAL, "
    "mem_upper REAL, vram_util REAL, vram_upper REAL, answered_at INTEGER NOT NULL DEFAULT "
    "(strftime('%s','now')), job_name TEXT, answer_id TEXT);"
    "INSERT INTO completions (job_id, user, script_key, submit_time, start_time, end_time, state, "
    "req_mem_bytes, peak_mem_bytes, mem_util, vram_util, valid_mask, clipped_mask, censored, job_name, "
    "partition, account, script, stored_at, ran_mem_bytes, answer_id) VALUES ('7', 'u', 'k', 100, 110, "
    "200, 'COMPLETED', 1024, 512, 0.5, 0, 1, 0, 0, 'n', 'p', 'a', 'echo', 1234, 2048, 'a1');"
    "INSERT INTO meta VALUES ('slurm_sync.cursor', '150');"
    "PRAGMA user_version=5;";

// Collects the log's info lines while it lives (the library logs through a sink the caller owns).
class InfoLines {
 public:
  InfoLines() {
    set_log_sink([this](LogLevel level, std::string_view m) {
      if (level != LogLevel::kInfo) return;
      std::lock_guard lock(mu_);
      lines_.emplace_back(m);
    });
  }
  ~InfoLines() { set_log_sink({}); }
  InfoLines(const InfoLines&) = delete;
  InfoLines& operator=(const InfoLines&) = delete;
  // The lines that contain `text`.
  std::vector<std::string> with(const std::string& text) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const std::string& l : lines_) {
      if (l.find(text) != std::string::npos) out.push_back(l);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// A database written by schema version 5 (completions keyed by job_id): a reader reads it as it
// is; the daemon migrates it to runs keyed by (job_id, submit_time), keeping every row and
// column, saying so first (the table is copied), and then stores a requeued job's later run.
TEST(SqliteStore, MigratesAVersionFiveDatabaseToRuns) {
  TempDir dir;
  const std::string path = dir.file("v5.db");
  exec_sql(path, kVersion5File);
  ASSERT_FALSE(HasFailure());
  InfoLines info;
  {
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto found = (*r)->find("7");
    ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
    EXPECT_EQ((*found)->answer_id, "a1");  // version 5 has it
  }
  EXPECT_EQ(user_version(path), 5);
  EXPECT_TRUE(info.with("migrating").empty());  // a reader does not migrate
  {
    auto s = open_sqlite_store(path, SqliteOptions{.store_scripts = true});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    const std::vector<std::string> said = info.with("migrating");
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find("migrating 1 completions from schema 5 to 6"), std::string::npos) << said[0];
    std::vector<Job> all;
    ASSERT_TRUE((*s)->for_each_with_scripts([&](Job&& x) { all.push_back(std::move(x)); }).is_ok());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].job_id, "7");
    EXPECT_EQ(all[0].submit_ms, 100'000);
    EXPECT_EQ(all[0].start_ms, std::optional<int64_t>(110'000));
    EXPECT_EQ(all[0].peak_mem_bytes, std::optional<uint64_t>(512));
    EXPECT_EQ(all[0].ran_mem_bytes, std::optional<uint64_t>(2048));
    EXPECT_EQ(all[0].answer_id, "a1");
    EXPECT_EQ(all[0].script, std::optional<std::string>("echo"));
    EXPECT_EQ(**(*s)->get_meta("slurm_sync.cursor"), "150");
    Job later = all[0];
    later.submit_ms = 300'000;
    later.start_ms = 310'000;
    later.end_ms = 400'000;
    EXPECT_FALSE(*(*s)->insert(all[0]));
    EXPECT_TRUE(*(*s)->insert(later));
    EXPECT_EQ(*(*s)->count(), 2u);
  }
  EXPECT_EQ(query_int(path, "SELECT stored_at FROM completions WHERE submit_time = 100"), 1234);
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM sqlite_master WHERE name IN ('completions_user', "
                            "'completions_script')"),
            2);
}

// A database of schema version 1 (before ran_mem_bytes): the daemon migrates it and keeps its
// completions; a reader (query_only, `peakcast report --db` while the daemon runs) reads it as
// it is and changes nothing.
TEST(SqliteStore, MigratesAVersionOneDatabaseAndAReaderLeavesItAsItIs) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  {
    auto s = open_sqlite_store(path, SqliteOptions{.store_scripts = true});
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(*(*s)->insert(sample_job("old")));
  }
  // Back to version 1's table
  exec_sql(path, "ALTER TABLE completions DROP COLUMN answer_id; "
                 "ALTER TABLE completions DROP COLUMN ran_mem_bytes; PRAGMA user_version=1");
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(user_version(path), 1);
  {
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<Job> all;
    ASSERT_TRUE((*r)->for_each_with_scripts([&](Job&& x) { all.push_back(std::move(x)); }).is_ok());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].job_id, "old");
    EXPECT_FALSE(all[0].ran_mem_bytes.has_value());
    EXPECT_TRUE(all[0].script.has_value());
    EXPECT_TRUE((**(*r)->find("old")).req_mem_bytes.has_value());
    auto w = (*r)->insert(sample_job("new"));
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().kind(), ErrorKind::kIo);
    size_t answers = 0;  // no answers table before version 3: none, and none kept
    ASSERT_TRUE((*r)->for_each_answer([&](AnswerRecord&&) { ++answers; }).is_ok());
    EXPECT_EQ(answers, 0u);
    EXPECT_EQ((*r)->record_answer({"u", "k", {}}).kind(), ErrorKind::kIo);
  }
  EXPECT_EQ(user_version(path), 1);
  auto s = open_sqlite_store(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(user_version(path), kSchemaVersion);
  Job lowered = sample_job("new");
  lowered.ran_mem_bytes = 5;
  ASSERT_TRUE(*(*s)->insert(lowered));
  EXPECT_EQ((**(*s)->find("new")).ran_mem_bytes, std::optional<uint64_t>(5));
  EXPECT_EQ(*(*s)->count(), 2u);
  AnswerRecord a{"u", "k", {}};
  a.answer.submit_ms = 10;
  ASSERT_TRUE((*s)->record_answer(a).is_ok());  // the answers table too
}

// Version 4 had no answer ids (answers or completions): a reader reads its completions as they
// are; the daemon migrates it, its old rows read back with no id, and new ones keep theirs.
TEST(SqliteStore, MigratesVersion4AndKeepsAnswerIds) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(*(*s)->insert(sample_job("old")));
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'000;
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  // Back to version 4's tables
  exec_sql(path, "ALTER TABLE completions DROP COLUMN answer_id; "
                 "ALTER TABLE answers DROP COLUMN answer_id; PRAGMA user_version=4");
  ASSERT_FALSE(HasFailure());
  {
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<Job> all;
    ASSERT_TRUE((*r)->for_each([&](Job&& x) { all.push_back(std::move(x)); }).is_ok());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].answer_id, "");
    EXPECT_EQ((*r)->insert(sample_job("new")).status().kind(), ErrorKind::kIo);  // it does not migrate
  }
  EXPECT_EQ(user_version(path), 4);
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    Job j = sample_job("new");
    j.answer_id = "0123456789abcdef";
    ASSERT_TRUE(*(*s)->insert(j));
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'500;
    a.answer.answer_id = "0123456789abcdef";
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  auto s = open_sqlite_store(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((**(*s)->find("old")).answer_id, "");
  EXPECT_EQ((**(*s)->find("new")).answer_id, "0123456789abcdef");
  const std::vector<AnswerRecord> back = answers_on_record(**s);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].answer.answer_id, "");
  EXPECT_EQ(back[1].answer.answer_id, "0123456789abcdef");
}

// Version 3 kept answers without the job's name: opened by the daemon it migrates to version 4,
// its answers read back with no name, and new ones keep theirs, redacted as a completion's is.
TEST(SqliteStore, MigratesVersion3AnswersAndKeepsTheirNamesRedacted) {
  TempDir dir;
  const std::string path = dir.file("v3.db");
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok());
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'000;
    a.answer.job_name = "kept before";
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  // Back to version 3's table
  exec_sql(path, "ALTER TABLE completions DROP COLUMN answer_id; "
                 "ALTER TABLE answers DROP COLUMN answer_id; ALTER TABLE answers DROP COLUMN job_name; "
                 "PRAGMA user_version=3");
  ASSERT_FALSE(HasFailure());
  {  // a reader does not migrate: no answers from it
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    size_t answers = 0;
    ASSERT_TRUE((*r)->for_each_answer([&](AnswerRecord&&) { ++answers; }).is_ok());
    EXPECT_EQ(answers, 0u);
  }
  EXPECT_EQ(user_version(path), 3);
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'500;
    a.answer.job_name = "deploy DB_PASSWORD=NameSecret77";
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  auto s = open_sqlite_store(path);
  ASSERT_TRUE(s.ok());
  const std::vector<AnswerRecord> back = answers_on_record(**s);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].answer.submit_ms, 1'700'000'000'000);
  EXPECT_EQ(back[0].answer.job_name, "");
  EXPECT_EQ(back[1].answer.job_name, "deploy DB_PASSWORD=<SECRET>");
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM answers WHERE job_name LIKE '%NameSecret77%'"), 0);
}

// ---- Two processes opening one file at once (peakcastd starting while cron's `peakcast
// slurm-sync` opens it): the one that waited for the write lock finds the file migrated.

// The default VFS, except that it counts the waits for a lock: SQLite's busy handler sleeps
// through xSleep between its tries.
std::atomic<int> g_lock_waits{0};
const char* register_lock_wait_counting_vfs() {
  static sqlite3_vfs vfs = [] {
    sqlite3_vfs v = *sqlite3_vfs_find(nullptr);
    v.zName = "peakcast-lock-waits";
    v.pNext = nullptr;
    v.xSleep = [](sqlite3_vfs*, int us) {
      ++g_lock_waits;
      sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
      return real->xSleep(real, us);
    };
    return v;
  }();
  static const int registered = sqlite3_vfs_register(&vfs, 0);
  (void)registered;
  return vfs.zName;
}

// A connection of its own, kept open: the other process.
class OtherProcess {
 public:
  explicit OtherProcess(const std::string& path) { EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK); }
  ~OtherProcess() { sqlite3_close(db_); }
  OtherProcess(const OtherProcess&) = delete;
  OtherProcess& operator=(const OtherProcess&) = delete;
  bool exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
    return rc == SQLITE_OK;
  }
  // The text a one-row query gives, inside this connection's transaction.
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    std::string out = p ? p : "";
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// The text a one-row query gives ("" for NULL), read on a connection of its own.
std::string query_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  std::string out = p ? p : "";
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// Every table's and index's name, and every column's name, type and place in the primary key.
std::string schema_of(const std::string& path) {
  return query_text(path,
                    "SELECT group_concat(entry, ' | ') FROM (SELECT m.type || ' ' || m.name || coalesce(' ' || "
                    "(SELECT group_concat(c.name || ' ' || c.type || ' ' || c.pk, ', ') FROM pragma_table_info(m.name) c), "
                    "'') AS entry FROM sqlite_master m ORDER BY m.name)");
}

// A store's open reads the file's schema version, then waits for the write lock to migrate it;
// meanwhile another process (holding the lock) migrates the file to the next version, or to the
// current one, and commits. The open then takes only the steps still needed: before, it took
// them all again from the version it had read ("duplicate column name", "table completions
// already exists" on a file another process had just created) or copied the completions table a
// second time. Every row is kept once, the schema is the current one, and the copy is announced
// only where this open makes it.
TEST(SqliteStore, AFileAnotherProcessMigratedWhileTheOpenWaitedIsMigratedOnce) {
  TempDir dir;
  const std::string reference = dir.file("reference.db");
  { ASSERT_TRUE(open_sqlite_store(reference).ok()); }
  // The current schema's statements, as a new file has them (tables before their indexes).
  std::vector<std::string> current;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(reference.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid", -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) current.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  ASSERT_GE(current.size(), 4u);
  std::string create_all, completions_v6, completions_indexes;
  for (const std::string& sql : current) {
    create_all += sql + ";";
    if (sql.starts_with("CREATE TABLE completions ")) {
      completions_v6 = "CREATE TABLE completions_v6 " + sql.substr(sql.find('(')) + ";";
    }
    if (sql.starts_with("CREATE INDEX completions_")) completions_indexes += sql + ";";
  }
  ASSERT_FALSE(completions_v6.empty());
  const std::string v = std::to_string(kSchemaVersion);
  struct Case {
    int from, to;
    std::string downgrade;  // from a current file with two completions and an answer
    std::string migrate;    // what the other process does
  };
  const std::vector<Case> cases = {
      {0, kSchemaVersion, "", create_all + "PRAGMA user_version=" + v},
      {1, 2,
       "ALTER TABLE completions DROP COLUMN answer_id; ALTER TABLE completions DROP COLUMN ran_mem_bytes; "
       "DROP TABLE answers; PRAGMA user_version=1",
       "ALTER TABLE completions ADD COLUMN ran_mem_bytes INTEGER; PRAGMA user_version=2"},
      {3, 4,
       "ALTER TABLE completions DROP COLUMN answer_id; ALTER TABLE answers DROP COLUMN answer_id; "
       "ALTER TABLE answers DROP COLUMN job_name; PRAGMA user_version=3",
       "ALTER TABLE answers ADD COLUMN job_name TEXT; PRAGMA user_version=4"},
      {4, 5,
       "ALTER TABLE completions DROP COLUMN answer_id; ALTER TABLE answers DROP COLUMN answer_id; "
       "PRAGMA user_version=4",
       "ALTER TABLE completions ADD COLUMN answer_id TEXT; ALTER TABLE answers ADD COLUMN answer_id TEXT; "
       "PRAGMA user_version=5"},
      {5, kSchemaVersion, "",
       completions_v6 + "INSERT INTO completions_v6 SELECT * FROM completions; DROP TABLE completions; "
                        "ALTER TABLE completions_v6 RENAME TO completions;" + completions_indexes +
           "PRAGMA user_version=" + v},
  };
  const char* vfs = register_lock_wait_counting_vfs();
  for (const Case& c : cases) {
    SCOPED_TRACE("schema version " + std::to_string(c.from) + ", migrated to " + std::to_string(c.to) +
                 " by the other process");
    const std::string path = dir.file("v" + std::to_string(c.from) + ".db");
    if (c.from == 0) {
      exec_sql(path, "PRAGMA journal_mode=WAL");  // a new file, as the other process's open left it
    } else if (c.from == 5) {
      exec_sql(path, kVersion5File);
    } else {
      {
        auto s = open_sqlite_store(path);
        ASSERT_TRUE(s.ok()) << s.status().message();
        ASSERT_TRUE(*(*s)->insert(sample_job("a")));
        ASSERT_TRUE(*(*s)->insert(sample_job("b")));
        ASSERT_TRUE((*s)->record_answer({"u", "k", {}}).is_ok());
      }
      exec_sql(path, c.downgrade);
    }
    ASSERT_EQ(user_version(path), c.from);
    const int completions = c.from == 0 ? 0 : query_int(path, "SELECT count(*) FROM completions");
    const int answers = c.from < 3 ? 0 : query_int(path, "SELECT count(*) FROM answers");

    InfoLines info;
    OtherProcess other(path);
    ASSERT_TRUE(other.exec("BEGIN IMMEDIATE"));
    const int waits = g_lock_waits.load();
    std::atomic<bool> opened{false};
    std::optional<Result<std::unique_ptr<CompletionStore>>> store;
    std::thread daemon([&] {
      store.emplace(open_sqlite_store(path, SqliteOptions{.busy_timeout_ms = 600'000, .vfs = vfs}));
      opened = true;
    });
    while (!opened && g_lock_waits.load() == waits) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool waited = !opened;
    other.exec(c.migrate);
    const std::string root = other.text("SELECT rootpage FROM sqlite_master WHERE name = 'completions'");
    other.exec("COMMIT");
    daemon.join();
    ASSERT_TRUE(waited) << "the open did not wait for the other process's lock";
    ASSERT_TRUE(store.has_value());
    if (!store->ok()) {
      ADD_FAILURE() << store->status().message();
      continue;
    }
    store->value().reset();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    EXPECT_EQ(schema_of(path), schema_of(reference));
    EXPECT_EQ(query_int(path, "SELECT count(*) FROM completions"), completions);
    EXPECT_EQ(query_int(path, "SELECT count(DISTINCT job_id) FROM completions"), completions);
    EXPECT_EQ(query_int(path, "SELECT count(*) FROM answers"), answers);
    const std::vector<std::string> said = info.with("migrating");
    if (c.to == kSchemaVersion) {
      // Nothing left to do: the other process's table is the one kept, not copied again.
      EXPECT_EQ(query_text(path, "SELECT rootpage FROM sqlite_master WHERE name = 'completions'"), root);
      EXPECT_TRUE(said.empty()) << said[0];
    } else {
      ASSERT_EQ(said.size(), 1u);
      EXPECT_NE(said[0].find("migrating " + std::to_string(completions) + " completions from schema " +
                             std::to_string(c.to) + " to " + v),
                std::string::npos)
          << said[0];
    }
  }
}

}  // namespace
}  // namespace peakcast::serve
