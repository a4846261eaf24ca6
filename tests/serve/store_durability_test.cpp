// What the SQLite store promises about durability and what reaches the disk: every commit is
// synced before insert() returns (a test that fails with synchronous=OFF or NORMAL), a batch of
// answers commits unsynced (the first after open too), an exception inside a batch of answers
// leaves the connection as it was, scripts are stored redacted, checkpoint failures are reported
// and bound the write-ahead log.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "peakcast/serve/store.h"
#include "serve_test_util.h"
#include "store_test_util.h"

namespace peakcast::serve {
namespace {

using store_testing::sample_job;
using testing::TempDir;

// ---- a VFS that counts xSync calls and forwards everything to the default VFS

struct WrapFile {
  sqlite3_file base;
  sqlite3_file* real;
};
std::atomic<int> g_syncs{0};
sqlite3_vfs* g_real = nullptr;
sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<WrapFile*>(f)->real; }

const sqlite3_io_methods kMethods = {
    3,
    [](sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); },
    [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) { return real(f)->pMethods->xRead(real(f), b, n, o); },
    [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) { return real(f)->pMethods->xWrite(real(f), b, n, o); },
    [](sqlite3_file* f, sqlite3_int64 n) { return real(f)->pMethods->xTruncate(real(f), n); },
    [](sqlite3_file* f, int flags) {
      ++g_syncs;
      return real(f)->pMethods->xSync(real(f), flags);
    },
    [](sqlite3_file* f, sqlite3_int64* n) { return real(f)->pMethods->xFileSize(real(f), n); },
    [](sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); },
    [](sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); },
    [](sqlite3_file* f, int* r) { return real(f)->pMethods->xCheckReservedLock(real(f), r); },
    [](sqlite3_file* f, int op, void* a) { return real(f)->pMethods->xFileControl(real(f), op, a); },
    [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); },
    [](sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); },
    [](sqlite3_file* f, int pg, int sz, int ext, void volatile** p) {
      return real(f)->pMethods->xShmMap(real(f), pg, sz, ext, p);
    },
    [](sqlite3_file* f, int off, int n, int flags) { return real(f)->pMethods->xShmLock(real(f), off, n, flags); },
    [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); },
    [](sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); },
    [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) { return real(f)->pMethods->xFetch(real(f), o, n, p); },
    [](sqlite3_file* f, sqlite3_int64 o, void* p) { return real(f)->pMethods->xUnfetch(real(f), o, p); },
};

const char* register_counting_vfs() {
  static sqlite3_vfs vfs = [] {
    g_real = sqlite3_vfs_find(nullptr);
    sqlite3_vfs v = *g_real;
    v.szOsFile = static_cast<int>(sizeof(WrapFile)) + g_real->szOsFile;
    v.zName = "peakcast-counting";
    v.pNext = nullptr;
    v.xOpen = [](sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
      auto* w = reinterpret_cast<WrapFile*>(f);
      w->real = reinterpret_cast<sqlite3_file*>(w + 1);
      const int rc = g_real->xOpen(g_real, name, w->real, flags, out);
      w->base.pMethods = w->real->pMethods ? &kMethods : nullptr;
      return rc;
    };
    return v;
  }();
  static const int registered = sqlite3_vfs_register(&vfs, 0);
  (void)registered;
  return vfs.zName;
}

