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

// The SlurmSync tests, each with its bench open.
class SlurmSync : public ::testing::Test, protected PollBench {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(open()); }
};

TEST_F(SlurmSync, TurnsFinishedJobsIntoCompletionsOnceAndKeepsACursor) {
  ASSERT_NO_FATAL_FAILURE(serve());
  const SyncOptions o = at_clock(write_fake_sacct(dir.path(), two_jobs()));
  const CompletionSink sink = into_service();

  auto first = sync_once(service->store(), sink, o);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->finished, 2u);
  EXPECT_EQ(first->added, 2u);
  EXPECT_EQ(first->with_script, 1u);
  EXPECT_EQ(first->since, kClock - o.initial_lookback_s);
  EXPECT_EQ(first->windows, 7u);  // a week in windows of a day

  auto rows = service->store().recent(HistoryFilter{"alice", ""}, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].peak_mem_bytes, 217915392u);  // the step's MaxRSS
  EXPECT_EQ((*rows)[0].req_mem_bytes, 600ull << 20);
  EXPECT_EQ((*rows)[0].script_key, ingest::script_sha256("#!/bin/bash\nperl alloc.pl 200\n"));
  auto oom = service->store().recent(HistoryFilter{"bob", ""}, 10);
  ASSERT_EQ(oom->size(), 1u);
  EXPECT_TRUE((*oom)[0].censored);

  // Twice: nothing new, no script fetched again, the cursor moved back by the overlap only.
  auto second = sync_once(service->store(), sink, o);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->added, 0u);
  EXPECT_EQ(second->known, 2u);
  EXPECT_EQ(second->since, kClock - o.overlap_s);
  EXPECT_EQ(service->history_size(), 2u);
  auto calls = read_file(dir.file("calls.log"));
  ASSERT_TRUE(calls.ok());
  size_t script_fetches = 0;
  for (auto line : split_lines(*calls)) script_fetches += line.starts_with("-B") ? 1 : 0;
  EXPECT_EQ(script_fetches, 1u);  // jobs 12 and 13 in one call, on the first poll only
  EXPECT_NE(calls->find("-B -j 12,13"), std::string::npos) << *calls;
  EXPECT_NE(calls->find("-S " + sacct_time(kClock - o.overlap_s)), std::string::npos);
}

