#include "peakcast/serve/slurm_sync.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "peakcast/serve/service.h"
#include "peakcast/core/io.h"
#include "peakcast/ingest/redact.h"
#include "peakcast/ingest/sacct.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using testing::TempDir;

// A stand-in sacct: the listing for `-S ...`, a script for `-B -j N`; logs its arguments.
void write_fake_sacct(const TempDir& dir) {
  const std::string path = dir.file("sacct");
  std::ofstream f(path);
  f << "#!/bin/bash\n"
       "echo \"$*\" >> '" << dir.file("calls.log") << "'\n"
       "if [ \"$1\" = -B ]; then\n"
       "  [ \"$3\" = 12 ] || { echo NONE; exit 0; }\n"
       "  printf 'Batch Script for 12\\n%s\\n#!/bin/bash\\nperl alloc.pl 200\\n' '-----------'\n"
       "  exit 0\nfi\n"
       "cat <<'EOF'\n"
       "JobID|JobIDRaw|JobName|User|Account|Partition|State|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqCPUS|NNodes|ReqMem|ReqTRES|AllocTRES|MaxRSS|TRESUsageInTot|TRESUsageInMax\n"
       "12|12|alloc|alice|acct|debug|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:01|2024-05-01T10:00:10|00:00:09|00:05:00|1|1|1|600M|cpu=1,mem=600M,node=1|cpu=1,mem=600M,node=1|||\n"
       "12.batch|12|batch||acct||COMPLETED|2024-05-01T10:00:01|2024-05-01T10:00:01|2024-05-01T10:00:10|00:00:09||1||1||||217915392||\n"
       "13|13|other|bob|acct|debug|OUT_OF_MEMORY|2024-05-01T10:00:00|2024-05-01T10:00:01|2024-05-01T10:00:20|00:00:19|00:05:00|1|1|1|100M|cpu=1,mem=100M,node=1|cpu=1,mem=100M,node=1|||\n"
       "EOF\n";
  f.close();
  ::chmod(path.c_str(), 0755);
}

