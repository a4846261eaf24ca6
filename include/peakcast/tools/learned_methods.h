// The learned methods of the study's table (src/tools/learned_*.cpp): xgboost, code_only (the
// code model with the bag encoder alone), textcnn, bilstm, cascade. They live in the tools library,
// apart from the harness and its history methods, so that a history-only evaluation neither trains
// anything nor links LibTorch. Namespace eval: they are methods of the harness.
#pragma once

#include "peakcast/eval/method.h"

namespace peakcast::eval {

void register_learned(MethodRegistry& registry);

}  // namespace peakcast::eval
