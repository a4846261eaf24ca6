// Redaction speed (docs/redaction.md): MB/s of script text through redact_script, on the real
// job scripts (../shared/data/scripts/script-ai.jsonl) as the baseline, and on 1 MiB scripts made
// of one short unit repeated, the shapes that made a pattern quadratic or ran PCRE2's JIT out of
// stack (issue found by probing peakcastd: a 900 KB `a:a:a:...` script took minutes). Every unit
// at 256 KiB and 1 MiB: a rate that falls by 4x when the size grows 4x is quadratic.
//
//   redact_bench [--scripts JSONL] [--rounds N]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/redact.h"

#include "bench_options.h"

using namespace peakcast;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string repeat(std::string_view unit, size_t bytes) {
  std::string s;
  while (s.size() < bytes) s += unit;
  return s;
}

// MB/s of redact_script over `texts`, best of `rounds`.
double rate(const std::vector<std::string>& texts, int rounds) {
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (const auto& t : texts) (void)ingest::redact_script(t);
    best = std::min(best, seconds_since(t0));
  }
  return static_cast<double>(bytes) / 1e6 / best;
}

}  // namespace

constexpr const char* kUsage =
    "usage: redact_bench [--scripts JSONL] [--rounds N]\n"
    "  --scripts JSONL  real scripts, one {\"text\": ...} per line (default: ../shared/data's\n"
    "                   script-ai.jsonl; the baseline row is skipped without it)\n"
    "  --rounds N       best of N timed passes per row (default 3, at least 1)\n";

int main(int argc, char** argv) {
  std::string scripts = PEAKCAST_SOURCE_DIR "/../shared/data/scripts/script-ai.jsonl";
  int rounds = 3;
  const bench::OptionSpec spec{"redact_bench", kUsage, {"--scripts", "--rounds"}};
  const auto on_value = [&](const std::string& k, const std::string& v) {
    if (k == "--scripts") {
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
  if (std::filesystem::exists(scripts)) {
    auto text = read_file(scripts);
    if (!text) {
      std::fprintf(stderr, "%s\n", text.status().message().c_str());
      return 1;
    }
    std::vector<std::string> corpus;
    for (std::string_view line : split_lines(*text)) {
      if (line.empty()) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("text") && j["text"].is_string()) corpus.push_back(j["text"].get<std::string>());
    }
    std::printf("baseline: %zu real scripts: %.1f MB/s\n", corpus.size(), rate(corpus, rounds));
  } else {
    std::printf("baseline: skipped (%s absent: needs ../shared/data)\n", scripts.c_str());
  }
  std::printf("%-30s %12s %12s\n", "repeated unit", "256 KiB MB/s", "1 MiB MB/s");
  for (std::string_view unit : {"a:", "sk-", "a.", "x", "eyJ", "${USER}", "mailto:", "/work/a/", "-u a:",
                                "curl -u a:b ", "a=", "--a=", "node01.cluster.example.org.",
                                "export PYTHONPATH=mod1:", "redis-cli -a $x ", "lftp -u a,$b ", "&sig=", "A_TOKEN=a\"",
                                "&X-Amz-Signature=<TOKEN>"}) {
    const double small = rate({repeat(unit, size_t{1} << 18)}, rounds);
    const double large = rate({repeat(unit, size_t{1} << 20)}, rounds);
    std::printf("%-30s %12.1f %12.1f\n", std::string(unit).c_str(), small, large);
  }
  return 0;
}
