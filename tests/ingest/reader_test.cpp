// GCC 12 warns, falsely, that assigning a std::optional<std::string> member of a default-made
// Job may read the string uninitialized (-Wmaybe-uninitialized, inlined at -O2). Set before the
// includes: the warning is located in libstdc++'s headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <zlib.h>

#include "golden_util.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/redact.h"

namespace peakcast::ingest {
namespace {

using test_util::golden;
using test_util::temp_path;
using test_util::write_text;

TEST(Reader, FormatNamesRoundTrip) {
  for (Format f : {Format::kAuto, Format::kSwf, Format::kNextflow, Format::kSacct, Format::kJsonl}) {
    auto back = parse_format(format_name(f));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, f);
  }
  auto bad = parse_format("csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("swf, nextflow, sacct, jsonl"), std::string::npos)
      << bad.status().message();
}

TEST(Reader, DetectsEveryGoldenFileFromContent) {
  const std::pair<const char*, Format> files[] = {
      {"small.swf", Format::kSwf},
      {"trace_demo.csv", Format::kNextflow},
      {"trace_human.tsv", Format::kNextflow},
      {"trace_script.csv", Format::kNextflow},
      {"canonical.jsonl", Format::kJsonl},
  };
  for (auto [name, want] : files) {
    auto text = read_file(golden(name));
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(detect_format(*text), want) << name;
  }
}

TEST(Reader, DetectsSacctAndUnknownContent) {
  EXPECT_EQ(detect_format("JobID|JobName|State|MaxRSS\n1|a|COMPLETED|10K\n"), Format::kSacct);
  EXPECT_EQ(detect_format("jobidraw|state\n1|COMPLETED\n"), Format::kSacct);
  EXPECT_EQ(detect_format("4242|a|COMPLETED|10K\n4242.batch|batch|COMPLETED|10K\n"), Format::kSacct);
  EXPECT_EQ(detect_format("\n\n   1 0 0 10 1 -1 5 1 60 10 1 1 1 1 1 -1 -1 -1\n"), Format::kSwf);
  EXPECT_EQ(detect_format("hello world\n"), Format::kAuto);
  EXPECT_EQ(detect_format(""), Format::kAuto);
  EXPECT_EQ(detect_format("a|b|c\n"), Format::kAuto);
  EXPECT_EQ(detect_format("; only a header\n;\n"), Format::kSwf);
}

// slurm-sync's sacct output (`--delimiter=$'\x1f'`) is told from its content like '|' output.
TEST(Reader, DetectsSacctDelimitedByTheUnitSeparator) {
  for (const char* name : {"sacct_2205.txt", "sacct_2011.txt", "sacct_unitsep.txt"}) {
    auto text = read_file(golden(name));
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(detect_format(*text), Format::kSacct) << name;
    auto trace = read_trace(golden(name));  // no --format
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->format, Format::kSacct) << name;
  }
  EXPECT_EQ(detect_format("4242\x1f" "a\x1f" "COMPLETED\n"), Format::kSacct);  // `sacct -n`
  EXPECT_EQ(detect_format("a\x1f" "b\n"), Format::kAuto);
}

// sacct with another `--delimiter`, or without -P (columns padded with spaces), is still sacct:
// its reader takes the first where it can and says why it cannot otherwise
// (SacctVersions.ADelimiterOtherThanThePipe), rather than "no known format".
TEST(Reader, DetectsSacctWithAnotherDelimiterOrWithoutP) {
  EXPECT_EQ(detect_format("JobID\tState\n1\tCOMPLETED\n"), Format::kSacct);
  EXPECT_EQ(detect_format("JobID;State\n1;COMPLETED\n"), Format::kSacct);
  EXPECT_EQ(detect_format("JobIDRaw,State\n1,COMPLETED\n"), Format::kSacct);
  EXPECT_EQ(detect_format("       JobID      State \n------------ ---------- \n"), Format::kSacct);
  EXPECT_EQ(detect_format("task_id\thash\tname\tstatus\n1\tab/12\tx\tCOMPLETED\n"), Format::kNextflow);
}

TEST(Reader, ContentWinsOverTheFileName) {
  // SWF content under a .jsonl name is still read as SWF.
  auto text = read_file(golden("small.swf"));
  ASSERT_TRUE(text.ok());
  const std::string path = temp_path("misnamed.jsonl");
  write_text(path, *text);
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kSwf);
  EXPECT_EQ(trace->jobs.size(), 4u);
}

