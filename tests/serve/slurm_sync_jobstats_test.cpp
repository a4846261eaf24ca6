// slurm-sync with jobstats: the poll asks sacct for AdminComment, and a GPU job whose summary is
// there is stored with the busiest GPU's VRAM label; a malformed summary does not stop the poll.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "peakcast/core/io.h"
#include "peakcast/ingest/jobstats.h"
#include "peakcast/serve/service.h"
#include "peakcast/serve/slurm_sync.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using testing::TempDir;

constexpr uint64_t kG = 1024ull * 1024 * 1024;

TEST(SlurmSyncJobstats, StoresVramLabelsFromAdminComment) {
  TempDir dir;
  const std::string summary = ingest::jobstats::encode_admin_comment(
      R"({"gpus": 2, "nodes": {"g1": {"cpus": 8, "used_memory": 10737418240, "total_memory": 68719476736,
          "gpu_used_memory": {"0": 21474836480, "1": 42949672960},
          "gpu_total_memory": {"0": 85899345920, "1": 85899345920}}}})");
  const std::string path = dir.file("sacct");
  {
    std::ofstream f(path);
    f << "#!/bin/bash\n"
         "echo \"$*\" >> '" << dir.file("calls.log") << "'\n"
         "if [ \"$1\" = -B ]; then echo NONE; exit 0; fi\n"
         "cat <<'EOF'\n"
         "JobID|JobIDRaw|JobName|User|Account|Partition|State|Submit|Start|End|Elapsed|Timelimit|NCPUS|ReqCPUS|NNodes|ReqMem|ReqTRES|AllocTRES|MaxRSS|TRESUsageInTot|TRESUsageInMax|AdminComment\n"
         "21|21|train|ana|ml|gpu|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:01|2024-05-01T11:00:01|01:00:00|02:00:00|8|8|1|64G|cpu=8,gres/gpu=2,mem=64G,node=1|cpu=8,gres/gpu=2,mem=64G,node=1||||" << summary << "\n"
         "22|22|cpu|ben|ml|cpu|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:00:01|2024-05-01T10:10:01|00:10:00|02:00:00|1|1|1|1G|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|100M|||JS1:broken!\n"
         "EOF\n";
  }
  ::chmod(path.c_str(), 0755);
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store.ok());
  ServiceOptions so;
  so.clock = [] { return int64_t{1'714'600'000}; };
  Service service(testing::history_model(), std::move(*store), so);
  SyncOptions o;
  o.sacct = path;
  o.clock = so.clock;
  auto report = sync_once(service.store(), [&](const Job& j) { return service.add_completion(j); }, o);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->added, 2u) << "a malformed summary does not drop its job";

  auto calls = read_file(dir.file("calls.log"));
  ASSERT_TRUE(calls.ok());
  EXPECT_NE(calls->find("AdminComment"), std::string::npos) << "the poll asks for AdminComment";

  auto rows = service.store().recent(HistoryFilter{"ana", ""}, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  const Job& j = (*rows)[0];
  ASSERT_TRUE(j.is_valid(Resource::kVram));
  EXPECT_EQ(j.gpu_mem_bytes, 80 * kG);
  EXPECT_EQ(j.peak_vram_bytes, 2 * 40 * kG);           // busiest GPU's peak x 2 GPUs
  EXPECT_DOUBLE_EQ(j.label(Resource::kVram), 0.5);       // 40 of 80 GiB
  EXPECT_EQ(j.peak_mem_bytes, 10 * kG) << "no sacct peak: jobstats' used_memory";
  bool noted = false;
  for (const std::string& n : report->notes) noted = noted || n.find("1 malformed jobstats") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace peakcast::serve