// A GPU job that asks for no memory under a DefMemPerGPU runs with DefMemPerGPU x its GPUs
// (sacct's AllocTRES mem=), what the Slurm hook sends, while its ReqMem keeps the DefMemPerCPU x
// CPUs default given at submission (slurmctld 22.05.8: 600M against 500M for -n 2 --gpus=2). The
// poll learned ReqMem: job 41's row was not the request the daemon answered, and job 40 (one CPU:
// ReqMem 300M, below the 500M sent) was taken for a job whose request the hook lowered, stored at
// 500M "ran at" 300M. Learned at AllocTRES, both rows are the request the hook sent.
TEST_F(SlurmSync, AGpuJobUnderDefMemPerGpuIsLearnedAtTheMemoryItRanUnder) {
  ASSERT_NO_FATAL_FAILURE(serve());
  const std::string script = "#!/bin/bash\npython train.py\n";
  for (const char* name : {"gdef1", "gdef2"}) {  // the hook's requests: 250M x 2 GPUs
    nlohmann::json req = testing::request_json("alice", script, kClock - 460, 500ull << 20);
    req["job_name"] = name;
    req["req_gpus"] = 2;
    const Reply r = service->predict(req.dump());
    ASSERT_EQ(r.status, 200) << r.body;
  }
  FakeSacct f;
  f.listing =
      "JobID|JobIDRaw|JobName|User|Account|Partition|State|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqCPUS|NNodes|ReqMem|ReqTRES|AllocTRES|MaxRSS|TRESUsageInTot|TRESUsageInMax\n"
      "40|40|gdef1|alice|acct|gpudef|COMPLETED|2024-05-01T21:39:00|2024-05-01T21:39:01|2024-05-01T21:40:00|00:00:59|00:05:00|1|1|1|300M|billing=1,cpu=1,gres/gpu=2,mem=300M,node=1|billing=1,cpu=1,gres/gpu=2,mem=500M,node=1|||\n"
      "40.batch|40|batch||acct||COMPLETED|2024-05-01T21:39:01|2024-05-01T21:39:01|2024-05-01T21:40:00|00:00:59||1||1||||104857600||\n"
      "41|41|gdef2|alice|acct|gpudef|COMPLETED|2024-05-01T21:39:00|2024-05-01T21:39:01|2024-05-01T21:40:00|00:00:59|00:05:00|2|2|1|600M|billing=2,cpu=2,gres/gpu=2,mem=600M,node=1|billing=2,cpu=2,gres/gpu=2,mem=500M,node=1|||\n"
      "41.batch|41|batch||acct||COMPLETED|2024-05-01T21:39:01|2024-05-01T21:39:01|2024-05-01T21:40:00|00:00:59||2||1||||104857600||\n";
  f.scripts["40"] = f.scripts["41"] = script;
  f.now_iso = sacct_time(kClock);
  auto r = sync_once(service->store(), into_service(), at_clock(write_fake_sacct(dir.path(), f)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->added, 2u);
  auto rows = service->store().recent(HistoryFilter{"alice", ""}, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  for (const Job& j : *rows) {
    EXPECT_EQ(j.req_mem_bytes, 500ull << 20) << "job " << j.job_id;
    EXPECT_FALSE(j.ran_mem_bytes) << "job " << j.job_id << " taken for a lowered one, ran at " << *j.ran_mem_bytes;
    EXPECT_DOUBLE_EQ(j.label(Resource::kMem), 100.0 / 500.0) << "job " << j.job_id;
  }
}

// sacct -s selects the jobs that were in a finished state during the window and prints the state
// they are in now: one requeued since has no final peak. The sacct reader leaves out the states
// it knows as unfinished (RUNNING, REQUEUED...); SPECIAL_EXIT (requeued and held by an epilog) and
// the rest that are not a final state were stored, learned as an exact label, and held their
// job_id against the real completion. Such a job is left for the window where it ends.
TEST_F(SlurmSync, AJobRequeuedSinceIsLearnedOnlyOnceItHasFinished) {
  FakeSacct f = two_jobs();
  const std::string requeued =
      "14|14|again|carol|acct|debug|{STATE}|2024-05-01T21:38:00|2024-05-01T21:38:01|2024-05-01T21:41:00|00:02:59|00:05:00|1|1|1|1G|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|||\n"
      "14.batch|14|batch||acct||{STATE}|2024-05-01T21:38:01|2024-05-01T21:38:01|2024-05-01T21:41:00|00:02:59||1||1||||536870912||\n";
  auto with_state = [&](const std::string& state) {
    std::string rows = requeued;
    for (size_t at; (at = rows.find("{STATE}")) != std::string::npos;) rows.replace(at, 7, state);
    return rows;
  };
  const std::string base = f.listing;
  f.listing = base + with_state("SPECIAL_EXIT");
  ASSERT_NO_FATAL_FAILURE(serve());
  SyncOptions o = at_clock(write_fake_sacct(dir.path(), f));
  const CompletionSink sink = into_service();
  auto first = sync_once(service->store(), sink, o);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->added, 2u);
  EXPECT_GE(first->skipped, 1u);
  bool said = false;
  for (const std::string& n : first->notes) said |= n.find("job 14: state SPECIAL_EXIT has not finished") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_TRUE(service->store().recent(HistoryFilter{"carol", ""}, 10)->empty());

  f.listing = base + with_state("COMPLETED");
  o.sacct = write_fake_sacct(dir.path(), f);
  auto second = sync_once(service->store(), sink, o);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->added, 1u);
  auto rows = service->store().recent(HistoryFilter{"carol", ""}, 10);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].peak_mem_bytes, 536870912u);
}

