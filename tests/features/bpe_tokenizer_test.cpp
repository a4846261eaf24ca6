// The byte-level BPE tokenizer against the Qwen2 fixtures (../shared/data/qwen2: ids checked with
// Hugging Face tokenizers itself), plus small hand-built tokenizer.json files for the loader's
// spellings and errors. Fixture tests skip when ../shared/data is absent.
#include <filesystem>
#include <map>
#include <thread>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "features/bpe/bpe_text.h"
#include "peakcast/core/io.h"
#include "peakcast/features/bpe_tokenizer.h"

namespace peakcast::features {
namespace {

const std::string kDir = PEAKCAST_SOURCE_DIR "/../shared/data/qwen2/";

// The fixture tokenizer, loaded once for the whole binary (2 MB gzip, ~1 s).
const BpeTokenizer* fixture_tokenizer() {
  static const BpeTokenizer* tok = [] () -> const BpeTokenizer* {
    if (!std::filesystem::exists(kDir + "tokenizer.json.gz")) return nullptr;
    auto t = BpeTokenizer::load(kDir + "tokenizer.json.gz", {.max_added_token_id = 151664});
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (!t) return nullptr;
    return new BpeTokenizer(std::move(t).value());
  }();
  return tok;
}

#define REQUIRE_FIXTURE()                                                         \
  const BpeTokenizer* tok = fixture_tokenizer();                                  \
  if (!tok) GTEST_SKIP() << kDir << "tokenizer.json.gz absent (needs ../shared/data)"

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (!text) return out;
  for (auto line : split_lines(*text))
    if (!trim(line).empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

void expect_all_equal(const BpeTokenizer& tok, const std::string& file, size_t expected_records) {
  const auto records = read_jsonl(kDir + file);
  ASSERT_EQ(records.size(), expected_records);
  size_t wrong = 0;
  for (const auto& r : records) {
    const auto want = r["ids"].get<std::vector<int64_t>>();
    const auto got = tok.encode(r["text"].get<std::string>());
    if (got != want && ++wrong <= 5)
      ADD_FAILURE() << r["name"].get<std::string>() << ": " << got.size() << " ids, expected "
                    << want.size();
  }
  EXPECT_EQ(wrong, 0u) << "records that differ in " << file;
}

TEST(BpeTokenizer, LoadsTheFixtureFile) {
  REQUIRE_FIXTURE();
  EXPECT_EQ(tok->vocab_entries(), 151643u);
  EXPECT_EQ(tok->merge_count(), 151387u);
  EXPECT_EQ(tok->added_token_count(), 22u);  // the Qwen3 extras above 151664 ignored
  EXPECT_EQ(tok->id_limit(), 151665);
  EXPECT_EQ(tok->token_text(151643), "<|endoftext|>");
}

TEST(BpeTokenizer, GoldenFileEveryLineEqual) {
  REQUIRE_FIXTURE();
  expect_all_equal(*tok, "tokenizer-golden.jsonl.gz", 750);
}

TEST(BpeTokenizer, FuzzFileEveryLineEqual) {
  REQUIRE_FIXTURE();
  expect_all_equal(*tok, "tokenizer-fuzz.jsonl.gz", 3000);
}

TEST(BpeTokenizer, Qwen3AddedTokensWhenKept) {
  if (!std::filesystem::exists(kDir + "tokenizer.json.gz")) GTEST_SKIP() << "needs ../shared/data";
  auto t = BpeTokenizer::load(kDir + "tokenizer.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().message();
  size_t checked = 0;
  for (const auto& r : read_jsonl(kDir + "tokenizer-golden.jsonl.gz")) {
    if (!r.contains("qwen3_ids")) continue;
    EXPECT_EQ(t->encode(r["text"].get<std::string>()), r["qwen3_ids"].get<std::vector<int64_t>>())
        << r["name"];
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST(BpeTokenizer, TruncationFileHeadAndTail) {
  REQUIRE_FIXTURE();
  // The truncation records name golden records; the text comes from there.
  std::map<std::string, std::string> texts;
  for (const auto& r : read_jsonl(kDir + "tokenizer-golden.jsonl.gz"))
    texts[r["name"].get<std::string>()] = r["text"].get<std::string>();
  const auto records = read_jsonl(kDir + "tokenizer-truncation.jsonl.gz");
  ASSERT_EQ(records.size(), 7u);
  for (const auto& r : records) {
    const std::string name = r["name"].get<std::string>();
    ASSERT_TRUE(texts.count(name)) << name;
    const auto ids = tok->encode(texts[name]);
    EXPECT_EQ(ids.size(), r["n_tokens"].get<size_t>()) << name;
    auto want = r["head_ids"].get<std::vector<int64_t>>();
    const auto tail = r["tail_ids"].get<std::vector<int64_t>>();
    want.insert(want.end(), tail.begin(), tail.end());
    EXPECT_EQ(head_tail_ids(ids, 4096), want) << name;
  }
}

TEST(BpeTokenizer, ConcurrentCallsShareTheCacheSafely) {
  REQUIRE_FIXTURE();
  const auto records = read_jsonl(kDir + "tokenizer-golden.jsonl.gz");
  std::vector<size_t> wrong(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < wrong.size(); ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < records.size(); i += 2)  // overlapping halves: shared pieces
        if (tok->encode(records[i]["text"].get<std::string>()) != records[i]["ids"].get<std::vector<int64_t>>())
          ++wrong[t];
    });
  for (auto& th : threads) th.join();
  for (size_t w : wrong) EXPECT_EQ(w, 0u);
}

TEST(BpeTokenizer, InvalidUtf8IsReplacedNotFatal) {
  REQUIRE_FIXTURE();
  // A stray 0xFF byte reads as U+FFFD, exactly as the repaired text does.
  EXPECT_EQ(tok->encode("echo \xFF done"), tok->encode("echo \xEF\xBF\xBD done"));
  EXPECT_EQ(tok->encode("\xC3"), tok->encode("\xEF\xBF\xBD"));
  EXPECT_FALSE(tok->encode("\xED\xA0\x80").empty());  // an encoded surrogate
}

// Python's bytes.decode("utf-8", errors="replace"), which the header promises: one U+FFFD per
// maximal subpart, so a multi-byte character cut short (a script truncated at a byte limit) is
// one replacement, not one per byte. Expected strings from CPython 3.
TEST(BpeText, RepairUtf8ReplacesMaximalSubpartsAsPython) {
  const std::string r = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xE2\x82", r},                      // a 3-byte sequence missing its last byte
      {"\xE2\x82" "A", r + "A"},
      {"\xF0\x9F\x98", r},                 // a 4-byte emoji cut after 3 bytes
      {"a\xF0\x9F" "b", "a" + r + "b"},
      {"\xED\xA0\x80", r + r + r},           // a surrogate: the second byte does not fit
      {"\xC0\xAF", r + r},                  // an overlong lead
      {"\xE0\x80\x80", r + r + r},
      {"\xF4\x90\x80\x80", r + r + r + r},    // above U+10FFFF
      {"\xFF\xFE", r + r},
      {"\xC3\xA9\xE2\x82", "\xC3\xA9" + r},  // valid, then truncated
  };
  for (const auto& [in, want] : cases) {
    std::string out;
    EXPECT_TRUE(bpe::repair_utf8(in, out));
    EXPECT_EQ(out, want) << "input bytes: " << in.size();
  }
}

// ---- small hand-built files ----

// Vocabulary over "a", "b", "ab", "abb", " " (Ġ) with merges in the given spelling.
std::string tiny_json(bool string_merges, const std::string& extra_merge = "") {
  nlohmann::json j;
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", " ?[^\\s]+|\\s+"}}},
                        {"behavior", "Isolated"}, {"invert", false}};
  j["model"] = {{"type", "BPE"},
                {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"abb", 3}, {"\xC4\xA0", 4}, {"\xC4\xA0" "ab", 5}}}};
  if (string_merges)
    j["model"]["merges"] = {"a b", "ab b", "\xC4\xA0 ab"};
  else
    j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "b"}),
                                                  nlohmann::json::array({"ab", "b"}),
                                                  nlohmann::json::array({"\xC4\xA0", "ab"})});
  if (!extra_merge.empty()) j["model"]["merges"].push_back(extra_merge);
  j["added_tokens"] = {{{"id", 6}, {"content", "<x>"}, {"special", true}},
                       {{"id", 7}, {"content", "<x>y"}, {"special", false}}};
  return j.dump();
}

