// What the Slurm sync's tests share (slurm_sync_test.cpp, sync_loop_test.cpp): the fixed clock, a
// stand-in sacct listing two jobs, a program written for a test, the bench a poll runs against.
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "peakcast/serve/service.h"
#include "peakcast/serve/slurm_sync.h"
#include "serve_test_util.h"
#include "support/fake_sacct.h"

namespace peakcast::serve::sync_testing {

using test_support::FakeSacct;
using testing::TempDir;

inline constexpr int64_t kClock = 1'714'600'000;  // 2024-05-01T21:46:40 UTC

// A program for a test to run: `text` written to dir/name, made executable; its path.
inline std::string write_program(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  {
    std::ofstream f(path);
    f << text;
  }
  ::chmod(path.c_str(), 0755);
  return path;
}

// Two jobs that ended a few minutes before kClock (within a poll's overlap); a script for 12.
inline FakeSacct two_jobs() {
  FakeSacct f;
  f.listing =
      "JobID|JobIDRaw|JobName|User|Account|Partition|State|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqCPUS|NNodes|ReqMem|ReqTRES|AllocTRES|MaxRSS|TRESUsageInTot|TRESUsageInMax\n"
      "12|12|alloc|alice|acct|debug|COMPLETED|2024-05-01T21:39:00|2024-05-01T21:39:01|2024-05-01T21:40:00|00:00:59|00:05:00|1|1|1|600M|cpu=1,mem=600M,node=1|cpu=1,mem=600M,node=1|||\n"
      "12.batch|12|batch||acct||COMPLETED|2024-05-01T21:39:01|2024-05-01T21:39:01|2024-05-01T21:40:00|00:00:59||1||1||||217915392||\n"
      "13|13|other|bob|acct|debug|OUT_OF_MEMORY|2024-05-01T21:39:00|2024-05-01T21:39:01|2024-05-01T21:40:10|00:01:09|00:05:00|1|1|1|100M|cpu=1,mem=100M,node=1|cpu=1,mem=100M,node=1|||\n";
  f.scripts["12"] = "#!/bin/bash\nperl alloc.pl 200\n";
  f.now_iso = sacct_time(kClock);
  return f;
}

// What a poll runs against: a temp folder (the stand-in sacct and its call log go there) with a
// history database in it and, for a poll that feeds a daemon, the service over that database.
// open() and serve() assert: call them under ASSERT_NO_FATAL_FAILURE (the fixture does).
struct PollBench {
  TempDir dir;
  std::unique_ptr<CompletionStore> store;  // the service's once serve() has run
  std::unique_ptr<Service> service;

  void open() {
    auto opened = open_sqlite_store(dir.file("h.db"));
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    store = std::move(*opened);
  }
  // The service over the database, rebuilt; its clock kClock, or the real one.
  void serve(bool fixed_clock = true) {
    ServiceOptions so;
    if (fixed_clock) so.clock = [] { return kClock; };
    service = std::make_unique<Service>(testing::history_model(), std::move(store), so);
    ASSERT_TRUE(service->rebuild().is_ok());
  }
  // Completions into the service, as the daemon's poll hands them over.
  CompletionSink into_service() {
    return [this](const Job& j) { return service->add_completion(j); };
  }
};

// Options for a poll through `sacct` at kClock.
inline SyncOptions at_clock(const std::string& sacct) {
  SyncOptions o;
  o.sacct = sacct;
  o.clock = [] { return kClock; };
  return o;
}

// Listing rows (header not included) of a finished job `id` of alice that ended at `end`.
inline std::string finished_job_rows(const std::string& id, int64_t end) {
  const std::string t = sacct_time(end - 60), e = sacct_time(end);
  return id + "|j" + id + "|alice|COMPLETED|" + t + "|" + t + "|" + e + "|1G|\n" +
         id + ".batch|batch||COMPLETED|" + t + "|" + t + "|" + e + "||300M\n";
}

}  // namespace peakcast::serve::sync_testing