// A job named with '|' (sbatch -J 'sweep|lr=0.1') and an AdminComment holding '|': sacct -P
// with its default delimiter gives a row that cannot be read (two free-text columns), and the job
// was skipped, never learned. slurm-sync asks for the unit separator; this stand-in delimits by
// what --delimiter says, as sacct does.
TEST_F(SlurmSync, AJobNamedWithAPipeIsLearned) {
  const std::string path = write_program(dir, "sacct", std::string() +
      "#!/bin/bash\n"
       "echo \"$*\" >> '" + dir.file("calls.log") + "'\n"
       "[ \"$1\" = -B ] && { echo NONE; exit 0; }\n"
       "d='|'\n"
       "for a in \"$@\"; do case \"$a\" in --delimiter=*) d=\"${a#--delimiter=}\";; esac; done\n"
       "row() { local IFS=\"$d\"; echo \"$*\"; }\n"
       "row JobID JobIDRaw JobName User Account Partition State Submit Start End Elapsed Timelimit NCPUS "
       "ReqCPUS NNodes ReqMem ReqTRES AllocTRES MaxRSS TRESUsageInTot TRESUsageInMax AdminComment\n"
       "row 21 21 'sweep|lr=0.1' alice acct debug COMPLETED 2024-05-01T10:00:00 2024-05-01T10:00:01 "
       "2024-05-01T10:00:10 00:00:09 00:05:00 1 1 1 600M cpu=1,mem=600M cpu=1,mem=600M '' '' '' 'site|note'\n"
       "row 21.batch 21 batch '' acct '' COMPLETED 2024-05-01T10:00:01 2024-05-01T10:00:01 "
       "2024-05-01T10:00:10 00:00:09 '' 1 '' 1 '' '' '' 217915392 '' '' ''\n");
  SyncOptions o = at_clock(path);
  o.fetch_scripts = false;
  o.max_window_s = o.initial_lookback_s;  // this stand-in lists its job whatever the window
  std::vector<Job> got;
  auto r = sync_once(*store, [&](const Job& j) -> Result<bool> { got.push_back(j); return true; }, o);
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

// A stand-in closer to sacct 22.05 on the columns and states it is asked for: `listing`
// ('|'-delimited, header first) may hold more columns than --format names; only those named are
// printed, in --format's order (a column it lacks prints empty), and a job (with its steps) is
// listed only when its row's state is one -s names (by sacct's short code) and its End lies in
// [-S, -E]. `-B` prints nothing.
std::string write_selecting_sacct(const TempDir& dir, const std::string& listing) {
  {
    std::ofstream l(dir.file("full_listing.txt"));
    l << listing;
  }
  return write_program(dir, "sacct", std::string() + "#!/bin/bash\n"
      "echo \"$*\" >> '" + dir.file("calls.log") + "'\n"
      "d='|'; S=''; E=''; F=''; ST=''\n"
      "while [ $# -gt 0 ]; do\n"
      "  case \"$1\" in\n"
      "    --delimiter=*) d=\"${1#--delimiter=}\" ;;\n"
      "    --format=*) F=\"${1#--format=}\" ;;\n"
      "    -S) S=\"$2\"; shift ;;\n"
      "    -E) E=\"$2\"; shift ;;\n"
      "    -s) ST=\"$2\"; shift ;;\n"
      "    -B) exit 0 ;;\n"
      "  esac\n"
      "  shift\n"
      "done\n"
      "[ \"$E\" = now ] && E='" + sacct_time(kClock) + "'\n"
      R"sh(awk -F'|' -v OFS="$d" -v S="$S" -v E="$E" -v F="$F" -v ST="$ST" '
BEGIN {
  n = split(F, want, ","); m = split(ST, st, ",")
  for (i = 1; i <= m; i++) asked[st[i]] = 1
  code["COMPLETED"] = "CD"; code["FAILED"] = "F"; code["TIMEOUT"] = "TO"; code["OUT_OF_MEMORY"] = "OOM"
  code["CANCELLED"] = "CA"; code["NODE_FAIL"] = "NF"; code["PREEMPTED"] = "PR"; code["DEADLINE"] = "DL"
  code["BOOT_FAIL"] = "BF"
}
function out(   k, line) {
  line = ""
  for (k = 1; k <= n; k++) line = line (k > 1 ? OFS : "") (want[k] in col ? $(col[want[k]]) : "")
  print line
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; for (k = 1; k <= n; k++) $k = want[k]; NF = n; print; next }
{
  id = $(col["JobID"]); split(id, part, "."); job = part[1]
  if (index(id, ".") == 0) {
    s = $(col["State"]); sub(/ by .*/, "", s)
    keep[job] = (s in code) && (code[s] in asked) && $(col["End"]) >= S && $(col["End"]) <= E
  }
  if (keep[job]) out()
}' ')sh" + dir.file("full_listing.txt") + "'\n");
}

// A job that ran into its --deadline ends DEADLINE: a finished state (/v1/complete takes it;
// its peak is a lower bound as a TIMEOUT's is), but the poll's `-s` never named it, so sacct
// never listed such a job and the daemon never learned one.
TEST_F(SlurmSync, AJobEndedAtItsDeadlineIsListedAndLearned) {
  const std::string path = write_selecting_sacct(dir,
      "JobID|JobIDRaw|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS\n"
      "30|30|late|alice|DEADLINE|2024-05-01T21:00:00|2024-05-01T21:00:01|2024-05-01T21:40:00|1G|\n"
      "30.batch|30|batch||CANCELLED|2024-05-01T21:00:01|2024-05-01T21:00:01|2024-05-01T21:40:00||300M\n"
      "31|31|done|alice|COMPLETED|2024-05-01T21:00:00|2024-05-01T21:00:01|2024-05-01T21:41:00|1G|\n"
      "31.batch|31|batch||COMPLETED|2024-05-01T21:00:01|2024-05-01T21:00:01|2024-05-01T21:41:00||200M\n");
  SyncOptions o = at_clock(path);
  o.fetch_scripts = false;
  std::map<std::string, Job> got;
  auto r = sync_once(*store, [&](const Job& j) -> Result<bool> { got[j.job_id] = j; return true; }, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(got.count("31"), 1u);
  ASSERT_EQ(got.count("30"), 1u) << "the DEADLINE job was not listed";
  EXPECT_EQ(got["30"].state, "DEADLINE");
  EXPECT_EQ(got["30"].peak_mem_bytes, 300u << 20);
}

// Slurm's OverMemoryKill form is the job FAILED with ExitCode 0:9 and a step "CANCELLED by 0"
// (docs/formats.md). The poll did not ask for ExitCode, so the state pair alone decided, and a
// job whose step root cancelled (scancel as root) and whose script then exited 1 was learned as
// killed for memory: a censored label (a lower bound) where the run said nothing of the kind,
// and the script's next answers raised above its request.
TEST_F(SlurmSync, AStepCancelledByRootIsNotTakenForAMemoryKillWhenTheExitCodeSaysOtherwise) {
  const std::string path = write_selecting_sacct(dir,
      "JobID|JobIDRaw|JobName|User|State|ExitCode|Submit|Start|End|ReqMem|MaxRSS\n"
      "32|32|admin|alice|FAILED|1:0|2024-05-01T21:00:00|2024-05-01T21:00:01|2024-05-01T21:40:00|1G|\n"
      "32.batch|32|batch||FAILED|1:0|2024-05-01T21:00:01|2024-05-01T21:00:01|2024-05-01T21:40:00||100M\n"
      "32.0|32|step||CANCELLED by 0|0:15|2024-05-01T21:00:02|2024-05-01T21:00:02|2024-05-01T21:39:59||300M\n"
      "33|33|big|alice|FAILED|0:9|2024-05-01T21:00:00|2024-05-01T21:00:01|2024-05-01T21:41:00|1G|\n"
      "33.batch|33|batch||CANCELLED by 0|0:9|2024-05-01T21:00:01|2024-05-01T21:00:01|2024-05-01T21:41:00||1100M\n");
  SyncOptions o = at_clock(path);
  o.fetch_scripts = false;
  std::map<std::string, Job> got;
  auto r = sync_once(*store, [&](const Job& j) -> Result<bool> { got[j.job_id] = j; return true; }, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(got.count("32"), 1u);
  ASSERT_EQ(got.count("33"), 1u);
  EXPECT_EQ(got["32"].state, "FAILED");
  EXPECT_FALSE(got["32"].censored);
  EXPECT_EQ(got["33"].state, "OUT_OF_MEMORY");  // the OverMemoryKill form is still read so
  EXPECT_TRUE(got["33"].censored);
}

// Four jobs over three days before kClock: a first poll of that span.
FakeSacct three_days() {
  FakeSacct f;
  f.listing = "JobID|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS\n";
  const int64_t ends[] = {kClock - 60 * 3600, kClock - 36 * 3600, kClock - 12 * 3600, kClock - 300};
  for (int i = 0; i < 4; ++i) {
    const std::string id = std::to_string(40 + i), t = sacct_time(ends[i] - 60), e = sacct_time(ends[i]);
    f.listing += id + "|j" + id + "|alice|COMPLETED|" + t + "|" + t + "|" + e + "|1G|\n";
    f.listing += id + ".batch|batch||COMPLETED|" + t + "|" + t + "|" + e + "||300M\n";
  }
  f.now_iso = sacct_time(kClock);
  return f;
}

// Options for a poll of the three days before kClock through a stand-in listing `f`.
SyncOptions over_three_days(const TempDir& dir, const FakeSacct& f) {
  SyncOptions o = at_clock(write_fake_sacct(dir.path(), f));
  o.initial_lookback_s = 3 * 86400;
  return o;
}

std::vector<std::string> listing_calls(const TempDir& dir) {
  std::vector<std::string> out;
  auto calls = read_file(dir.file("calls.log"));
  if (!calls) return out;
  for (auto line : split_lines(*calls)) {
    if (line.starts_with("-a ")) out.emplace_back(line);
  }
  return out;
}

// A first poll over three days asks sacct a day at a time (bounded memory), learns every job
// once, and leaves the cursor where a single poll would.
TEST_F(SlurmSync, AFirstPollOverDaysAsksADayAtATime) {
  SyncOptions o = over_three_days(dir, three_days());
  o.fetch_scripts = false;
  std::vector<std::pair<int64_t, int64_t>> progress;
  o.on_window = [&](const SyncReport&, int64_t from, int64_t to) { progress.emplace_back(from, to); };
  std::vector<std::string> got;
  auto r = sync_once(*store, [&](const Job& j) -> Result<bool> { got.push_back(j.job_id); return true; }, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(got, (std::vector<std::string>{"40", "41", "42", "43"}));
  EXPECT_EQ(r->windows, 3u);
  EXPECT_EQ(r->finished, 4u);
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {kClock - 3 * 86400, kClock - 2 * 86400}, {kClock - 2 * 86400, kClock - 86400}, {kClock - 86400, kClock}};
  EXPECT_EQ(progress, want);
  const auto calls = listing_calls(dir);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_NE(calls[0].find("-S " + sacct_time(kClock - 3 * 86400) + " -E " + sacct_time(kClock - 2 * 86400)),
            std::string::npos) << calls[0];
  EXPECT_NE(calls[2].find("-E now"), std::string::npos) << calls[2];
  EXPECT_EQ(*(*store->get_meta(kSyncCursorKey)), std::to_string(kClock - o.overlap_s));
  EXPECT_NE(describe(*r).find("(3 sacct windows)"), std::string::npos) << describe(*r);
}

// A window whose listing is over max_output_bytes is asked again at half its span (the stand-in
// prints too much for any window over 6 hours): every job is learned. Where even the smallest
// window is too much, the poll fails, saying which window, and the cursor stays.
TEST_F(SlurmSync, AListingTooLargeIsAskedAgainInSmallerWindows) {
  FakeSacct f = three_days();
  f.too_big_over_s = 6 * 3600;
  f.too_big_bytes = 8192;
  SyncOptions o = over_three_days(dir, f);
  o.fetch_scripts = false;
  o.max_output_bytes = 4096;
  std::vector<std::string> got;
  auto r = sync_once(*store, [&](const Job& j) -> Result<bool> { got.push_back(j.job_id); return true; }, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Once each, though three end on a boundary between two windows (sacct lists them in both).
  EXPECT_EQ(got, (std::vector<std::string>{"40", "41", "42", "43"}));
  EXPECT_EQ(r->finished, 4u);
  EXPECT_EQ(r->windows, 12u);  // three days in windows of 6 hours
  EXPECT_EQ(*(*store->get_meta(kSyncCursorKey)), std::to_string(kClock - o.overlap_s));

  PollBench other;
  ASSERT_NO_FATAL_FAILURE(other.open());
  f.too_big_over_s = 30;  // below min_window_s
  o.sacct = write_fake_sacct(other.dir.path(), f);
  auto bad = sync_once(*other.store, [&](const Job&) -> Result<bool> { return true; }, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sacct's listing of the 60 s from " + sacct_time(kClock - 3 * 86400)),
            std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("output over 4096 bytes"), std::string::npos) << bad.status().message();
  EXPECT_FALSE((*other.store->get_meta(kSyncCursorKey)).has_value());
}

// A poll stopped between windows (the daemon shutting down) keeps what it did: the cursor is at
// the end of the last window done, and the next poll goes on from there.
TEST_F(SlurmSync, AStoppedCatchUpGoesOnWhereItStopped) {
  SyncOptions o = over_three_days(dir, three_days());
  o.fetch_scripts = false;
  bool stop = false;  // asked for once the first window is done
  o.on_window = [&](const SyncReport&, int64_t, int64_t) { stop = true; };
  o.stop_requested = [&] { return stop; };
  std::vector<std::string> got;
  const auto sink = [&](const Job& j) -> Result<bool> { got.push_back(j.job_id); return true; };
  auto first = sync_once(*store, sink, o);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->stopped);
  EXPECT_EQ(first->windows, 1u);
  EXPECT_EQ(got, std::vector<std::string>{"40"});
  EXPECT_EQ(*(*store->get_meta(kSyncCursorKey)), std::to_string(kClock - 2 * 86400));
  o.stop_requested = nullptr;
  o.on_window = nullptr;
  auto second = sync_once(*store, sink, o);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->stopped);
  EXPECT_EQ(second->since, kClock - 2 * 86400);
  EXPECT_EQ(got, (std::vector<std::string>{"40", "41", "42", "43"}));
}

// New jobs' scripts come from one `sacct -B -j` call per batch, each job given its own.
TEST_F(SlurmSync, ScriptsAreFetchedInBatches) {
  FakeSacct f = three_days();
  for (int i = 0; i < 4; ++i) f.scripts[std::to_string(40 + i)] = "#!/bin/bash\necho " + std::to_string(i) + "\n";
  SyncOptions o = over_three_days(dir, f);
  o.max_window_s = 4 * 86400;  // one window
  o.scripts_per_call = 3;
  std::map<std::string, std::string> scripts;
  auto r = sync_once(*store, [&](const Job& j) -> Result<bool> {
    scripts[j.job_id] = j.script.value_or("");
    return true;
  }, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->with_script, 4u);
  for (int i = 0; i < 4; ++i) {
    // As the readers give it: redacted, without the final newline.
    EXPECT_EQ(scripts[std::to_string(40 + i)], "#!/bin/bash\necho " + std::to_string(i));
  }
  auto calls = read_file(dir.file("calls.log"));
  ASSERT_TRUE(calls.ok());
  EXPECT_NE(calls->find("-B -j 40,41,42\n"), std::string::npos) << *calls;
  EXPECT_NE(calls->find("-B -j 43\n"), std::string::npos) << *calls;

  // A batch sacct refuses for one of its ids is asked again in halves: the others keep theirs.
  PollBench other;
  ASSERT_NO_FATAL_FAILURE(other.open());
  f.refuse_script_of = "41";
  o.sacct = write_fake_sacct(other.dir.path(), f);
  scripts.clear();
  auto r2 = sync_once(*other.store, [&](const Job& j) -> Result<bool> {
    scripts[j.job_id] = j.script.value_or("");
    return true;
  }, o);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_EQ(r2->with_script, 3u);
  EXPECT_EQ(scripts["41"], "");
  EXPECT_EQ(scripts["40"], "#!/bin/bash\necho 0");
  EXPECT_EQ(scripts["42"], "#!/bin/bash\necho 2");
  EXPECT_EQ(scripts["43"], "#!/bin/bash\necho 3");
  bool noted = false;
  for (const std::string& n : r2->notes) noted = noted || n.starts_with("job 41: no script (");
  EXPECT_TRUE(noted);
}

// sacct prints its times as SLURM_TIME_FORMAT says ("relative": "Tod 21:40", a strftime
// format: whatever it gives). slurm-sync handed sacct its own environment, so where an admin's
// shell (or /etc/profile.d) set one, every row's times were unreadable: the rows were skipped as
// malformed, the cursor moved past them, and those jobs were never learned. sacct is told the
// standard format, as it is told TZ=UTC.
TEST_F(SlurmSync, SacctPrintsStandardTimesWhateverTheEnvironmentSays) {
  const std::string path = write_program(dir, "sacct", std::string() +
      "#!/bin/bash\n"
      "[ \"$1\" = -B ] && { echo NONE; exit 0; }\n"
      "d='|'\n"
      "for a in \"$@\"; do case \"$a\" in --delimiter=*) d=\"${a#--delimiter=}\";; esac; done\n"
      "row() { local IFS=\"$d\"; echo \"$*\"; }\n"
      "t() { case \"${SLURM_TIME_FORMAT:-standard}\" in standard) echo \"2024-05-01T$1\";; "
      "relative) echo \"Tod ${1%:*}\";; *) date -u -d \"2024-05-01 $1\" +\"$SLURM_TIME_FORMAT\";; esac; }\n"
      "row JobID JobIDRaw JobName User State Submit Start End ReqMem MaxRSS\n"
      "row 50 50 job alice COMPLETED $(t 21:39:00) $(t 21:39:01) $(t 21:40:00) 1G ''\n"
      "row 50.batch 50 batch '' COMPLETED $(t 21:39:01) $(t 21:39:01) $(t 21:40:00) '' 300M\n");
  SyncOptions o = at_clock(path);
  o.fetch_scripts = false;
  o.max_window_s = o.initial_lookback_s;  // this stand-in lists its job whatever the window
  for (const char* format : {"relative", "%d/%m %H:%M"}) {
    SCOPED_TRACE(format);
    ::setenv("SLURM_TIME_FORMAT", format, 1);
    std::vector<Job> got;
    auto r = sync_once(*store, [&](const Job& j) -> Result<bool> { got.push_back(j); return true; }, o);
    ::unsetenv("SLURM_TIME_FORMAT");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->skipped, 0u) << (r->notes.empty() ? "" : r->notes[0]);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].end_ms, (kClock - 400) * kMsPerSecond);  // 21:40:00
    ASSERT_TRUE(store->set_meta(kSyncCursorKey, std::to_string(kClock - 86400)).is_ok());
  }
}

