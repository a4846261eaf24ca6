// The daemon's sync loop (sync_loop.h): a hung or throwing poll, the counts of a poll that
// fails late, the daily re-scan of late slurmdbd records and a re-scan the shutdown stops.
#include "peakcast/serve/slurm_sync.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include "peakcast/serve/service.h"
#include "peakcast/serve/sync_loop.h"
#include "peakcast/core/io.h"
#include "peakcast/core/log.h"
#include "peakcast/ingest/redact.h"
#include "peakcast/ingest/sacct.h"
#include "support/fake_sacct.h"
#include "serve_test_util.h"
#include "slurm_sync_test_util.h"

namespace peakcast::serve {
namespace {

using namespace sync_testing;
using test_support::write_fake_sacct;


// The daemon stopping while its sacct hangs: stop() ends the poll (the stand-in would sleep an
// hour; without the stop the test would hang until ctest's timeout).
TEST(SyncLoop, StopsAPollWhoseSacctHangs) {
  PollBench b;
  ASSERT_NO_FATAL_FAILURE(b.open());
  const std::string path = write_program(b.dir, "sacct", std::string() +
      "#!/bin/bash\necho \"$*\" >> '" + b.dir.file("calls.log") + "'\nsleep 3600\n");
  ASSERT_NO_FATAL_FAILURE(b.serve(false));
  SyncOptions o;
  o.sacct = path;
  SyncLoop loop(*b.service, o, 3600.0);
  loop.start();
  for (int i = 0; i < 200 && !read_file(b.dir.file("calls.log")).ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(read_file(b.dir.file("calls.log")).ok()) << "sacct was never started";
  loop.stop();
  EXPECT_FALSE((*b.service->store().get_meta(kSyncCursorKey)).has_value());  // nothing was done
}

// An exception out of a poll (here the progress hook's) ended the daemon through std::terminate
// on the sync thread: it is a failed poll (logged, counted in /metrics), and the next interval
// polls again.
TEST(SyncLoop, AnExceptionInAPollIsAFailedPollAndTheNextOneRuns) {
  PollBench b;
  ASSERT_NO_FATAL_FAILURE(b.open());
  ASSERT_NO_FATAL_FAILURE(b.serve(false));
  Service& service = *b.service;
  SyncOptions o = at_clock(write_fake_sacct(b.dir.path(), two_jobs()));
  std::atomic<int> windows{0};
  o.on_window = [&](const SyncReport&, int64_t, int64_t) {
    if (windows++ == 0) throw std::runtime_error("thrown by the first window");
  };
  SyncLoop loop(service, o, 0.05);
  loop.start();
  const std::string ok = "peakcast_sync_runs_total{result=\"ok\"} 1\n";
  for (int i = 0; i < 400 && service.sync_metrics().render().find(ok) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  loop.stop();
  const std::string metrics = service.sync_metrics().render();
  EXPECT_NE(metrics.find(ok), std::string::npos) << "no poll after the one that threw: " << metrics;
  EXPECT_NE(metrics.find("peakcast_sync_runs_total{result=\"failed\"} 1\n"), std::string::npos) << metrics;
  EXPECT_EQ(*service.store().count(), 2u);  // the second poll went on from the first one's cursor
}

// peakcast_sync_jobs_stored_total counts the completions the polls stored. A catch-up that
// stores a window's jobs and then fails on a later window keeps them (the cursor moved past
// them), but the counter took only a successful poll's total, so those never showed.
TEST(SyncLoop, JobsStoredByAPollThatFailsLaterAreCounted) {
  PollBench b;
  ASSERT_NO_FATAL_FAILURE(b.open());
  ASSERT_NO_FATAL_FAILURE(b.serve(false));
  Service& service = *b.service;
  // The first of three day-long windows lists job 40; sacct fails for the later ones.
  const std::string first_end = sacct_time(kClock - 2 * 86400);
  const std::string path = write_program(b.dir, "sacct", std::string() +
      "#!/bin/bash\n"
      "S=''; E=''\n"
      "while [ $# -gt 0 ]; do case \"$1\" in -S) S=\"$2\"; shift;; -E) E=\"$2\"; shift;; esac; shift; done\n"
      "[ \"$E\" = '" + first_end + "' ] || { echo 'sacct: error: slurmdbd: connection refused' >&2; exit 1; }\n"
      "echo 'JobID|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS'\n"
      "echo '40|j40|alice|COMPLETED|" + sacct_time(kClock - 60 * 3600 - 60) + "|" + sacct_time(kClock - 60 * 3600 - 60) +
      "|" + sacct_time(kClock - 60 * 3600) + "|1G|'\n"
      "echo '40.batch|batch||COMPLETED|" + sacct_time(kClock - 60 * 3600 - 60) + "|" +
      sacct_time(kClock - 60 * 3600 - 60) + "|" + sacct_time(kClock - 60 * 3600) + "||300M'\n");
  SyncOptions o = at_clock(path);
  o.initial_lookback_s = 3 * 86400;
  o.fetch_scripts = false;
  SyncLoop loop(service, o, 3600.0);
  loop.start();
  const std::string failed = "peakcast_sync_runs_total{result=\"failed\"} 1\n";
  for (int i = 0; i < 400 && service.sync_metrics().render().find(failed) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  loop.stop();
  const std::string metrics = service.sync_metrics().render();
  ASSERT_NE(metrics.find(failed), std::string::npos) << metrics;
  ASSERT_EQ(*service.store().count(), 1u);  // window one's job, kept
  EXPECT_NE(metrics.find("peakcast_sync_jobs_stored_total 1\n"), std::string::npos) << metrics;
}

uint64_t metric(const std::string& text, const std::string& sample) {
  const size_t at = text.find("\n" + sample + " ");  // a sample's line, not its HELP
  if (at == std::string::npos) return ~uint64_t{0};
  return std::stoull(text.substr(at + sample.size() + 2));
}

// slurmdbd received a job's record later than --sync-overlap after its end (slurmdbd down, or a
// slurmctld that was down sending its backlog): the job ended before the cursor, and no poll
// lists it again. The daily re-scan reads the last two days again and stores it, counted in the
// metrics once; the jobs it reads again that were stored are not stored or counted again.
TEST(SyncLoop, AJobSlurmdbdRecordedAfterTheOverlapIsStoredByTheRescan) {
  PollBench b;
  ASSERT_NO_FATAL_FAILURE(b.open());
  ASSERT_NO_FATAL_FAILURE(b.serve());
  Service& service = *b.service;
  int64_t now = kClock;
  FakeSacct f;  // jobs 12 and 13 ended within the overlap
  f.listing = "JobID|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS\n" + finished_job_rows("12", kClock - 400) +
              finished_job_rows("13", kClock - 390);
  f.now_iso = sacct_time(kClock);
  SyncOptions o = at_clock(write_fake_sacct(b.dir.path(), f));
  o.clock = [&now] { return now; };
  o.initial_lookback_s = 3600;
  o.fetch_scripts = false;
  const auto poll_and_rescan = [&]() -> Result<std::optional<SyncReport>> {
    auto polled = sync_service(service, o);
    if (!polled) return polled.status();
    return rescan_service_if_due(service, o);
  };

  auto first = poll_and_rescan();  // jobs 12 and 13; the first re-scan has nothing behind the cursor
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->added, 0u);
  EXPECT_EQ(*service.store().count(), 2u);

  // Job 50 ended an hour before kClock; slurmdbd has it only now, ten minutes later.
  f.listing += finished_job_rows("50", kClock - 3600);
  now = kClock + 600;
  f.now_iso = sacct_time(now);
  o.sacct = write_fake_sacct(b.dir.path(), f);
  auto second = poll_and_rescan();
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_FALSE(second->has_value());  // not due for a day
  EXPECT_EQ(*service.store().count(), 2u) << "a poll lists from the cursor minus the overlap only";

  now = kClock + 86400 + 600;
  f.now_iso = sacct_time(now);
  o.sacct = write_fake_sacct(b.dir.path(), f);
  auto third = poll_and_rescan();
  ASSERT_TRUE(third.ok()) << third.status().message();
  ASSERT_TRUE(third->has_value()) << "a day since the last re-scan";
  const SyncReport& rescan = **third;
  EXPECT_EQ(rescan.added, 1u);
  EXPECT_EQ(rescan.known, 2u);  // 12 and 13, read again
  EXPECT_EQ(rescan.since, now - o.rescan_lookback_s);
  EXPECT_EQ(rescan.until, now - o.overlap_s);  // where the poll before it left the cursor
  EXPECT_EQ(*service.store().count(), 3u);
  ASSERT_TRUE((*service.store().find("50")).has_value());
  EXPECT_NE(describe(rescan).find("1 stored late"), std::string::npos) << describe(rescan);
  EXPECT_EQ(*(*service.store().get_meta(kSyncRescanKey)), std::to_string(now));
  EXPECT_EQ(*(*service.store().get_meta(kSyncCursorKey)), std::to_string(now - o.overlap_s));  // unmoved

  auto again = rescan_service(service, o);  // everything known
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->added, 0u);
  EXPECT_EQ(again->known, 3u);
  const std::string text = service.sync_metrics().render();
  EXPECT_EQ(metric(text, "peakcast_sync_jobs_stored_total"), 3u) << text;
  EXPECT_EQ(metric(text, "peakcast_sync_rescan_jobs_stored_total"), 1u) << text;
}

// The daemon stopping (SIGTERM) during the daily re-scan: the re-scan ends there and its time is
// not kept (due again at the next poll), as before, but it was logged as a finished re-scan and
// counted in peakcast_sync_rescans_total{result="ok"}. It is counted as stopped and logged so,
// and the last re-scan's time in /metrics stays where it was.
TEST(SyncLoop, ARescanStoppedByTheShutdownIsCountedAsStopped) {
  PollBench b;
  ASSERT_NO_FATAL_FAILURE(b.open());
  ASSERT_NO_FATAL_FAILURE(b.serve(false));
  Service& service = *b.service;
  // The poll's listing (up to -E now) comes at once, empty; the re-scan's windows end at a time
  // (the cursor), and there the stand-in hangs.
  const std::string started = b.dir.file("rescan.started");
  const std::string path = write_program(b.dir, "sacct", std::string() +
      "#!/bin/bash\n"
      "E=''\n"
      "while [ $# -gt 0 ]; do case \"$1\" in -E) E=\"$2\"; shift;; esac; shift; done\n"
      "if [ \"$E\" != now ]; then touch '" + started + "'; sleep 3600; fi\n"
      "echo 'JobID|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS'\n");
  SyncOptions o = at_clock(path);
  o.initial_lookback_s = 3600;
  o.fetch_scripts = false;
  std::mutex mu;
  std::vector<std::string> lines;  // what the loop logged at info and above
  set_log_sink([&](LogLevel level, std::string_view m) {
    if (level < LogLevel::kInfo) return;
    std::lock_guard lock(mu);
    lines.emplace_back(m);
  });
  {
    SyncLoop loop(service, o, 3600.0);
    loop.start();
    for (int i = 0; i < 400 && !read_file(started).ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    loop.stop();
  }
  set_log_sink({});
  ASSERT_TRUE(read_file(started).ok()) << "the re-scan's sacct was never started";
  const std::string text = service.sync_metrics().render();
  EXPECT_EQ(metric(text, "peakcast_sync_runs_total{result=\"ok\"}"), 1u) << text;  // the poll
  EXPECT_EQ(metric(text, "peakcast_sync_rescans_total{result=\"stopped\"}"), 1u) << text;
  EXPECT_EQ(metric(text, "peakcast_sync_rescans_total{result=\"ok\"}"), 0u) << text;
  EXPECT_EQ(metric(text, "peakcast_sync_rescans_total{result=\"failed\"}"), 0u) << text;
  EXPECT_EQ(metric(text, "peakcast_sync_last_rescan_timestamp_seconds"), 0u) << text;
  EXPECT_FALSE((*service.store().get_meta(kSyncRescanKey)).has_value());
  size_t said_stopped = 0;
  for (const std::string& l : lines) {
    if (l.find("re-scan") != std::string::npos && l.find("stopped") != std::string::npos) ++said_stopped;
  }
  EXPECT_EQ(said_stopped, 1u) << ::testing::PrintToString(lines);
}

}  // namespace
}  // namespace peakcast::serve
