// Shell-aware tokenizer for job scripts (METHOD.md §4 `bag` encoder, also the XGBoost baseline's
// hashed script features). Scheduler directives (#SBATCH, #PBS, #BSUB, #$, #PJM, #flux, #COBALT)
// become typed tokens ("sbatch:mem=bin:15" ...); commands, flags, key=value pairs, numbers as log2
// bins together with the flag they follow ("--batch-size=bin:6"), path pieces; comments dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace peakcast::features {

struct TokenizerOptions {
  size_t max_tokens = 4096;   // budget; longer scripts keep 60% head, 40% tail
  double head_share = 0.6;
};

// Deterministic and thread-safe.
std::vector<std::string> tokenize_script(std::string_view script, const TokenizerOptions& o = {});

// Hashed uni- and bi-gram ids in [0, buckets) for the tokens (order kept: unigrams in token order,
// then bigrams). Stable across runs and machines (FNV-1a).
std::vector<int64_t> hashed_ngrams(const std::vector<std::string>& tokens, int64_t buckets,
                                   bool bigrams = true);

// Per-token ids in [0, buckets) (for sequence encoders: textcnn, bilstm), 0 reserved for padding.
std::vector<int64_t> hashed_token_ids(const std::vector<std::string>& tokens, int64_t buckets);

}  // namespace peakcast::features
