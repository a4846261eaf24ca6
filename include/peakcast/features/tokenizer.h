// Shell-aware tokenizer for job scripts (docs/method.md §4 `bag` encoder, also the XGBoost baseline's
// hashed script features). Scheduler directives (#SBATCH, #PBS, #BSUB, #$, #PJM, #flux, #COBALT)
// become typed tokens ("sbatch:--mem=bin:32" ...); commands, flags, key=value pairs, numbers as log2
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

// Deterministic (same text -> same tokens on every machine; no locale) and thread-safe. Never
// throws on any input (fuzzed by the real-script test); every token is at most 64 characters.
// Token kinds, in script order:
//   directives   "sbatch:--mem", "sbatch:--mem=bin:32" (floor log2 bytes), "sbatch:--time=hbin:3"
//                (floor log2 hours), "sbatch:--gres:gpu", "sbatch:--gres:gpu=gpus:2",
//                "pbs:-l:ncpus=bin:3", "uge:-l:h_vmem=bin:30", "bsub:-R:rusage:mem=bin:..";
//                Slurm one-letter options are spelled long ("-t" -> "--time"). Prefixes: sbatch,
//                pbs, bsub, uge (#$), pjm, flux, cobalt.
//   commands     "cmd:python" (first word of every pipeline stage, basename; a launcher's program
//                too: "srun -n 4 ./a.out" -> cmd:srun ... cmd:a.out), "kw:do" for shell keywords
//   flags        "--batch-size", "--batch-size=bin:6" with "num:bin:6"; "--model=resnet50"
//   key=value    "kv:lr", "kv:lr=bin:-7" (numeric) or "kv:mode=train" (text, cut to 32 chars)
//   environment  "env:OMP_NUM_THREADS", "env:OMP_NUM_THREADS=bin:3" (assignments and export)
//   modules      "module:load!" (subcommand), "module:cuda", "module:cuda/11.8"
//   other        "var:SLURM_NTASKS" ($ references), "path:scratch" (pieces split on / . _ - ...;
//                digit-only pieces dropped), "w:hello", "size:bin:36" ("64G"), "op:|", "op:>"
// A directive line counts where its scheduler reads it: #SBATCH in the first column before the
// first command (sbatch), #PBS after leading blanks too but before the first executable line
// (qsub), #BSUB anywhere (bsub); elsewhere it is a comment. Comments other than directives and
// the shebang are dropped; a backslash-newline pair is removed as sh removes it
// ("--mem=8\<newline>G" is "--mem=8G"), except inside a comment (bash: "cmd # note \" does not
// continue; sbatch reads each #SBATCH line alone; qsub joins a #PBS line the same way); quotes are
// removed and a quoted argument with spaces ("bash -c '...'") is tokenized as arguments. Longer
// than max_tokens: the first floor(head_share * max) and the last rest kept.
std::vector<std::string> tokenize_script(std::string_view script, const TokenizerOptions& o = {});

// The budget rule alone (head_share of max_tokens from the front, the rest from the back).
std::vector<std::string> truncate_tokens(std::vector<std::string> tokens, const TokenizerOptions& o);

// fnv1a64(token) % buckets: the unigram id hashed_ngrams gives the token.
int64_t token_bucket(std::string_view token, int64_t buckets);

// Hashed uni- and bi-gram ids in [0, buckets) for the tokens (order kept: unigrams in token order,
// then bigrams). Stable across runs and machines (FNV-1a). buckets >= 1, else std::invalid_argument.
std::vector<int64_t> hashed_ngrams(const std::vector<std::string>& tokens, int64_t buckets,
                                   bool bigrams = true);

// Per-token ids in [1, buckets) (for sequence encoders: textcnn, bilstm); 0 is reserved for padding
// and never returned. buckets >= 2, else std::invalid_argument.
std::vector<int64_t> hashed_token_ids(const std::vector<std::string>& tokens, int64_t buckets);

}  // namespace peakcast::features