// A program that does not answer is stopped at its deadline, and what it started with it (its
// process group); one running when a stop is asked for is stopped too.
TEST(RunProgram, StopsAtItsDeadlineOrWhenAskedWithWhatItStarted) {
  TempDir dir;
  const std::string pidfile = dir.file("sleep.pid");
  // The child's own child holds no pipe: only the process group's kill stops it.
  const std::vector<std::string> hang = {"bash", "-c",
                                         "sleep 30 >/dev/null 2>&1 & echo $! > '" + pidfile + "'; wait"};
  RunStop why = RunStop::kNone;
  RunLimits limits;
  limits.timeout_ms = 1000;
  auto r = run_program(hang, limits, &why);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(why, RunStop::kTimeout);
  EXPECT_EQ(r.status().message(), "bash: no answer within 1 s (stopped)");
  auto pid = read_file(pidfile);
  ASSERT_TRUE(pid.ok());
  // Killed with the group: gone, or a zombie until init reaps it, once the kill is delivered (a
  // loaded machine may take a moment; without the group's kill it sleeps its 30 s).
  const std::string stat = "/proc/" + std::string(trim(*pid)) + "/stat";
  const auto dead = [&] {
    auto state = read_file(stat);
    return !state.ok() || state->find(") Z ") != std::string::npos || state->find(") X ") != std::string::npos;
  };
  for (int i = 0; i < 1000 && !dead(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(dead()) << stat;

  RunLimits asked;
  int polls = 0;
  asked.stop_requested = [&] { return ++polls > 1; };
  auto s = run_program(hang, asked, &why);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(why, RunStop::kRequested);
  EXPECT_EQ(s.status().message(), "bash: stopped (shutting down)");

  RunLimits fine;
  fine.timeout_ms = 60'000;
  auto ok = run_program({"bash", "-c", "echo hello"}, fine, &why);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "hello\n");
  EXPECT_EQ(why, RunStop::kNone);
}

// Scripts that do not come (sacct -B hangs past its deadline, or the daemon stops meanwhile):
// the window's jobs are not stored without them (a job stored is never fetched again) but read
// again at the next poll; the cursor stays.
TEST_F(SlurmSync, JobsAreNotStoredWithoutTheScriptsThatDidNotCome) {
  for (const bool stop : {false, true}) {
    SCOPED_TRACE(stop ? "stopped" : "deadline");
    PollBench b;  // a folder and database of its own for each case
    ASSERT_NO_FATAL_FAILURE(b.open());
    FakeSacct f = three_days();
    f.scripts_hang = true;
    SyncOptions o = over_three_days(b.dir, f);
    o.max_window_s = 4 * 86400;  // one window
    o.sacct_timeout_s = stop ? 600 : 1;
    if (stop) {  // asked for once sacct -B has started
      o.stop_requested = [&] {
        auto calls = read_file(b.dir.file("calls.log"));
        return calls.ok() && calls->find("-B") != std::string::npos;
      };
    }
    size_t stored = 0;
    auto r = sync_once(*b.store, [&](const Job&) -> Result<bool> { ++stored; return true; }, o);
    EXPECT_EQ(stored, 0u);
    EXPECT_FALSE((*b.store->get_meta(kSyncCursorKey)).has_value());
    if (stop) {
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r->windows, 0u);
    } else {
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find("the new jobs' scripts: " + o.sacct + ": no answer within 1 s"),
                std::string::npos) << r.status().message();
    }
  }
}

