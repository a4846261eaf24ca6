// Tokenizer speed on the real job scripts (../shared/data/scripts/script-ai.jsonl): the qwen2
// encoder's byte-level BPE (one core) beside the `bag` encoder's shell tokenizer, in MB/s of
// script text. The aim for the BPE: >= 10 MB/s on one core.
//
//   bpe_bench [--tokenizer TOKENIZER_JSON] [--scripts JSONL] [--rounds N]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/features/bpe_tokenizer.h"
#include "peakcast/features/tokenizer.h"

#include "bench_options.h"

using namespace peakcast;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: bpe_bench [--tokenizer TOKENIZER_JSON] [--scripts JSONL] [--rounds N]\n"
    "  --tokenizer FILE  Qwen2 tokenizer.json(.gz) (default: ../shared/data/qwen2's)\n"
    "  --scripts JSONL   real scripts, one {\"text\": ...} per line (default: ../shared/data's\n"
    "                    script-ai.jsonl); without either file the bench is skipped\n"
    "  --rounds N        timed passes over the scripts per tokenizer (default 5, at least 1)\n";

int main(int argc, char** argv) {
  std::string tok_path = PEAKCAST_SOURCE_DIR "/../shared/data/qwen2/tokenizer.json.gz";
  std::string scripts = PEAKCAST_SOURCE_DIR "/../shared/data/scripts/script-ai.jsonl";
  int rounds = 5;
  const bench::OptionSpec spec{"bpe_bench", kUsage, {"--tokenizer", "--scripts", "--rounds"}};
  const auto on_value = [&](const std::string& k, const std::string& v) {
    if (k == "--tokenizer") {
      tok_path = v;
    } else if (k == "--scripts") {
      scripts = v;
    } else {
      const std::optional<int64_t> n = parse_int(v);
      if (!n || *n < 1 || *n > 1000) {
        std::fprintf(stderr, "--rounds: expected a whole number in [1, 1000], got '%s'\n", v.c_str());
        return 2;
      }
      rounds = static_cast<int>(*n);
    }
    return 0;
  };
  if (const std::optional<int> done = bench::parse_options(argc, argv, spec, on_value)) return *done;
  if (!std::filesystem::exists(tok_path) || !std::filesystem::exists(scripts)) {
    std::printf("bpe_bench: skipped (%s or %s absent: needs ../shared/data)\n", tok_path.c_str(), scripts.c_str());
    return 0;
  }
  auto t0 = Clock::now();
  auto tok = features::BpeTokenizer::load(tok_path, {.max_added_token_id = 151664});
  if (!tok) {
    std::fprintf(stderr, "%s\n", tok.status().message().c_str());
    return 1;
  }
  std::printf("loaded %s in %.2f s (%zu vocabulary entries, %zu merges)\n", tok_path.c_str(),
              std::chrono::duration<double>(Clock::now() - t0).count(), tok->vocab_entries(), tok->merge_count());
  std::vector<std::string> texts;
  size_t bytes = 0;
  auto file = read_file(scripts);
  if (!file) return 1;
  for (auto line : split_lines(*file)) {
    if (trim(line).empty()) continue;
    texts.push_back(nlohmann::json::parse(line)["text"].get<std::string>());
    bytes += texts.back().size();
  }
  std::printf("%zu scripts, %.2f MB; %d rounds each, one thread\n", texts.size(), bytes / 1e6, rounds);
  auto measure = [&](const char* name, auto&& fn) {
    size_t tokens = 0;
    fn(texts[0]);  // warm-up
    auto s = Clock::now();
    for (int r = 0; r < rounds; ++r)
      for (const auto& t : texts) tokens += fn(t);
    const double sec = std::chrono::duration<double>(Clock::now() - s).count();
    std::printf("  %-34s %8.2f MB/s  %10.0f tokens/s  (%.1f us per script)\n", name,
                bytes * rounds / sec / 1e6, tokens / sec, sec / (rounds * texts.size()) * 1e6);
  };
  measure("qwen2 byte-level BPE", [&](const std::string& t) { return tok->encode(t).size(); });
  measure("bag shell tokenizer (tokenize_script)",
          [&](const std::string& t) { return features::tokenize_script(t).size(); });
  return 0;
}