TEST(BpeTokenizer, BothMergeSpellingsGiveTheSameIds) {
  auto pairs = BpeTokenizer::from_json(tiny_json(false), "pairs.json");
  auto strings = BpeTokenizer::from_json(tiny_json(true), "strings.json");
  ASSERT_TRUE(pairs.ok()) << pairs.status().message();
  ASSERT_TRUE(strings.ok()) << strings.status().message();
  const std::string text = "abb ab<x>ya<x>b";
  EXPECT_EQ(pairs->encode(text), (std::vector<int64_t>{3, 5, 7, 0, 6, 1}));
  EXPECT_EQ(strings->encode(text), pairs->encode(text));
}

TEST(BpeTokenizer, LoaderErrorsNameFileAndField) {
  auto bad_merge = BpeTokenizer::from_json(tiny_json(true, "b zz"), "tok.json");
  ASSERT_FALSE(bad_merge.ok());
  EXPECT_NE(bad_merge.status().message().find("tok.json: model.merges[3]"), std::string::npos)
      << bad_merge.status().message();
  auto not_json = BpeTokenizer::from_json("{", "x.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("x.json"), std::string::npos);
  auto j = nlohmann::json::parse(tiny_json(true));
  j["model"]["type"] = "WordPiece";
  auto wp = BpeTokenizer::from_json(j.dump(), "wp.json");
  ASSERT_FALSE(wp.ok());
  EXPECT_NE(wp.status().message().find("model.type"), std::string::npos);
  auto missing = BpeTokenizer::load("/nonexistent/tokenizer.json");
  EXPECT_FALSE(missing.ok());
}

// One pre-token can be a whole script-sized run (a 1 MiB line of letters is one `\p{L}+` piece;
// the daemon accepts scripts up to 1 MiB). Merging must not rescan the piece per merge: that was
// O(n^2), hours for this input (the test then never finishes); the heap makes it O(n log n).
// The result also pins the rule: lowest rank first, leftmost on ties ("aaaaa" -> aaaa + a).
Result<BpeTokenizer> runs_tokenizer() {
  nlohmann::json j;
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\S+|\\s+"}}},
                        {"behavior", "Isolated"}, {"invert", false}};
  j["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"aa", 1}, {"aaaa", 2}}},
                {"merges", {"a a", "aa aa"}}};
  return BpeTokenizer::from_json(j.dump(), "runs.json");
}