// A sacct that hangs (slurmdbd not answering) fails the poll at sacct_timeout_s, saying which
// window; the cursor stays for the next poll.
TEST_F(SlurmSync, AHungSacctFailsThePollAtItsDeadline) {
  const std::string path = write_program(dir, "sacct", std::string() +
      "#!/bin/bash\nsleep 30\n");
  SyncOptions o = at_clock(path);
  o.initial_lookback_s = 3600;
  o.sacct_timeout_s = 1;
  auto r = sync_once(*store, [](const Job&) -> Result<bool> { return true; }, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "sacct's listing of the 3600 s from " + sacct_time(kClock - 3600) + ": " + path +
                                      ": no answer within 1 s (stopped)");
  EXPECT_FALSE((*store->get_meta(kSyncCursorKey)).has_value());
}

// The time of the last re-scan is the host's clock as it was: after the clock steps back (an NTP
// correction, a VM restored), a stored time in the future held every re-scan off until the clock
// passed it and an interval more. It is due then, and again an interval after.
TEST_F(SlurmSync, ARescanTimeInTheFutureIsDue) {
  SyncOptions o;
  int64_t now = kClock;
  o.clock = [&now] { return now; };
  ASSERT_TRUE(store->set_meta(kSyncRescanKey, std::to_string(kClock - 3600)).is_ok());
  EXPECT_FALSE(*rescan_due(*store, o));  // an hour ago: not due for a day
  ASSERT_TRUE(store->set_meta(kSyncRescanKey, std::to_string(kClock + 3 * 86400)).is_ok());
  EXPECT_TRUE(*rescan_due(*store, o)) << "the clock stepped back three days";
  now = kClock + 86400;
  ASSERT_TRUE(store->set_meta(kSyncRescanKey, std::to_string(kClock)).is_ok());
  EXPECT_TRUE(*rescan_due(*store, o));
}