TEST(SlurmSync, TurnsFinishedJobsIntoCompletionsOnceAndKeepsACursor) {
  TempDir dir;
  write_fake_sacct(dir);
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store.ok());
  ServiceOptions so;
  so.clock = [] { return int64_t{1'714'600'000}; };
  Service service(testing::history_model(), std::move(*store), so);
  ASSERT_TRUE(service.rebuild().is_ok());
  SyncOptions o;
  o.sacct = dir.file("sacct");
  o.clock = [] { return int64_t{1'714'600'000}; };
  auto sink = [&](const Job& j) { return service.add_completion(j); };

  auto first = sync_once(service.store(), sink, o);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->finished, 2u);
  EXPECT_EQ(first->added, 2u);
  EXPECT_EQ(first->with_script, 1u);
  EXPECT_EQ(first->since, 1'714'600'000 - o.initial_lookback_s);

  auto rows = service.store().recent(HistoryFilter{"alice", ""}, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].peak_mem_bytes, 217915392u);  // the step's MaxRSS
  EXPECT_EQ((*rows)[0].req_mem_bytes, 600ull << 20);
  EXPECT_EQ((*rows)[0].script_key, ingest::script_sha256("#!/bin/bash\nperl alloc.pl 200\n"));
  auto oom = service.store().recent(HistoryFilter{"bob", ""}, 10);
  ASSERT_EQ(oom->size(), 1u);
  EXPECT_TRUE((*oom)[0].censored);

  // Twice: nothing new, no script fetched again, the cursor moved back by the overlap only.
  auto second = sync_once(service.store(), sink, o);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->added, 0u);
  EXPECT_EQ(second->known, 2u);
  EXPECT_EQ(second->since, 1'714'600'000 - o.overlap_s);
  EXPECT_EQ(service.history_size(), 2u);
  auto calls = read_file(dir.file("calls.log"));
  ASSERT_TRUE(calls.ok());
  size_t script_fetches = 0;
  for (auto line : split_lines(*calls)) script_fetches += line.starts_with("-B") ? 1 : 0;
  EXPECT_EQ(script_fetches, 2u);  // jobs 12 and 13 on the first poll only
  EXPECT_NE(calls->find("-S " + sacct_time(1'714'600'000 - o.overlap_s)), std::string::npos);
}

// A job named with '|' (sbatch -J 'sweep|lr=0.1') and an AdminComment holding '|': sacct -P
// with its default delimiter gives a row that cannot be read (two free-text columns), and the job
// was skipped, never learned. slurm-sync asks for the unit separator; this stand-in delimits by
// what --delimiter says, as sacct does.
TEST(SlurmSync, AJobNamedWithAPipeIsLearned) {
  TempDir dir;
  const std::string path = dir.file("sacct");
  {
    std::ofstream f(path);
    f << "#!/bin/bash\n"
         "echo \"$*\" >> '" << dir.file("calls.log") << "'\n"
         "[ \"$1\" = -B ] && { echo NONE; exit 0; }\n"
         "d='|'\n"
         "for a in \"$@\"; do case \"$a\" in --delimiter=*) d=\"${a#--delimiter=}\";; esac; done\n"
         "row() { local IFS=\"$d\"; echo \"$*\"; }\n"
         "row JobID JobIDRaw JobName User Account Partition State Submit Start End Elapsed Timelimit NCPUS "
         "ReqCPUS NNodes ReqMem ReqTRES AllocTRES MaxRSS TRESUsageInTot TRESUsageInMax AdminComment\n"
         "row 21 21 'sweep|lr=0.1' alice acct debug COMPLETED 2024-05-01T10:00:00 2024-05-01T10:00:01 "
         "2024-05-01T10:00:10 00:00:09 00:05:00 1 1 1 600M cpu=1,mem=600M cpu=1,mem=600M '' '' '' 'site|note'\n"
         "row 21.batch 21 batch '' acct '' COMPLETED 2024-05-01T10:00:01 2024-05-01T10:00:01 "
         "2024-05-01T10:00:10 00:00:09 '' 1 '' 1 '' '' '' 217915392 '' '' ''\n";
  }
  ::chmod(path.c_str(), 0755);
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store.ok());
  SyncOptions o;
  o.sacct = path;
  o.fetch_scripts = false;
  o.clock = [] { return int64_t{1'714'600'000}; };
  std::vector<Job> got;
  auto r = sync_once(**store, [&](const Job& j) -> Result<bool> { got.push_back(j); return true; }, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->skipped, 0u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].job_id, "21");
  EXPECT_EQ(got[0].job_name, "sweep|lr=0.1");
  EXPECT_EQ(got[0].user, "alice");
  EXPECT_EQ(got[0].peak_mem_bytes, 217915392u);
  auto calls = read_file(dir.file("calls.log"));
  ASSERT_TRUE(calls.ok());
  EXPECT_NE(calls->find(std::string("--delimiter=") + ingest::sacct::kUnitSeparator), std::string::npos);
}

TEST(SlurmSync, FailingSacctLeavesTheCursorAlone) {
  TempDir dir;
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store.ok());
  SyncOptions o;
  o.sacct = "/bin/false";
  auto r = sync_once(**store, [](const Job&) -> Result<bool> { return true; }, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exited with status 1"), std::string::npos);
  EXPECT_FALSE((*(*store)->get_meta(kSyncCursorKey)).has_value());
}

// A --sacct program that prints something else: the error says so and names the program, not the
// reader's --columns hint (slurm-sync has no such option: it chose the columns itself).
TEST(SlurmSync, ASacctThatPrintsSomethingElseIsNamed) {
  TempDir dir;
  const std::string fake = dir.file("garbage");
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho 'hello world'\n";
  }
  ::chmod(fake.c_str(), 0755);
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store.ok());
  SyncOptions o;
  o.sacct = fake;
  auto r = sync_once(**store, [](const Job&) -> Result<bool> { return true; }, o);
  ASSERT_FALSE(r.ok());
  const std::string why = r.status().message();
  EXPECT_EQ(why.rfind("'" + fake + "' printed something that is not `sacct -P --format=", 0), 0u) << why;
  EXPECT_NE(why.find("check --sacct"), std::string::npos) << why;
  EXPECT_EQ(why.find("--columns"), std::string::npos) << why;
  EXPECT_FALSE((*(*store)->get_meta(kSyncCursorKey)).has_value());
}

TEST(SlurmSync, SacctTimeIsUtc) { EXPECT_EQ(sacct_time(0), "1970-01-01T00:00:00"); }

// --gpu-mem-bytes (slurm-sync and peakcastd): a size as Slurm writes one, never a negative number
// wrapped into a huge capacity.
TEST(SlurmSync, GpuMemoryOptionTakesSizesAndRefusesTheRest) {
  EXPECT_EQ(*parse_gpu_mem_option("40G"), uint64_t{40} << 30);
  EXPECT_EQ(*parse_gpu_mem_option("81920M"), uint64_t{80} << 30);
  EXPECT_EQ(*parse_gpu_mem_option("1024"), 1024u);
  for (const char* bad : {"-1", "0", "lots", "", "1e308"}) {
    auto r = parse_gpu_mem_option(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("--gpu-mem-bytes: not a memory size above 0", 0), 0u) << r.status().message();
  }
  std::string text = "40G";
  EXPECT_EQ(gpu_mem_option_transform(text), "");
  EXPECT_EQ(text, std::to_string(uint64_t{40} << 30));
  text = "-1";
  EXPECT_NE(gpu_mem_option_transform(text).find("not a memory size above 0: '-1'"), std::string::npos);
}

}  // namespace
}  // namespace peakcast::serve