TEST(Reader, UnknownContentIsAnErrorNamingTheFormats) {
  const std::string path = temp_path("mystery.dat");
  write_text(path, "hello world\n");
  auto trace = read_trace(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("--format"), std::string::npos);
}

TEST(Reader, GzipInputIsAcceptedWhateverTheName) {
  auto text = read_file(golden("trace_demo.csv"));
  ASSERT_TRUE(text.ok());
  const std::string path = temp_path("trace_demo.bin");
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text->data(), static_cast<unsigned>(text->size())), static_cast<int>(text->size()));
  gzclose(gz);
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kNextflow);
  EXPECT_EQ(trace->jobs.size(), 3u);
}

TEST(Reader, MissingFileIsNotFound) {
  auto trace = read_trace(golden("no-such-file.swf"));
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().kind(), ErrorKind::kNotFound);
}

TEST(Reader, BadCapIsRejected) {
  ReadOptions o;
  o.util_cap = 0;
  EXPECT_FALSE(read_trace(golden("small.swf"), o).ok());
}

TEST(Reader, SkipLineCountsKeepsAndFailsInStrictMode) {
  Trace t;
  ReadOptions o;
  o.max_reasons = 2;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(skip_line(t, o, "f:" + std::to_string(i) + ": x: bad"));
  EXPECT_EQ(t.stats.skipped, 4u);
  ASSERT_EQ(t.stats.reasons.size(), 2u);
  EXPECT_EQ(t.stats.reasons[1], "f:1: x: bad");
  o.strict = true;
  Status s = skip_line(t, o, "f:9: y: worse");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "f:9: y: worse");
}

TEST(Reader, FinalizeKeysPreferScriptThenWorkload) {
  Trace t;
  Job a;
  a.script = "echo hi\n";
  a.workload = "W";
  Job b;
  b.workload = "W";
  Job c;
  c.workload = "W";
  Job d;
  t.jobs = {a, b, c, d};
  finalize_trace(t, 1.0);
  EXPECT_FALSE(t.jobs[0].script_key.empty());
  EXPECT_NE(t.jobs[0].script_key, t.jobs[1].script_key);
  EXPECT_EQ(t.jobs[1].script_key, t.jobs[2].script_key);
  EXPECT_TRUE(t.jobs[3].script_key.empty());
  EXPECT_TRUE(t.has_scripts);
  EXPECT_EQ(t.stats.jobs, 4u);
}

// Every consumer (the history's keys, the code model, the tree route, xgboost's hashed tokens)
// reads the text peakcastd's store keeps: redacted where the job enters.
TEST(Reader, FinalizeRedactsTheIdentityTextAsTheStoreKeepsIt) {
  const std::string raw =
      "#!/bin/bash\n#SBATCH --mail-user=alice@uni.example.edu\ncd /home/alice/run\n"
      "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\npython train.py\n";
  Job j;
  j.script = raw;
  j.workload = "train /home/alice/data";
  j.job_name = "run-for-alice@uni.example.edu";
  finalize_job(j, 1.0);
  ASSERT_TRUE(j.script.has_value());
  EXPECT_EQ(*j.script, redact_script(raw));
  EXPECT_EQ(j.script->find("alice"), std::string::npos) << *j.script;
  EXPECT_EQ(j.script->find("hf_abc"), std::string::npos) << *j.script;
  EXPECT_EQ(j.script_key, script_sha256(raw));  // the key is what it always was
  EXPECT_EQ(*j.workload, redact_script("train /home/alice/data"));
  EXPECT_EQ(j.workload->find("alice"), std::string::npos) << *j.workload;
  EXPECT_EQ(j.job_name.find("alice@"), std::string::npos) << j.job_name;
  // A job finalized again (read back from the store, sent on by slurm-sync) is left as it is.
  Job again = j;
  finalize_job(again, 1.0);
  EXPECT_EQ(again.script, j.script);
  EXPECT_EQ(again.workload, j.workload);
  EXPECT_EQ(again.job_name, j.job_name);
  EXPECT_EQ(again.script_key, j.script_key);
}

}  // namespace
}  // namespace peakcast::ingest