// A re-scan over thousands of stored jobs: sacct's listing and a lookup each, no script fetch,
// nothing handed to the sink (no store write, no count in the metrics).
TEST_F(SlurmSync, ARescanOfKnownJobsStoresAndFetchesNothing) {
  FakeSacct f;
  f.listing = "JobID|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS\n";
  constexpr int kJobs = 2000;
  for (int i = 0; i < kJobs; ++i) f.listing += finished_job_rows(std::to_string(1000 + i), kClock - 600 - 50 * i);
  f.now_iso = sacct_time(kClock);
  SyncOptions o = at_clock(write_fake_sacct(dir.path(), f));
  o.initial_lookback_s = 2 * 86400;
  size_t handed = 0;
  const CompletionSink sink = [&](const Job& j) -> Result<bool> {
    ++handed;
    return store->insert(j);
  };
  auto polled = sync_once(*store, sink, o);
  ASSERT_TRUE(polled.ok()) << polled.status().message();
  ASSERT_EQ(polled->added, size_t{kJobs});
  ASSERT_EQ(*store->count(), size_t{kJobs});
  ASSERT_TRUE(::unlink(dir.file("calls.log").c_str()) == 0);

  handed = 0;
  auto rescan = rescan_once(*store, sink, o);
  ASSERT_TRUE(rescan.ok()) << rescan.status().message();
  EXPECT_EQ(rescan->finished, size_t{kJobs});  // up to the cursor, where the newest ended
  EXPECT_EQ(rescan->known, size_t{kJobs});
  EXPECT_EQ(rescan->added, 0u);
  EXPECT_EQ(handed, 0u);
  EXPECT_EQ(*store->count(), size_t{kJobs});
  auto calls = read_file(dir.file("calls.log"));
  ASSERT_TRUE(calls.ok());
  EXPECT_EQ(calls->find("-B"), std::string::npos) << "no script fetch for known jobs";
}

