// contrib/grafana/peakcastd.json against what the daemon really exports: the /metrics text of a
// real Service (history model, SQLite store). Every expression must name exported metrics, with
// label names those metrics carry (or Prometheus' own instance/job); every exported family must
// have a panel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "peakcast/serve/service.h"
#include "serve/serve_test_util.h"

namespace peakcast::serve {
namespace {

using nlohmann::json;

// Family name -> label names seen on its samples (histogram series folded into the family).
std::map<std::string, std::set<std::string>> exported_families(const std::string& text) {
  std::map<std::string, std::set<std::string>> fam;
  std::map<std::string, std::string> type;
  std::istringstream in(text);
  const std::regex type_line(R"(^# TYPE (\w+) (\w+)$)");
  const std::regex sample(R"(^(\w+)(\{([^}]*)\})? )");
  const std::regex label(R"((\w+)=")");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) {
      fam[m[1]];
      type[m[1]] = m[2];
      continue;
    }
    if (line.empty() || line[0] == '#' || !std::regex_search(line, m, sample)) continue;
    std::string name = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string base = name.substr(0, name.size() - std::min(name.size(), std::strlen(suffix)));
      if (name.ends_with(suffix) && type[base] == "histogram") name = base;
    }
    const std::string labels = m[3];
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), label); it != std::sregex_iterator(); ++it) {
      fam[name].insert((*it)[1]);
    }
  }
  return fam;
}

void collect_exprs(const json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if ((it.key() == "expr" || it.key() == "definition") && it->is_string()) out.push_back(*it);
      else collect_exprs(*it, out);
    }
  } else if (j.is_array()) {
    for (const json& e : j) collect_exprs(e, out);
  }
}

std::string base_family(const std::string& series, const std::map<std::string, std::set<std::string>>& fam) {
  if (fam.count(series)) return series;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    if (series.ends_with(suffix)) {
      const std::string base = series.substr(0, series.size() - std::strlen(suffix));
      if (fam.count(base)) return base;
    }
  }
  return {};
}

TEST(GrafanaDashboard, EveryExpressionNamesAnExportedMetric) {
  testing::TempDir tmp;
  auto store = open_sqlite_store(tmp.file("h.db"));
  ASSERT_TRUE(store.ok());
  ServiceOptions options;  // a named value: GCC 12 warns falsely on a ServiceOptions{} temporary
  Service service(testing::history_model(), std::move(*store), std::move(options));
  service.predict(testing::request_json("u", "#!/bin/sh\necho", 1'700'000'000, 1 << 30).dump());
  // What the HTTP layer records for every request (http_server.cpp), so that the request series
  // and their labels appear.
  service.metrics().observe(Endpoint::kPredict, 200, 0.001);
  service.metrics().observe(Endpoint::kComplete, 503, 0.002);
  const auto fam = exported_families(service.metrics_text().body);
  ASSERT_GE(fam.size(), 10u);
  for (const char* needed : {"peakcast_model_info", "peakcast_sync_last_success_timestamp_seconds",
                             "peakcast_request_duration_seconds"}) {
    EXPECT_TRUE(fam.count(needed)) << needed << " is not exported";
  }

  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/contrib/grafana/peakcastd.json");
  ASSERT_TRUE(in.good());
  const json dash = json::parse(in, nullptr, false);
  ASSERT_FALSE(dash.is_discarded()) << "the dashboard is not valid JSON";
  std::vector<std::string> exprs;
  collect_exprs(dash, exprs);
  ASSERT_GE(exprs.size(), 15u);

  const std::regex metric(R"(\b(peakcast_\w+)(\{([^}]*)\})?)");
  const std::regex matcher(R"((\w+)\s*(=~|!~|!=|=))");
  const std::regex by(R"(\b(?:by|without)\s*\(([^)]*)\))");
  std::set<std::string> used;
  for (const std::string& e : exprs) {
    SCOPED_TRACE(e);
    std::set<std::string> labels = {"instance", "job"};
    size_t names = 0;
    for (auto it = std::sregex_iterator(e.begin(), e.end(), metric); it != std::sregex_iterator(); ++it) {
      ++names;
      const std::string family = base_family((*it)[1], fam);
      ASSERT_FALSE(family.empty()) << (*it)[1] << " is not a metric peakcastd exports";
      used.insert(family);
      const std::set<std::string>& has = fam.at(family);
      labels.insert(has.begin(), has.end());
      if (std::string((*it)[1]).ends_with("_bucket")) labels.insert("le");
      const std::string sel = (*it)[3];
      for (auto m = std::sregex_iterator(sel.begin(), sel.end(), matcher); m != std::sregex_iterator(); ++m) {
        const std::string l = (*m)[1];
        EXPECT_TRUE(l == "instance" || l == "job" || has.count(l)) << family << " has no label " << l;
      }
    }
    EXPECT_GT(names, 0u) << "an expression without a peakcast metric";
    for (auto it = std::sregex_iterator(e.begin(), e.end(), by); it != std::sregex_iterator(); ++it) {
      std::stringstream list((*it)[1]);
      for (std::string l; std::getline(list, l, ',');) {
        l.erase(0, l.find_first_not_of(' '));
        l.erase(l.find_last_not_of(' ') + 1);
        EXPECT_TRUE(labels.count(l)) << "grouping by " << l << ", which these metrics do not carry";
      }
    }
  }
  for (const auto& [name, labels] : fam) EXPECT_TRUE(used.count(name)) << name << " has no panel";
}

}  // namespace
}  // namespace peakcast::serve
