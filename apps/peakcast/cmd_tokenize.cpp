// peakcast tokenize --tokenizer TOKENIZER_JSON FILE: the byte-level BPE tokenizer of the qwen2
// encoder on JSONL records {"text": ...}, one {"ids": [...]} line out per record, in order.
#include <iostream>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.h"
#include "peakcast/core/io.h"
#include "peakcast/features/bpe_tokenizer.h"
#include "peakcast/ingest/json_line.h"

namespace peakcast::app {
namespace {

struct TokenizeArgs {
  std::string tokenizer;
  std::string input;
  std::string output = "-";
  int64_t max_added_id = -1;
  int64_t max_tokens = 0;
};

int run_tokenize(const TokenizeArgs& a) {
  auto tok = features::BpeTokenizer::load(a.tokenizer, {.max_added_token_id = a.max_added_id});
  if (!tok) return fail(tok.status());
  auto text = read_file(a.input);  // "-" reads stdin
  if (!text) return fail(text.status());
  const std::string where = a.input == "-" ? "<stdin>" : a.input;
  std::string out;
  size_t line_no = 0, records = 0;
  for (std::string_view line : split_lines(*text)) {
    ++line_no;
    if (trim(line).empty()) continue;
    Result<nlohmann::json> j = ingest::parse_json_line(line);
    if (!j) return fail(Status::invalid(fmt::format("{}:{}: {}", where, line_no, j.status().message())));
    if (!j->is_object())
      return fail(Status::invalid(fmt::format("{}:{}: not a JSON object", where, line_no)));
    if (!j->contains("text") || !(*j)["text"].is_string())
      return fail(Status::invalid(fmt::format("{}:{}: text: missing or not a string", where, line_no)));
    auto ids = tok->encode((*j)["text"].get_ref<const std::string&>());
    if (a.max_tokens > 0) ids = features::head_tail_ids(ids, static_cast<size_t>(a.max_tokens));
    out += nlohmann::json{{"ids", ids}}.dump() + "\n";
    ++records;
  }
  if (records == 0) return fail(Status::invalid(fmt::format("{}: no records", where)));
  if (Status s = write_output(a.output, out); !s) return fail(s);
  return kExitOk;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Token ids of texts with a Hugging Face byte-level BPE tokenizer");
  cmd->footer(
      "Reads JSONL records {\"text\": ...} (one per line; '-' = stdin) and writes one "
      "{\"ids\": [...]} line per record, in order: the ids the qwen2 encoder reads (added tokens "
      "matched first, NFC, the file's split regex, byte-level BPE; no special tokens added). "
      "TOKENIZER_JSON is a tokenizer.json (gzip accepted), e.g. the one in a Qwen2.5-Coder "
      "folder. --max-tokens applies the encoder's 60% head / 40% tail budget.\n"
      "Exit codes: 0 ok, 2 usage or input error, 1 other failures.");
  cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json (or .json.gz)")->required();
  cmd->add_option("FILE", a->input, "JSONL records with a \"text\" field; '-' = stdin")->required();
  cmd->add_option("-o,--output", a->output, "Output file ('-' = stdout)")->capture_default_str();
  cmd->add_option("--max-added-id", a->max_added_id,
                  "Ignore added tokens with a larger id (-1 = keep all; 151664 = Qwen2.5-Coder's "
                  "set from a Qwen3 file)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()).description("-1 OR MORE"));
  cmd->add_option("--max-tokens", a->max_tokens,
                  "Keep at most this many ids, 60% head / 40% tail (0 = all)")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->callback([a, &exit_code] { exit_code = run_tokenize(*a); });
}

}  // namespace peakcast::app
