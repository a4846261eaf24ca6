// `peakcast tokenize` and `peakcast embed` end to end on the fixtures: ids equal the golden file,
// embed equals reference.json, bad input exits 2. Skipped when the binary or the data is absent.

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/qwen2_test_util.h"
#include "support/command.h"
#include "peakcast/core/io.h"

namespace {

namespace fs = std::filesystem;
using peakcast::models::qwen2::testing::kQwen2Dir;

using peakcast::test_support::CmdResult;
const std::string& kBinary = peakcast::test_support::kPeakcastBinary;

// stdout alone: the JSON lines a test parses.
CmdResult run(const std::string& args) { return peakcast::test_support::run_peakcast(args, "2>/dev/null"); }

std::vector<nlohmann::json> lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

class Qwen2Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built";
    REQUIRE_QWEN2_FIXTURES();
    dir_ = peakcast::models::qwen2::testing::fresh_dir("cli");
  }
  std::string dir_;
};

TEST_F(Qwen2Cli, TokenizeEqualsGoldenIds) {
  auto golden = lines(*peakcast::read_file(kQwen2Dir + "tokenizer-golden.jsonl.gz"));
  golden.resize(120);  // scripts and the first edge cases; the library test reads every line
  std::ofstream in(dir_ + "/texts.jsonl");
  for (const auto& g : golden) in << nlohmann::json{{"text", g["text"]}}.dump() << "\n";
  in.close();
  auto r = run("tokenize --tokenizer " + kQwen2Dir + "tokenizer.json.gz --max-added-id 151664 " + dir_ + "/texts.jsonl");
  ASSERT_EQ(r.exit_code, 0);
  auto out = lines(r.out);
  ASSERT_EQ(out.size(), golden.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i]["ids"], golden[i]["ids"]) << golden[i]["name"];
}

TEST_F(Qwen2Cli, EmbedEqualsReference) {
  auto ref = nlohmann::json::parse(*peakcast::read_file(kQwen2Dir + "tiny-f32/reference.json"));
  std::ofstream in(dir_ + "/ids.jsonl");
  for (const auto& i : ref["inputs"]) in << nlohmann::json{{"ids", i["input_ids"]}}.dump() << "\n";
  in.close();
  auto r = run("embed --base " + kQwen2Dir + "tiny-f32 " + dir_ + "/ids.jsonl");
  ASSERT_EQ(r.exit_code, 0);
  auto out = lines(r.out);
  ASSERT_EQ(out.size(), ref["inputs"].size());
  for (size_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(out[k]["n_tokens"], ref["inputs"][k]["input_ids"].size());
    for (const char* f : {"mean_pooled", "last_token"}) {
      const auto got = out[k][f].get<std::vector<double>>();
      const auto want = ref["inputs"][k][f].get<std::vector<double>>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-5) << f << " " << j;
    }
  }
}

TEST_F(Qwen2Cli, BadInputExitsTwo) {
  std::ofstream(dir_ + "/bad_id.jsonl") << "{\"ids\": [1, 2, 2048]}\n";
  EXPECT_EQ(run("embed --base " + kQwen2Dir + "tiny-f32 " + dir_ + "/bad_id.jsonl").exit_code, 2);
  std::ofstream(dir_ + "/empty.jsonl") << "\n";
  EXPECT_EQ(run("embed --base " + kQwen2Dir + "tiny-f32 " + dir_ + "/empty.jsonl").exit_code, 2);
  std::ofstream(dir_ + "/no_ids.jsonl") << "{\"ids\": []}\n";
  EXPECT_EQ(run("embed --base " + kQwen2Dir + "tiny-f32 " + dir_ + "/no_ids.jsonl").exit_code, 2);
  std::ofstream(dir_ + "/ok.jsonl") << "{\"ids\": [1]}\n";
  EXPECT_EQ(run("embed --base " + dir_ + " " + dir_ + "/ok.jsonl").exit_code, 2);  // no weights
  std::ofstream(dir_ + "/notext.jsonl") << "{\"txt\": \"a\"}\n";
  EXPECT_EQ(run("tokenize --tokenizer " + kQwen2Dir + "tokenizer.json.gz " + dir_ + "/notext.jsonl").exit_code, 2);
  EXPECT_EQ(run("tokenize --tokenizer " + dir_ + "/missing.json " + dir_ + "/ok.jsonl").exit_code, 2);
}

}  // namespace