// A job requeued after it completed (scontrol requeue): Slurm keeps its id and gives it a new
// submit time once the first run has ended; sacct (without --duplicates) then lists the second
// run only. The store keyed completions by job id, so the second run was taken as known and
// never learned. It is a run of its own; read again, it is known.
TEST_F(SlurmSync, ASecondRunOfARequeuedJobIsLearnedAsARunOfItsOwn) {
  ASSERT_NO_FATAL_FAILURE(serve());
  const std::string header = "JobID|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS\n";
  const auto run = [](int64_t submit, int64_t end, const std::string& peak) {
    const std::string s = sacct_time(submit), t = sacct_time(submit + 10), e = sacct_time(end);
    return "60|again|carol|COMPLETED|" + s + "|" + t + "|" + e + "|1G|\n" +
           "60.batch|batch||COMPLETED|" + t + "|" + t + "|" + e + "||" + peak + "\n";
  };
  int64_t now = kClock;
  FakeSacct f;
  f.listing = header + run(kClock - 3000, kClock - 2400, "300M");
  f.now_iso = sacct_time(now);
  SyncOptions o = at_clock(write_fake_sacct(dir.path(), f));
  o.clock = [&now] { return now; };
  o.initial_lookback_s = 3600;
  o.fetch_scripts = false;
  const CompletionSink sink = into_service();
  auto first = sync_once(service->store(), sink, o);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->added, 1u);

  now = kClock + 1200;  // requeued at kClock - 2300, its second run ended at kClock + 900
  f.listing = header + run(kClock - 2300, kClock + 900, "700M");
  f.now_iso = sacct_time(now);
  o.sacct = write_fake_sacct(dir.path(), f);
  auto second = sync_once(service->store(), sink, o);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->added, 1u);
  EXPECT_EQ(second->known, 0u);
  EXPECT_EQ(*service->store().count(), 2u);
  EXPECT_EQ(service->history_size(), 2u);
  auto rows = service->store().recent(HistoryFilter{"carol", ""}, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].peak_mem_bytes, 700ull << 20);  // newest first
  EXPECT_EQ((*rows)[1].peak_mem_bytes, 300ull << 20);
  EXPECT_EQ((**service->store().find("60")).submit_ms, (kClock - 2300) * 1000);  // the last run

  auto third = sync_once(service->store(), sink, o);  // the same run read again
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_EQ(third->added, 0u);
  EXPECT_EQ(third->known, 1u);
  EXPECT_EQ(*service->store().count(), 2u);
}

