// peakcast embed --base DIR FILE: the Qwen2 forward on JSONL records {"ids": [...]} or
// {"text": ...}; one {"n_tokens", "mean_pooled", "last_token"} line per record (final hidden
// states after the last norm, as in the fixtures' reference.json).
#include <iostream>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.h"
#include "peakcast/core/io.h"
#include "peakcast/features/bpe_tokenizer.h"

#ifdef PEAKCAST_WITH_QWEN2
#include <torch/cuda.h>
#include <torch/torch.h>

#include "peakcast/models/qwen2/model.h"
#endif

namespace peakcast::app {
namespace {

struct EmbedArgs {
  std::string base;
  std::string input;
  std::string output = "-";
  std::string dtype = "float32";
  std::string device = "cpu";
  std::string tokenizer;
  int64_t max_added_id = -1;
};

#ifdef PEAKCAST_WITH_QWEN2

// The record's ids: "ids" as given (checked against the vocabulary), or "text" tokenized.
Result<std::vector<int64_t>> record_ids(const nlohmann::json& j, const std::string& where,
                                        const EmbedArgs& a, const models::qwen2::Qwen2Config& cfg,
                                        std::unique_ptr<features::BpeTokenizer>& tok) {
  std::vector<int64_t> ids;
  if (j.contains("ids")) {
    if (!j["ids"].is_array()) return Status::invalid(where + ": ids: not an array");
    for (const auto& v : j["ids"]) {
      if (!v.is_number_integer()) return Status::invalid(where + ": ids: not all integers");
      const int64_t id = v.get<int64_t>();
      if (id < 0 || id >= cfg.vocab_size)
        return Status::invalid(fmt::format("{}: ids: {} is outside [0, {}) (vocab_size)", where, id, cfg.vocab_size));
      ids.push_back(id);
    }
  } else if (j.contains("text") && j["text"].is_string()) {
    if (!tok) {
      const std::string path = a.tokenizer.empty() ? a.base + "/tokenizer.json" : a.tokenizer;
      auto t = features::BpeTokenizer::load(path, {.max_added_token_id = a.max_added_id});
      if (!t) return t.status();
      tok = std::make_unique<features::BpeTokenizer>(std::move(t).value());
    }
    ids = tok->encode(j["text"].get_ref<const std::string&>());
    for (int64_t id : ids)
      if (id >= cfg.vocab_size)
        return Status::invalid(fmt::format("{}: text: token id {} is outside the model's vocab_size {}",
                                           where, id, cfg.vocab_size));
  } else {
    return Status::invalid(where + ": needs \"ids\" (array) or \"text\" (string)");
  }
  if (ids.empty()) return Status::invalid(where + ": no tokens (empty input)");
  return ids;
}

std::vector<double> to_vec(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat64).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

int run_embed(const EmbedArgs& a) {
  torch::ScalarType dtype = torch::kFloat32;
  if (a.dtype == "bfloat16") dtype = torch::kBFloat16;
  else if (a.dtype == "float16") dtype = torch::kFloat16;
  else if (a.dtype != "float32")
    return fail(Status::invalid(fmt::format("--dtype: '{}' is not float32, bfloat16 or float16", a.dtype)));
  std::optional<torch::Device> device;
  try {
    device.emplace(a.device);
  } catch (const c10::Error&) {
  }
  if (!device || !(device->is_cpu() || device->is_cuda()))
    return fail(Status::invalid(fmt::format("--device: '{}' is not cpu, cuda or cuda:N", a.device)));
  if (device->is_cuda() && !torch::cuda::is_available())
    return fail(Status::unsupported(fmt::format("--device {}: this LibTorch sees no CUDA device", a.device)));
  auto model = models::qwen2::Qwen2Model::load(a.base, dtype, *device);
  if (!model) return fail(model.status());
  auto text = read_file(a.input);
  if (!text) return fail(text.status());
  const std::string src = a.input == "-" ? "<stdin>" : a.input;
  std::unique_ptr<features::BpeTokenizer> tok;
  std::string out;
  size_t line_no = 0, records = 0;
  torch::NoGradGuard no_grad;
  for (std::string_view line : split_lines(*text)) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::string where = fmt::format("{}:{}", src, line_no);
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return fail(Status::invalid(where + ": not a JSON object"));
    auto ids = record_ids(j, where, a, model->config(), tok);
    if (!ids) return fail(ids.status());
    auto hidden = model->forward(*ids).unsqueeze(0);
    auto [mean, last] = models::qwen2::pool_hidden(hidden, torch::tensor({static_cast<int64_t>(ids->size())}));
    out += nlohmann::json{{"n_tokens", ids->size()}, {"mean_pooled", to_vec(mean[0])},
                          {"last_token", to_vec(last[0])}}.dump() + "\n";
    ++records;
  }
  if (records == 0) return fail(Status::invalid(src + ": no records (empty input)"));
  if (Status s = write_output(a.output, out); !s) return fail(s);
  return kExitOk;
}

#else

int run_embed(const EmbedArgs&) {
  return fail(Status::unsupported("embed: this peakcast was built without LibTorch"));
}

#endif

}  // namespace

void add_embed_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<EmbedArgs>();
  CLI::App* cmd = app.add_subcommand("embed", "Qwen2 final hidden states of token ids or texts (checking a checkpoint)");
  cmd->footer(
      "Reads JSONL records {\"ids\": [...]} or {\"text\": ...} (one per line; '-' = stdin) and "
      "writes one line per record: {\"n_tokens\": N, \"mean_pooled\": [...], \"last_token\": [...]} "
      "- the final hidden states after the last norm, averaged over all positions (in float32) "
      "and taken at the last position, as in ../shared/data/qwen2/*/reference.json. DIR is a "
      "Hugging Face Qwen2 folder: config.json and model.safetensors (or "
      "model.safetensors.index.json with its shards); texts are tokenized with --tokenizer or "
      "DIR/tokenizer.json. No truncation: every id is read.\n"
      "Exit codes: 0 ok, 2 usage or input error (ids out of range, empty input, a folder without "
      "weights), 1 other failures.");
  cmd->add_option("--base", a->base, "Qwen2 model folder")->required();
  cmd->add_option("FILE", a->input, "JSONL records with \"ids\" or \"text\"; '-' = stdin")->required();
  cmd->add_option("-o,--output", a->output, "Output file ('-' = stdout)")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "Compute dtype: float32, bfloat16 or float16")->capture_default_str();
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json for text records (default DIR/tokenizer.json)");
  cmd->add_option("--max-added-id", a->max_added_id, "Ignore tokenizer added tokens above this id (-1 = all)")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()).description("-1 OR MORE"))
      ->capture_default_str();
  cmd->callback([a, &exit_code] { exit_code = run_embed(*a); });
}

}  // namespace peakcast::app
