// sacct's other output forms: `--json`/`--yaml` documents (refused, naming the file and the
// `-P` export to use), `-n` listings in another delimiter read by `--columns`, sizes printed
// below `--units`' resolution (`0.00G`), and the ReqGRES/AllocGRES columns of Slurm <= 20.11.
#include <string>

#include "golden_util.h"  // gtest first
#include "peakcast/core/job.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"
#include "sacct_test_util.h"

namespace peakcast::ingest {
namespace {

using namespace sacct_testing;
using test_util::temp_path;
using test_util::write_text;

std::string reasons(const Trace& t) {
  std::string all;
  for (const std::string& r : t.stats.reasons) all += r + "\n";
  return all;
}

// `sacct --json` (21.08, openapi/dbv0.0.37's populate_response_format): meta first, pretty-printed
// over many lines, so each line alone is no JSON object.
constexpr std::string_view kJson2108 = R"({
   "meta": {
     "plugin": {
       "type": "openapi\/dbv0.0.37",
       "name": "Slurm OpenAPI DB v0.0.37"
     },
     "Slurm": {
       "version": {
         "major": 21,
         "micro": 5,
         "minor": 8
       },
       "release": "21.08.5"
     }
   },
   "errors": [
   ],
   "jobs": [
     {
       "account": "lab",
       "job_id": 7
     }
   ]
}
)";

// 23.02+ (data_parser): the jobs come first, meta after them.
constexpr std::string_view kJson2311 =
    R"({"jobs":[{"account":"lab","job_id":7}],"meta":{"plugin":{"type":"","name":"",)"
    R"("data_parser":"data_parser/v0.0.40","accounting_storage":"accounting_storage/slurmdbd"},)"
    R"("client":{"source":"/dev/pts/0","user":"u","group":"g"},"command":["sacct","--json"],)"
    R"("slurm":{"version":{"major":"23","micro":"4","minor":"11"},"release":"23.11.4",)"
    R"("cluster":"c"}},"errors":[],"warnings":[]})"
    "\n";

constexpr std::string_view kYaml = "---\n"
                                   "jobs:\n"
                                   "- account: lab\n"
                                   "  job_id: 7\n"
                                   "meta:\n"
                                   "  plugin:\n"
                                   "    type: \"\"\n"
                                   "  slurm:\n"
                                   "    version:\n"
                                   "      major: 23\n";

void expect_refused(std::string_view text, const std::string& name, Format format,
                    std::string_view form) {
  const std::string path = temp_path(name);
  write_text(path, text);
  ReadOptions o;
  o.format = format;
  Result<Trace> t = read_trace(path, o);
  ASSERT_FALSE(t.ok()) << name << " was read, " << (t.ok() ? reasons(*t) : "");
  const std::string& m = t.status().message();
  EXPECT_TRUE(m.starts_with(path + ": ")) << m;
  EXPECT_NE(m.find(std::string(form)), std::string::npos) << m;
  EXPECT_NE(m.find("sacct -P --format="), std::string::npos) << m;
  EXPECT_NE(m.find("docs/formats.md"), std::string::npos) << m;
}

// Until 2026-12-07 a `--json` document was read as JSONL, every line skipped with a JSON error
// ("no job could be read"), and a `--yaml` one was "cannot tell the trace format".
TEST(SacctForms, JsonAndYamlDocumentsAreRefusedNamingTheFileAndTheExportToUse) {
  expect_refused(kJson2108, "sacct2108.json", Format::kAuto, "sacct --json");
  expect_refused(kJson2311, "sacct2311.json", Format::kAuto, "sacct --json");
  expect_refused(kJson2108, "sacct2108.txt", Format::kJsonl, "sacct --json");
  expect_refused(kJson2108, "sacct2108.sacct", Format::kSacct, "sacct --json");
  expect_refused(kYaml, "sacct.yaml", Format::kAuto, "sacct --yaml");
  expect_refused(kYaml, "sacct.yaml", Format::kSacct, "sacct --yaml");
}

// The parsers refuse the documents themselves (reader.h), as read_trace() does, with the same
// message: a library caller of parse_sacct() or parse_jsonl() hears the one reason. Until
// 2026-12-07 only read_trace() checked: parse_jsonl() skipped every line of a `--json` document
// with a JSON error and parse_sacct() refused its first line as a header without JobID.
TEST(SacctForms, TheParsersThemselvesRefuseJsonAndYamlDocuments) {
  const auto expect_refused_by = [](const Status& st, const Trace& t, std::string_view form) {
    ASSERT_FALSE(st.is_ok()) << form << ": read, " << reasons(t);
    const std::string& m = st.message();
    EXPECT_TRUE(m.starts_with("doc: " + std::string(form) + " output")) << m;
    EXPECT_NE(m.find("sacct -P --format="), std::string::npos) << m;
    EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  };
  for (std::string_view json : {kJson2108, kJson2311}) {
    Trace s, j, n, w;
    expect_refused_by(parse_sacct(json, "doc", sacct_options(), s), s, "sacct --json");
    expect_refused_by(parse_jsonl(json, "doc", ReadOptions{}, j), j, "sacct --json");
    expect_refused_by(parse_nextflow(json, "doc", ReadOptions{}, n), n, "sacct --json");
    expect_refused_by(parse_swf(json, "doc", ReadOptions{}, w), w, "sacct --json");
  }
  Trace s, j;
  expect_refused_by(parse_sacct(kYaml, "doc", sacct_options(), s), s, "sacct --yaml");
  expect_refused_by(parse_jsonl(kYaml, "doc", ReadOptions{}, j), j, "sacct --yaml");
}