TEST(BpeTokenizer, MebibytePieceMergesByRankLeftmostFirst) {
  auto tok = runs_tokenizer();
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(tok->encode("aaaaa"), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(tok->encode("aaaaaaa"), (std::vector<int64_t>{2, 1, 0}));
  const size_t n = size_t{1} << 20;
  const auto ids = tok->encode(std::string(n + 3, 'a'));
  std::vector<int64_t> want(n / 4, 2);
  want.insert(want.end(), {1, 0});
  EXPECT_EQ(ids, want);
}

// The piece cache lives as long as the tokenizer (the daemon's whole life): long pieces must not
// go into it, or distinct 1 MiB scripts would pin a mebibyte each, up to 2^17 of them.
TEST(BpeTokenizer, LongPiecesAreNotCached) {
  auto tok = runs_tokenizer();
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  for (size_t i = 0; i < 16; ++i) tok->encode(std::string(4096 + i, 'a'));
  EXPECT_LT(tok->cached_bytes(), size_t{4096});
  EXPECT_EQ(tok->encode("aaa aaa"), (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_GT(tok->cached_bytes(), size_t{0});  // short pieces still are
}

TEST(BpeText, WhitespaceRewriteAndByteTable) {
  EXPECT_EQ(bpe::rewrite_whitespace_classes("a\\d"), "a\\d");
  const std::string r = bpe::rewrite_whitespace_classes("[^\\s\\p{L}]\\s+(?!\\S)");
  EXPECT_NE(r.find("[^\\x{9}-\\x{D}"), std::string::npos) << r;
  EXPECT_NE(r.find("(?![^\\x{9}"), std::string::npos) << r;
  EXPECT_EQ(bpe::byte_to_unicode()[' '], U'\u0120');  // Ġ
  EXPECT_EQ(bpe::byte_to_unicode()['A'], U'A');
  EXPECT_EQ(bpe::byte_of_unicode(U'\u0120'), ' ');
  std::string bytes;
  EXPECT_TRUE(bpe::byte_level_decode("\xC4\xA0hi", bytes));
  EXPECT_EQ(bytes, " hi");
}

TEST(HeadTailIds, SixtyFortyRule) {
  std::vector<int64_t> ids(5000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  const auto out = head_tail_ids(ids, 4096);
  ASSERT_EQ(out.size(), 4096u);
  EXPECT_EQ(out[2456], 2456);
  EXPECT_EQ(out[2457], 5000 - 1639);
  EXPECT_EQ(out.back(), 4999);
  EXPECT_EQ(head_tail_ids({1, 2, 3}, 4096), (std::vector<int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace peakcast::features