TEST(StoreDurability, EveryInsertIsSyncedBeforeItReturns) {
  TempDir dir;
  SqliteOptions o;
  o.vfs = register_counting_vfs();
  auto store = open_sqlite_store(dir.file("h.db"), o);
  ASSERT_TRUE(store.ok()) << store.status().message();
  for (int i = 0; i < 20; ++i) {
    const int before = g_syncs.load();
    ASSERT_TRUE((*store)->insert(sample_job(std::to_string(i))).ok());
    // synchronous=FULL in WAL mode syncs the log at every commit; OFF and NORMAL do not.
    EXPECT_GE(g_syncs.load() - before, 1) << "insert " << i << " returned before any fsync";
  }
  EXPECT_EQ((*store)->health().synchronous, "full");
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(StoreDurability, StoredScriptsAreRedacted) {
  TempDir dir;
  const std::string db = dir.file("h.db");
  const std::string token = "ghp_" + std::string(36, 'A');
  auto store = open_sqlite_store(db, SqliteOptions{.store_scripts = true});
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->insert(sample_job("1", "#!/bin/sh\nexport GITHUB_TOKEN=" + token +
                                                    "\nexport DB_PASSWORD=hunter2hunter2\npython x.py\n")).ok());
  const std::string on_disk = file_bytes(db) + file_bytes(db + "-wal");
  EXPECT_EQ(on_disk.find(token), std::string::npos);
  EXPECT_EQ(on_disk.find("hunter2hunter2"), std::string::npos);
  EXPECT_NE(on_disk.find("python x.py"), std::string::npos);  // the script itself is kept
  EXPECT_NE(on_disk.find("DB_PASSWORD=<SECRET>"), std::string::npos);
}

AnswerRecord answer(const std::string& id) {
  AnswerRecord a;
  a.user = "u";
  a.script_key = "k";
  a.answer.submit_ms = 10'000;
  a.answer.request_bytes = uint64_t{1} << 30;
  a.answer.answer_id = id;
  return a;
}

// The first column of `sql`'s rows as another connection to the file reads them: committed rows only.
std::vector<std::string> committed(const std::string& db, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3* raw = nullptr;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close_v2(raw);
  return out;
}