// A JSONL trace whose first record merely holds such words is still read as JSONL.
TEST(SacctForms, AJsonlTraceIsNotTakenForASacctDocument) {
  const std::string path = temp_path("meta.jsonl");
  write_text(path, R"({"job_id":"jobs","user":"meta","job_name":"plugin version",)"
                   R"("submit_time":0,"end_time":10})"
                   "\n");
  Result<Trace> t = read_trace(path, ReadOptions{});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->jobs.size(), 1u) << reasons(*t);
}

ReadOptions with_columns() {
  ReadOptions o = sacct_options();
  o.columns = {"JobID", "JobName", "State", "ReqMem", "MaxRSS"};
  return o;
}

// `sacct -n -P --delimiter=X` read by --columns: the delimiter is the header path's. Until
// 2026-12-07 the header-less path split on '|' only, and every row of another was skipped as
// "expected 5 fields, found 1".
TEST(SacctForms, AHeaderlessListingIsReadInTheDelimitersAHeaderIs) {
  for (char d : {'\t', ';', sacct::kUnitSeparator, '|'}) {
    std::string text = "1|a b|COMPLETED|4G|\n1.batch|batch|COMPLETED||1G\n";
    for (char& c : text) {
      if (c == '|') c = d;
    }
    Trace t;
    ASSERT_TRUE(parse_sacct(text, "n", with_columns(), t)) << int(d);
    EXPECT_EQ(t.stats.skipped, 0u) << int(d) << "\n" << reasons(t);
    ASSERT_EQ(t.jobs.size(), 1u) << int(d);
    EXPECT_EQ(t.jobs[0].job_name, "a b");
    EXPECT_EQ(t.jobs[0].peak_mem_bytes, kG);
  }
}

// A listing given --columns that has its header after all is read by it, in its delimiter, as
// check_columns allows; one in ',' is refused at the header as without --columns.
TEST(SacctForms, AListingGivenColumnsWithItsOwnHeaderInATabIsReadByIt) {
  Trace t;
  ASSERT_TRUE(parse_sacct("JobID\tJobName\tState\tReqMem\tMaxRSS\n1\ta\tCOMPLETED\t4G\t\n"
                          "1.batch\tbatch\tCOMPLETED\t\t1G\n",
                          "h", with_columns(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].peak_mem_bytes, kG);
  Trace comma;
  Status st = parse_sacct("JobID,JobName,State,ReqMem,MaxRSS\n1,a,COMPLETED,4G,\n", "h",
                          with_columns(), comma);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("h:1: header: fields delimited by ','"), std::string::npos)
      << st.message();
}

TEST(SacctForms, AHeaderlessListingInADelimiterSacctsFieldsHoldIsRefusedSayingWhy) {
  Trace t;
  Status st =
      parse_sacct("1,a,COMPLETED,4G,\n1.batch,batch,COMPLETED,,1G\n", "n", with_columns(), t);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("n:1: "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("delimited by ','"), std::string::npos) << st.message();
  Trace padded;
  st = parse_sacct("         1          a  COMPLETED         4G            \n", "n", with_columns(),
                   padded);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("padded with spaces"), std::string::npos) << st.message();
}

// Under --units=G (or T, M) sacct prints a peak below half its last decimal as 0.00G
// (convert_num_unit2: "%.2f" of the scaled value; a peak of 0 prints "0"): a peak above 0 and
// under 5.12 MiB, not one no sample caught. Until 2026-12-07 it was read as 0, "not measured", in
// the note on jobs shorter than JobAcctGatherFrequency. Its size is unknown within the printed
// resolution, so the job has no memory label, and a note of its own counts them and says how to
// export the sizes whole.
TEST(SacctForms, APeakPrintedAsZeroInALargeUnitIsNoLabelWithANoteOfItsOwn) {
  const std::string text =
      "JobID|State|ReqMem|MaxRSS|TRESUsageInTot\n"
      "1|COMPLETED|4G||\n"
      "1.batch|COMPLETED||0.00G|\n"
      "2|COMPLETED|4G||\n"
      "2.batch|COMPLETED|||cpu=00:00:01,mem=0.00T\n"
      "3|COMPLETED|4G||\n"
      "3.batch|COMPLETED||0.00G|\n"
      "3.0|COMPLETED||1.50G|\n"
      "4|COMPLETED|4G||\n"
      "4.batch|COMPLETED||0|\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "units", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 4u);
  EXPECT_FALSE(find_job(t, "1")->peak_mem_bytes);
  EXPECT_FALSE(find_job(t, "2")->peak_mem_bytes);
  EXPECT_EQ(find_job(t, "3")->peak_mem_bytes, static_cast<uint64_t>(1.5 * kG));
  EXPECT_FALSE(find_job(t, "4")->peak_mem_bytes);
  EXPECT_TRUE(has_note(t, "memory of 0 read as not measured (MaxRSS/TRESUsageIn mem= of every "
                          "step in 1 job(s))"));
  EXPECT_TRUE(has_note(t, "sacct: 2 job(s) with a memory peak printed as 0 in a unit "
                          "(MaxRSS 0.00G under --units=G)"));
}

