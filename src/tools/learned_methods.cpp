// Registration of the learned methods and the helpers they share.
#include "tools/learned.h"
#include "peakcast/cascade/cascade_config.h"
#include "peakcast/tools/learned_methods.h"

namespace peakcast::eval {
namespace learned {

std::vector<const Job*> block_jobs(const EvalData& data, Block block) {
  std::vector<const Job*> out;
  for (const JobContext& c : data.jobs) {
    if (c.block != block) continue;
    if (c.job->is_valid(Resource::kMem) || c.job->is_valid(Resource::kVram)) out.push_back(c.job);
  }
  return out;
}

Result<models::code::CodeModelConfig> code_config_for(const std::string& encoder,
                                                      const MethodOptions& o, double util_cap) {
  models::code::CodeModelConfig cfg = cascade::CascadeConfig::default_code_config();
  cfg.encoder = encoder;
  cfg.seed = o.seed;
  cfg.threads = resolve_threads(o.threads);
  cfg.util_cap = util_cap;
  for (const auto& [name, value] : o.code_options) {
    if (Status s = models::code::set_code_option(cfg, name, value); !s) {
      return s.with_context("--code-option " + name);
    }
  }
  // The encoder is the method's identity: an override would mislabel the row.
  cfg.encoder = encoder;
  if (Status s = cfg.validate(); !s) return s;
  return cfg;
}

Result<cascade::CascadeConfig> cascade_config_for(const std::string& encoder, const MethodOptions& o,
                                                  double util_cap) {
  cascade::CascadeConfig cfg;
  Result<models::code::CodeModelConfig> code = code_config_for(encoder, o, util_cap);
  if (!code) return code.status();
  cfg.code = *code;
  const int threads = resolve_threads(o.threads);
  cfg.gate.nthread = cfg.fusion.nthread = cfg.tree.nthread = threads;
  cfg.gate.seed = cfg.fusion.seed = cfg.tree.seed = o.seed;
  for (const auto& [name, value] : o.cascade_options) {
    if (Status s = cascade::set_cascade_option(cfg, name, value); !s) return s;
  }
  if (Status s = cfg.validate(); !s) return s;
  return cfg;
}

std::string script_text_choice(bool trained_without_scripts) {
  return trained_without_scripts
             ? "none: the trace has no scripts, the code model read identity text (executable, "
               "process, job name)"
             : "scripts";
}

}  // namespace learned

void register_learned(MethodRegistry& registry) {
  registry.add("xgboost",
               "XGBoost per resource on request + user + history features + hashed script "
               "tokens, early stopping on validation",
               [](const MethodOptions& o) { return learned::make_xgboost(o); });
  registry.add("code_only", "the code model Q with the bag encoder alone (no history)",
               [](const MethodOptions& o) {
                 return learned::make_code_only("code_only", o.encoder.empty() ? "bag" : o.encoder, o);
               },
               {.code_options = true, .encoder = true});
  registry.add("textcnn", "the code model with a TextCNN script encoder alone",
               [](const MethodOptions& o) { return learned::make_code_only("textcnn", "textcnn", o); },
               {.code_options = true});
  registry.add("bilstm", "the code model with a BiLSTM script encoder alone",
               [](const MethodOptions& o) { return learned::make_code_only("bilstm", "bilstm", o); },
               {.code_options = true});
  registry.add("cascade",
               "reliability-gated cascade: history bypass by gate, else gamma-fusion of code "
               "model and history with trust region",
               [](const MethodOptions& o) { return learned::make_cascade(o); },
               {.code_options = true, .encoder = true, .cascade_options = true});
}

}  // namespace peakcast::eval
