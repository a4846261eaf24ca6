// Internal to src/tools: the learned methods of the study's table and what they share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "peakcast/eval/method.h"
#include "peakcast/cascade/cascade_config.h"
#include "peakcast/models/code/code_config.h"

namespace peakcast::eval::learned {

std::unique_ptr<Method> make_xgboost(const MethodOptions& o);
// The code model alone with the named encoder (bag | textcnn | bilstm).
std::unique_ptr<Method> make_code_only(std::string name, std::string encoder, const MethodOptions& o);
std::unique_ptr<Method> make_cascade(const MethodOptions& o);

// Jobs of one block that are valid for at least one resource, in submit order.
std::vector<const Job*> block_jobs(const EvalData& data, Block block);

// The code-model configuration a method starts from: the cascade's CPU defaults, the encoder,
// seed, threads and cap, then the user's --code-option overrides; validated.
Result<models::code::CodeModelConfig> code_config_for(const std::string& encoder,
                                                      const MethodOptions& o, double util_cap);

// The cascade's configuration a method (or `peakcast train`) starts from: code_config_for's code
// model, gate and fusion on the resolved threads with the seed; validated.
Result<cascade::CascadeConfig> cascade_config_for(const std::string& encoder, const MethodOptions& o,
                                                  double util_cap);

// "scripts" when some training job had script text, else a sentence saying the code model read
// identity text only (SWF, Nextflow traces).
std::string script_text_choice(bool trained_without_scripts);

}  // namespace peakcast::eval::learned