TEST_F(SlurmSync, FailingSacctLeavesTheCursorAlone) {
  SyncOptions o;
  o.sacct = "/bin/false";
  auto r = sync_once(*store, [](const Job&) -> Result<bool> { return true; }, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exited with status 1"), std::string::npos);
  EXPECT_FALSE((*store->get_meta(kSyncCursorKey)).has_value());
}

// A --sacct program that prints something else: the error says so and names the program, not the
// reader's --columns hint (slurm-sync has no such option: it chose the columns itself).
TEST_F(SlurmSync, ASacctThatPrintsSomethingElseIsNamed) {
  const std::string fake = write_program(dir, "garbage", std::string() +
      "#!/bin/sh\necho 'hello world'\n");
  SyncOptions o;
  o.sacct = fake;
  auto r = sync_once(*store, [](const Job&) -> Result<bool> { return true; }, o);
  ASSERT_FALSE(r.ok());
  const std::string why = r.status().message();
  EXPECT_EQ(why.rfind("'" + fake + "' printed something that is not `sacct -P --format=", 0), 0u) << why;
  EXPECT_NE(why.find("check --sacct"), std::string::npos) << why;
  EXPECT_EQ(why.find("--columns"), std::string::npos) << why;
  EXPECT_FALSE((*store->get_meta(kSyncCursorKey)).has_value());
}

TEST_F(SlurmSync, SacctTimeIsUtc) { EXPECT_EQ(sacct_time(0), "1970-01-01T00:00:00"); }

// --gpu-mem-bytes (slurm-sync and peakcastd): a size as Slurm writes one, never a negative number
// wrapped into a huge capacity.
TEST_F(SlurmSync, GpuMemoryOptionTakesSizesAndRefusesTheRest) {
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