// The same for a gres/gpumem peak (23.02+; sacct converts TRES usage in --units too): until
// 2026-12-07 a 0.00G was counted with the GPU memory no sample caught.
TEST(SacctForms, AGpuMemoryPeakPrintedAsZeroInAUnitHasANoteOfItsOwn) {
  const std::string text =
      "JobID|State|AllocTRES|TRESUsageInTot\n"
      "1|COMPLETED|cpu=1,gres/gpu:a100_80g=1,gres/gpu=1,mem=4G|\n"
      "1.batch|COMPLETED||cpu=00:00:01,gres/gpumem=0.00G,mem=1.00G\n"
      "2|COMPLETED|cpu=1,gres/gpu:a100_80g=1,gres/gpu=1,mem=4G|\n"
      "2.batch|COMPLETED||cpu=00:00:01,gres/gpumem=0,mem=1.00G\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "units", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_FALSE(find_job(t, "1")->peak_vram_bytes);
  EXPECT_FALSE(find_job(t, "2")->peak_vram_bytes);
  EXPECT_TRUE(has_note(t, "sacct: 1 job(s) with a gres/gpumem peak of 0 (every step)"));
  EXPECT_TRUE(has_note(t, "sacct: 1 job(s) with a gres/gpumem peak printed as 0 in a unit"));
}

// Slurm <= 20.11 lists a job's generic resources as ReqGRES/AllocGRES, printed as stored
// (print.c print_fields_str): `name[:type]:count` items joined by ',', a detail string adding the
// indexes (`gpu:2(IDX:0-1)`). Both counts are the job's on any node count: slurmctld writes
// ReqGRES at allocation as `--gres`'s per-node count times the nodes (node_scheduler.c
// _fill_in_gres_fields), AllocGRES likewise (_get_gres_alloc), and slurmdbd keeps them as sent.
// Where the row has no TRES GPU count, the GPU count is read from them: ReqGRES, as ReqTRES before
// AllocTRES, else AllocGRES; a GPU type names the capacity as a TRES one does. Until 2026-12-07
// the columns were ignored and such jobs had no GPU count; until 2026-12-07 ReqGRES was read on
// one node only (taken for a possibly per-node count), and a job on more had AllocGRES's count or
// none (jobs 8 and 9).
TEST(SacctForms, GpusFromReqGresAndAllocGresWhereNoTresCountsThem) {
  const std::string text =
      "JobID|NNodes|ReqGRES|AllocGRES|ReqTRES|MaxRSS\n"
      "1|1|gpu:2|gpu:2||\n"
      "2|1|gpu:tesla:2|gpu:tesla:2||\n"
      "3|1||gpu:a100_80g:2(IDX:0,2)||\n"
      "4|2|gpu:4,mps:200|gpu:4,mps:200||\n"
      "5|1|gpu:2|gpu:2|cpu=1,gres/gpu=4,mem=1G|\n"
      "6|1|mps:100|mps:100||\n"
      "7|1|gpu:tesla:x2|||\n"
      "8|2|gpu:2|||\n"
      "9|2|gpu:2|gpu:4||\n"
      "10|3||gpu:6||\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "gres", sacct_options(), t));
  EXPECT_EQ(find_job(t, "1")->req_gpus, 2);
  EXPECT_EQ(find_job(t, "2")->req_gpus, 2);
  EXPECT_EQ(find_job(t, "3")->req_gpus, 2);
  EXPECT_EQ(find_job(t, "3")->gpu_mem_bytes, 80 * kG);
  EXPECT_EQ(find_job(t, "4")->req_gpus, 4) << "the job's count, not per node";
  EXPECT_EQ(find_job(t, "8")->req_gpus, 2) << "ReqGRES is the job's count on two nodes too";
  EXPECT_EQ(find_job(t, "9")->req_gpus, 2) << "the request before the allocation";
  EXPECT_EQ(find_job(t, "10")->req_gpus, 6) << "AllocGRES, the job's count";
  EXPECT_EQ(find_job(t, "5")->req_gpus, 4) << "TRES counts them";
  EXPECT_FALSE(find_job(t, "6")->req_gpus);
  EXPECT_EQ(find_job(t, "7"), nullptr);
  ASSERT_EQ(t.stats.skipped, 1u);
  EXPECT_NE(reasons(t).find("gres:8: ReqGRES: bad GPU count in \"gpu:tesla:x2\""),
            std::string::npos)
      << reasons(t);
}

}  // namespace
}  // namespace peakcast::ingest
