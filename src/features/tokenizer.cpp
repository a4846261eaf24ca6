#include "peakcast/features/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "features/tokenizer_internal.h"
#include "peakcast/core/hash.h"

namespace peakcast::features {

std::vector<std::string> tokenize_script(std::string_view script, const TokenizerOptions& o) {
  std::vector<std::string> tokens;
  detail::TokenSink sink(tokens);
  bool seen_content = false;
  bool seen_command = false;     // sbatch: a line that is not blank and not a '#' line
  bool seen_executable = false;  // qsub: the same, but a line with ':' in its first column is not
  auto left_trimmed = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    return s;
  };
  std::vector<std::string> lines = detail::logical_lines(script);
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string& raw = lines[k];
    std::string_view line = left_trimmed(raw);
    // qsub joins a directive it reads (before the first executable line) that ends in a
    // backslash with the next line, backslash and newline removed, and again while the joined
    // text ends in one (OpenPBS qsub.c get_script). logical_lines leaves a '#' line's backslash
    // in place (a comment to the shell), so the join is done here.
    if (line.starts_with("#PBS") && !seen_executable && raw.ends_with('\\')) {
      while (raw.ends_with('\\') && k + 1 < lines.size()) {
        raw.pop_back();
        raw += lines[++k];
      }
      line = left_trimmed(raw);
    }
    if (line.empty()) continue;
    bool first = !seen_content;
    seen_content = true;
    if (line.front() == '#') {
      if (first && line.size() > 1 && line[1] == '!') continue;  // shebang
      // sbatch reads #SBATCH only in the first column and only before the first command line
      // (src/sbatch/opt.c _opt_batch_script); anywhere else the line is a comment to it.
      if (line.starts_with("#SBATCH") && (seen_command || line.size() != raw.size())) continue;
      // qsub (PBS Pro/OpenPBS, Torque) reads #PBS after leading blanks too, but only before the
      // first executable line (pbs_ispbsdir, pbs_isexecutable; POSIX qsub: "if directives occur
      // on subsequent lines, the utility shall ignore those directives"). bsub reads #BSUB lines
      // wherever they are (IBM's own job_script example sets -P after the commands).
      if (line.starts_with("#PBS") && seen_executable) continue;
      detail::tokenize_directive(line, sink);                     // else: a comment, dropped
      continue;
    }
    seen_command = true;
    if (raw.front() != ':') seen_executable = true;
    detail::tokenize_shell_line(line, sink);
  }
  return truncate_tokens(std::move(tokens), o);
}

std::vector<std::string> truncate_tokens(std::vector<std::string> tokens, const TokenizerOptions& o) {
  if (tokens.size() <= o.max_tokens) return tokens;
  double share = std::clamp(o.head_share, 0.0, 1.0);
  size_t head = static_cast<size_t>(std::floor(share * static_cast<double>(o.max_tokens)));
  size_t tail = o.max_tokens - head;
  std::vector<std::string> out;
  out.reserve(o.max_tokens);
  for (size_t i = 0; i < head; ++i) out.push_back(std::move(tokens[i]));
  for (size_t i = tokens.size() - tail; i < tokens.size(); ++i) out.push_back(std::move(tokens[i]));
  return out;
}

namespace {
constexpr uint64_t kBigramSeed = 0x9e3779b97f4a7c15ULL;  // bigrams hash apart from unigrams

void check_buckets(int64_t buckets, int64_t min) {
  if (buckets < min) {
    throw std::invalid_argument("hashed features: buckets must be >= " + std::to_string(min));
  }
}
}  // namespace

int64_t token_bucket(std::string_view token, int64_t buckets) {
  check_buckets(buckets, 1);
  return static_cast<int64_t>(fnv1a64(token) % static_cast<uint64_t>(buckets));
}

std::vector<int64_t> hashed_ngrams(const std::vector<std::string>& tokens, int64_t buckets,
                                   bool bigrams) {
  check_buckets(buckets, 1);
  const auto b = static_cast<uint64_t>(buckets);
  std::vector<int64_t> ids;
  ids.reserve(bigrams && !tokens.empty() ? 2 * tokens.size() - 1 : tokens.size());
  for (const auto& t : tokens) ids.push_back(static_cast<int64_t>(fnv1a64(t) % b));
  if (bigrams) {
    for (size_t i = 1; i < tokens.size(); ++i) {
      // Hash "a \x1f b" continued from a's state: no string is built per bigram.
      uint64_t h = fnv1a64(tokens[i - 1], kBigramSeed);
      h = fnv1a64("\x1f", h);
      h = fnv1a64(tokens[i], h);
      ids.push_back(static_cast<int64_t>(h % b));
    }
  }
  return ids;
}

std::vector<int64_t> hashed_token_ids(const std::vector<std::string>& tokens, int64_t buckets) {
  check_buckets(buckets, 2);
  const auto b = static_cast<uint64_t>(buckets - 1);
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const auto& t : tokens) ids.push_back(1 + static_cast<int64_t>(fnv1a64(t) % b));
  return ids;
}

}  // namespace peakcast::features
