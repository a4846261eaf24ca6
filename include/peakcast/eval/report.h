// One result table, several printers (terminal, markdown, json, csv), plus the reader summary
// every command shows. Pure functions: they return text; the caller decides where it goes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/eval/evaluate.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::eval {

// Aligned, human-readable table with the split and fallback above it.
std::string render_table(const EvalReport& report);
std::string render_markdown(const EvalReport& report);
std::string render_csv(const EvalReport& report);
// "METHOD: left out: it could not be trained on this trace's training blocks (REASON)": a method
// EvalConfig::leave_out_refusals left out (EvalReport::left_out), as the table, the markdown and
// `peakcast evaluate`'s stderr say it.
std::string left_out_line(const std::string& method, const std::string& reason);
// {"trace": {"path", "format"}, "config": {...}, "split": {...}, "reader": {...},
//  "fallback": {...}, "results": [{"method", "resource", "n", "mae", "mse", "rmse", "acc10",
//  "mae_diff_vs_hier_last1": {"point", "mean", "lo", "hi", "days", "resamples"} | null,
//  "mae_diff_vs_hier_last1_by_script": {"point", "mean", "lo", "hi", "scripts", "resamples"} | null
//  (the same difference bootstrapped over the test block's scripts, ResultRow::mae_diff_by_script;
//  null with the bootstrap off and in the baseline's own row; always there),
//  "subgroups": {"exact_script": {"n", "mae", "mse", "rmse", "acc10"}, "user_only": {...},
//  "none": {...}}, "routes": {...}}, ...], "choices": {...}, "notes": [...],
//  "left_out": [{"method", "reason"}, ...]} (always there; empty when every method was scored)
nlohmann::json to_json(const EvalReport& report);
// What each learned method chose, {method: {key: value}} (the report's "choices").
nlohmann::json choices_json(const EvalReport& report);
nlohmann::json to_json(const ingest::ReadStats& stats);
// [{"method", "reason"}, ...] of the methods left out (EvalReport::left_out, FoldsReport::left_out);
// an empty list when none.
nlohmann::json left_out_json(const std::vector<std::pair<std::string, std::string>>& left_out);

// Multi-line reader summary: read / skipped / labelled per resource / clipped / censored and
// the first skip reasons; also the trace's notes.
std::string render_reader_summary(const ingest::Trace& trace);

}  // namespace peakcast::eval
