// Pieces shared by the report's source files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "peakcast/report/report.h"

#ifndef PEAKCAST_HAVE_REPORT_JS
#define PEAKCAST_HAVE_REPORT_JS 0
#endif

namespace peakcast::report {

// A JavaScript file inlined into the page: "name version" and its text.
struct Asset {
  std::string name;
  std::string_view text;
};
std::vector<Asset> plotting_library();

// Text safe inside HTML element content and attribute values.
std::string html_escape(std::string_view s);
// JSON or JavaScript safe inside a <script> element (no "</" that could close it).
std::string script_safe(std::string_view s);

// Sortable HTML tables of the page, by section.
std::string methods_table(const nlohmann::json& eval);
std::string subgroups_table(const nlohmann::json& eval);
std::string coverage_table(const std::vector<PredictedJob>& predictions);
std::string usage_table(const std::vector<UsagePoint>& usage);
std::string sim_table(const SimResults& sim);

// Observed coverage of the upper bound per resource and route ("all" included).
struct CoverageRow {
  std::string resource, route;
  size_t n = 0;
  double observed = 0.0;  // share of jobs with actual <= upper
  double nominal = 0.0;   // mean stated coverage
};
std::vector<CoverageRow> coverage_rows(const std::vector<PredictedJob>& predictions);

}  // namespace peakcast::report
