// What the code predictor reads about a job before any tensor exists (Torch-free):
// the text for the script encoder, and the user's embedding row.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::models::code {

// The text an encoder reads. When a trace has no script (SWF, Nextflow), the identity the reader
// supplied (workload, job name) is read instead and `is_script` is false; encoders may treat
// identity text differently (the built-ins add whole-identity tokens so "exe 17" stays one symbol).
struct CodeText {
  std::string text;
  bool is_script = false;
};

// The job's script when it has a non-blank one; else "workload=<w>\njob_name=<n>" from whatever
// identity it has (possibly empty: the encoders still return a vector for empty text).
CodeText code_text(const Job& job);

// Tokens for the built-in encoders: tokenize_script(text) with the given budget, plus, for
// identity text, one "identity:<line>" token per line.
std::vector<std::string> code_tokens(const CodeText& text, size_t max_tokens);

// Keeps the first `head_share` of the budget from the front and the rest from the back.
std::vector<int64_t> head_tail(std::vector<int64_t> ids, size_t budget, double head_share = 0.6);

// Training users -> embedding rows 1..N; row 0 is the shared "unknown user" (unseen users,
// and training users with fewer than min_jobs jobs, so row 0 is trained on real examples).
// Users are stored as FNV-1a 64 hashes, so a saved model holds no user names.
class UserVocab {
 public:
  static UserVocab fit(const std::vector<const Job*>& train, int64_t min_jobs);
  int64_t row(const std::string& user) const;  // 0 when unknown
  int64_t rows() const { return static_cast<int64_t>(rows_.size()) + 1; }  // incl. unknown row
  nlohmann::json to_json() const;
  static Result<UserVocab> from_json(const nlohmann::json& j);

 private:
  std::unordered_map<uint64_t, int64_t> rows_;
};

}  // namespace peakcast::models::code
