// load_predictor: reads MODEL_DIR/manifest.json, checks the format version and dispatches on
// "kind". New model kinds are added to kKinds below (one line each).
#include <nlohmann/json.hpp>

#include "peakcast/cascade/cascade_model.h"
#include "peakcast/cascade/history_predictor.h"
#include "peakcast/cascade/predictor.h"
#include "peakcast/core/io.h"

namespace peakcast::cascade {
namespace {

struct Kind {
  std::string_view name;
  int format_version;  // the newest this build reads
  Result<std::unique_ptr<Predictor>> (*load)(const std::string& dir, const nlohmann::json& manifest);
};

Result<std::unique_ptr<Predictor>> load_history(const std::string&, const nlohmann::json& m) {
  auto c = history_config_from_manifest(m);
  if (!c) return c.status();
  return std::unique_ptr<Predictor>(std::make_unique<HistoryPredictor>(std::move(*c)));
}

Result<std::unique_ptr<Predictor>> load_cascade(const std::string& dir, const nlohmann::json& m) {
  auto c = CascadeModel::load(dir, m);
  if (!c) return c.status();
  return std::unique_ptr<Predictor>(std::make_unique<CascadeModel>(std::move(c).value()));
}

constexpr Kind kKinds[] = {
    {"history", kHistoryFormatVersion, &load_history},
    {"cascade", kCascadeFormatVersion, &load_cascade},
};

std::string known_kinds() {
  std::string s;
  for (const Kind& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

}  // namespace

Result<std::unique_ptr<Predictor>> load_predictor(const std::string& model_dir) {
  const std::string path = model_dir + "/manifest.json";
  Result<std::string> text = read_file(path);
  if (!text) return text.status();
  nlohmann::json m = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) {
    return Status::invalid(path + ": not a JSON object");
  }
  auto fv = m.find("format_version");
  if (fv == m.end() || !fv->is_number_integer() || fv->get<int64_t>() < 1) {
    return Status::invalid(path + ": format_version: required, a positive integer");
  }
  auto kind = m.find("kind");
  if (kind == m.end() || !kind->is_string()) {
    return Status::invalid(path + ": kind: required, a string (known: " + known_kinds() + ")");
  }
  const std::string name = kind->get<std::string>();
  for (const Kind& k : kKinds) {
    if (k.name != name) continue;
    if (fv->get<int64_t>() > k.format_version) {
      return Status::unsupported(path + ": format_version " + std::to_string(fv->get<int64_t>()) +
                                 " of kind \"" + name + "\" is newer than this build reads (" +
                                 std::to_string(k.format_version) + "); upgrade peakcast");
    }
    auto p = k.load(model_dir, m);
    if (!p) return p.status().with_context(path);
    return p;
  }
  return Status::invalid(path + ": kind: unknown model kind \"" + name + "\" (known: " +
                         known_kinds() + ")");
}

}  // namespace peakcast::cascade