// Out of memory between BEGIN and COMMIT of a batch of answers (std::bad_alloc from
// redact_script, a vector's growth): the batch is rolled back whole and counted as not kept, and
// the connection is left outside any transaction at synchronous=FULL. Left inside it, the
// completions acknowledged afterwards would only join the open transaction, uncommitted, every
// later batch would fail (synchronous cannot be changed inside a transaction), and they would be
// lost when the daemon stops.
TEST(StoreDurability, AnExceptionMidAnswerBatchLeavesLaterCompletionsDurable) {
  TempDir dir;
  const std::string db = dir.file("h.db");
  SqliteOptions o;
  o.vfs = register_counting_vfs();
  CompletionStore* store = nullptr;
  // "a" is written alone; while it is, "b1" and "b2" are queued (their callers return at once)
  // and make the next batch, which runs out of memory once "b1" is inserted.
  o.test_before_answer_insert = [&](const AnswerRecord& a) {
    if (a.answer.answer_id == "a") {
      EXPECT_TRUE(store->record_answer(answer("b1")).is_ok());  // queued: written by this caller
      EXPECT_TRUE(store->record_answer(answer("b2")).is_ok());
    }
    if (a.answer.answer_id == "b2") throw std::bad_alloc();
  };
  auto opened = open_sqlite_store(db, o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<CompletionStore> owned = std::move(*opened);
  store = owned.get();
  EXPECT_THROW((void)store->record_answer(answer("a")), std::bad_alloc);
  EXPECT_EQ(store->health().answers_not_kept, 2u);  // b1 and b2
  EXPECT_EQ(store->health().synchronous, "full");

  const int syncs = g_syncs.load();
  ASSERT_TRUE(store->insert(sample_job("after")).ok());
  EXPECT_GE(g_syncs.load() - syncs, 1) << "the completion was acknowledged before any fsync";
  // Committed: another connection sees it. Of the answers, "a" alone, on either connection.
  EXPECT_EQ(committed(db, "SELECT job_id FROM completions"), std::vector<std::string>{"after"});
  EXPECT_EQ(committed(db, "SELECT answer_id FROM answers ORDER BY seq"), std::vector<std::string>{"a"});
  std::vector<std::string> own;
  ASSERT_TRUE(store->for_each_answer([&](AnswerRecord&& r) { own.push_back(r.answer.answer_id); }).is_ok());
  EXPECT_EQ(own, std::vector<std::string>{"a"});

  // The next batch is written, and the completion is still there once the store is reopened.
  const Status c = store->record_answer(answer("c"));
  EXPECT_TRUE(c.is_ok()) << c.message();
  owned.reset();
  auto again = open_sqlite_store(db);
  ASSERT_TRUE(again.ok()) << again.status().message();
  auto has = (*again)->contains("after");
  ASSERT_TRUE(has.ok()) << has.status().message();
  EXPECT_TRUE(*has) << "an acknowledged completion was lost";
  EXPECT_EQ(committed(db, "SELECT answer_id FROM answers ORDER BY seq"), (std::vector<std::string>{"a", "c"}));
}

// Every batch of answers commits at synchronous=NORMAL, the first after the store opened as the
// later ones: in the log before record_answer returns, not synced (the next completion's commit
// syncs it). Run as a statement prepared once, `PRAGMA synchronous=NORMAL` took effect when SQLite
// compiled it, at open, and again whenever SQLite re-prepared it before a later step, not when
// it was stepped: the first batch after open committed at FULL and synced the log, later ones
// at NORMAL.
TEST(StoreDurability, TheFirstAnswerBatchAfterOpenCommitsAsLaterOnes) {
  TempDir dir;
  SqliteOptions o;
  o.vfs = register_counting_vfs();
  auto store = open_sqlite_store(dir.file("h.db"), o);
  ASSERT_TRUE(store.ok()) << store.status().message();
  std::vector<int> syncs;  // per batch: a record_answer with nothing queued writes a batch of one
  for (int i = 0; i < 3; ++i) {
    const int before = g_syncs.load();
    ASSERT_TRUE((*store)->record_answer(answer("a" + std::to_string(i))).is_ok());
    syncs.push_back(g_syncs.load() - before);
  }
  EXPECT_EQ(syncs, std::vector<int>(3, 0)) << "syncs per batch: " << syncs[0] << ", " << syncs[1] << ", " << syncs[2];
  EXPECT_EQ((*store)->health().synchronous, "full");
  const int before = g_syncs.load();
  ASSERT_TRUE((*store)->insert(sample_job("after")).ok());
  EXPECT_GE(g_syncs.load() - before, 1) << "the completion after the answers was acknowledged before any fsync";
  EXPECT_EQ(committed(dir.file("h.db"), "SELECT answer_id FROM answers ORDER BY seq"),
            (std::vector<std::string>{"a0", "a1", "a2"}));
}

bool chattr(const std::string& flag, const std::string& path) {
  return std::system(("chattr " + flag + " '" + path + "' 2>/dev/null").c_str()) == 0;
}

TEST(StoreDurability, FailingCheckpointsAreReportedAndBoundTheLog) {
  TempDir dir;
  const std::string db = dir.file("h.db");
  SqliteOptions o;
  o.max_wal_bytes = 256 << 10;
  o.checkpoint_pages = 8;
  auto store = open_sqlite_store(db, o);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->insert(sample_job("0")).ok());
  if (!chattr("+i", db)) GTEST_SKIP() << "chattr +i not possible here (needs root and ext4/xfs)";
  Status refused;
  int accepted = 0;
  for (int i = 1; i < 2000 && refused.is_ok(); ++i) {
    Job j = sample_job(std::to_string(i));
    j.job_name = std::string(2000, 'n');  // fills the log faster
    auto r = (*store)->insert(j);
    if (r.ok()) ++accepted; else refused = r.status();
  }
  const StoreHealth h = (*store)->health();
  const uint64_t wal = std::filesystem::file_size(db + "-wal");
  chattr("-i", db);
  EXPECT_GT(accepted, 0);  // the log takes writes while it may grow
  ASSERT_FALSE(refused.is_ok()) << "the log grew without bound";
  EXPECT_EQ(refused.kind(), ErrorKind::kIo);
  EXPECT_NE(refused.message().find("write-ahead log"), std::string::npos) << refused.message();
  EXPECT_GT(h.checkpoint_failures, 0u);
  EXPECT_FALSE(h.checkpoint_error.empty());
  EXPECT_LT(wal, uint64_t{1} << 20);
  // Writable again: the next insert checkpoints, truncates the log and is accepted.
  EXPECT_TRUE((*store)->insert(sample_job("after")).ok());
  EXPECT_TRUE((*store)->health().checkpoint_error.empty());
}

}  // namespace
}  // namespace peakcast::serve
