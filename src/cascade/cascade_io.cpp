// The cascade's model directory: manifest.json, training_sets.json, the chosen experts' boosters
// (UBJ) and the code model's own directory. Doubles are written by nlohmann::json, which
// round-trips them exactly, so save -> load -> predict is bit-identical.
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cascade/cascade_internal.h"
#include "peakcast/core/io.h"
#include "peakcast/core/json_count.h"

namespace peakcast::cascade {
namespace {

using nlohmann::json;

json num_or_null(double v) { return std::isnan(v) ? json(nullptr) : json(v); }
double null_to_nan(const json& v) { return v.is_number() ? v.get<double>() : std::nan(""); }

// A count field (absent: 0): a whole number from 0 to 2^53. nlohmann converts a float to size_t
// with a cast, undefined past size_t's range ("n": 1e300); a negative integer would wrap.
Result<size_t> count_in(const json& j, const std::string& key) {
  if (!j.is_object() || !j.contains(key)) return size_t{0};
  const json& v = j[key];
  if (const std::optional<uint64_t> n = json_count(v)) return static_cast<size_t>(*n);
  return Status::invalid(key + ": expected a count (a whole number >= 0), got " + v.dump());
}

json names_json(const auto& names) {
  json a = json::array();
  for (auto n : names) a.push_back(std::string(n));
  return a;
}

json policy_json(const ResourcePolicy& p) {
  return {{"history_only", {{"exact_script", p.history_only[0]}, {"user", p.history_only[1]}}},
          {"history_expert", std::string(history::expert_name(p.history_expert))},
          {"q_alone", {{"exact_script", p.q_alone[0]}, {"user", p.q_alone[1]}}},
          {"expert", std::string(history::expert_name(p.expert))}, {"tau", p.tau},
          {"trust_coef", p.trust_coef}, {"trust_floor", p.trust_floor}, {"policy_n", p.policy_n},
          {"policy_mae", p.policy_mae}, {"policy_encoder_share", p.policy_encoder_share},
          {"policy_history_mae", p.policy_history_mae},
          {"policy_fused_mae", p.policy_fused_mae}};
}

Result<ResourcePolicy> policy_from_json(const json& j) {
  if (!j.is_object()) return Status::invalid("expected an object");
  ResourcePolicy p;
  auto e = history::parse_expert(j.value("expert", std::string()));
  if (!e) return Status::invalid("expert: unknown (valid: last1, median3, median5, ewma, combined)");
  p.expert = *e;
  auto he = history::parse_expert(j.value("history_expert", std::string()));
  if (!he) return Status::invalid("history_expert: unknown (valid: last1, median3, median5, ewma, combined)");
  p.history_expert = *he;
  const json ho = j.value("history_only", json::object());
  for (history::Level l : {history::Level::kExactScript, history::Level::kUser}) {
    const std::string k(history::level_name(l));
    if (!ho.contains(k) || !ho[k].is_boolean())
      return Status::invalid("history_only." + k + ": required boolean");
    p.history_only[static_cast<size_t>(l)] = ho[k].get<bool>();
    const json qa = j.value("q_alone", json::object());
    if (!qa.contains(k) || !qa[k].is_boolean()) return Status::invalid("q_alone." + k + ": required boolean");
    p.q_alone[static_cast<size_t>(l)] = qa[k].get<bool>();
  }
  for (const char* k : {"tau", "trust_coef", "trust_floor"})
    if (!j.contains(k) || !j[k].is_number()) return Status::invalid(std::string(k) + ": required number");
  p.tau = j["tau"].get<double>();
  p.trust_coef = j["trust_coef"].get<double>();
  p.trust_floor = j["trust_floor"].get<double>();
  auto policy_n = count_in(j, "policy_n");
  if (!policy_n) return policy_n.status();
  p.policy_n = *policy_n;
  p.policy_mae = j.value("policy_mae", 0.0);
  p.policy_encoder_share = j.value("policy_encoder_share", 0.0);
  p.policy_history_mae = j.value("policy_history_mae", 0.0);
  p.policy_fused_mae = j.value("policy_fused_mae", 0.0);
  return p;
}

json upper_json(const UpperBound& u) {
  json classes = json::object();
  for (int c = 0; c < kRouteClasses; ++c) {
    classes[std::string(route_class_name(c))] = {{"q", num_or_null(u.q[static_cast<size_t>(c)])},
                                                 {"n", u.n[static_cast<size_t>(c)]}};
  }
  return {{"classes", classes}, {"pooled", num_or_null(u.pooled)}, {"pooled_n", u.pooled_n}};
}

Result<UpperBound> upper_from_json(const json& j) {
  if (!j.is_object() || !j.contains("classes") || !j["classes"].is_object())
    return Status::invalid("expected {\"classes\": {...}, \"pooled\": ...}");
  UpperBound u;
  for (int c = 0; c < kRouteClasses; ++c) {
    const std::string name(route_class_name(c));
    const json& cj = j["classes"].value(name, json::object());
    u.q[static_cast<size_t>(c)] = null_to_nan(cj.value("q", json(nullptr)));
    auto n = count_in(cj, "n");
    if (!n) return Status::invalid("classes." + name + "." + n.status().message());
    u.n[static_cast<size_t>(c)] = *n;
  }
  u.pooled = null_to_nan(j.value("pooled", json(nullptr)));
  auto pooled_n = count_in(j, "pooled_n");
  if (!pooled_n) return pooled_n.status();
  u.pooled_n = *pooled_n;
  return u;
}

std::string component_file(const char* what, Resource r) {
  return std::string(what) + "_" + std::string(resource_name(r)) + ".ubj";
}

json sets_json(const TrainingSets& s) {
  json gate = json::object(), fusion = json::object();
  for (Resource r : kResources) {
    const auto ri = idx(r);
    for (history::Expert e : history::kEstimates) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      gate[std::string(resource_name(r))][std::string(history::expert_name(e))] = s.gate[ri][ei];
      fusion[std::string(resource_name(r))][std::string(history::expert_name(e))] = s.fusion[ri][ei];
    }
  }
  return {{"code_fit", s.code_fit}, {"code_early_stopping", s.code_early_stopping},
          {"gate_fusion", s.gate_fusion}, {"policy", s.policy},
          {"code_fit_purged", s.code_fit_purged},
          {"gate_fusion_purged", s.gate_fusion_purged},
          {"fusion_censored_dropped", s.fusion_censored_dropped},
          {"gate", gate}, {"fusion", fusion}};
}

TrainingSets sets_from_json(const json& j) {
  TrainingSets s;
  auto list = [&](const json& v) {
    std::vector<std::string> out;
    if (v.is_array())
      for (const auto& x : v) if (x.is_string()) out.push_back(x.get<std::string>());
    return out;
  };
  s.code_fit = list(j.value("code_fit", json()));
  s.code_early_stopping = list(j.value("code_early_stopping", json()));
  s.gate_fusion = list(j.value("gate_fusion", json()));
  s.policy = list(j.value("policy", json()));
  // Counts the training report shows: one that is no count reads as 0.
  const auto count = [&](const char* key) {
    const Result<size_t> n = count_in(j, key);
    return n ? *n : size_t{0};
  };
  s.code_fit_purged = count("code_fit_purged");  // 0 in models trained before the purge
  s.gate_fusion_purged = count("gate_fusion_purged");
  s.fusion_censored_dropped = count("fusion_censored_dropped");
  for (Resource r : kResources) {
    const auto ri = idx(r);
    const std::string rn(resource_name(r));
    for (history::Expert e : history::kEstimates) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      const std::string en(history::expert_name(e));
      if (j.contains("gate") && j["gate"].contains(rn)) s.gate[ri][ei] = list(j["gate"][rn].value(en, json()));
      if (j.contains("fusion") && j["fusion"].contains(rn))
        s.fusion[ri][ei] = list(j["fusion"][rn].value(en, json()));
    }
  }
  return s;
}

Result<Component> component_from_json(const std::string& dir, const json& j) {
  if (!j.is_object() || !j.contains("constant") || !j["constant"].is_number())
    return Status::invalid("expected {\"file\": ..., \"constant\": ..., \"n\": ...}");
  Component c;
  c.constant = j["constant"].get<double>();
  auto n = count_in(j, "n");
  if (!n) return n.status();
  c.n = *n;
  const json& f = j.value("file", json(nullptr));
  if (f.is_string()) {
    auto b = models::Booster::load_file((std::filesystem::path(dir) / f.get<std::string>()).string());
    if (!b) return b.status();
    c.booster = std::move(b).value();
    if (c.booster->num_features() != 0 &&
        c.booster->num_features() != static_cast<size_t>(kGateFeatures) &&
        c.booster->num_features() != static_cast<size_t>(kFusionFeatures))
      return Status::invalid(f.get<std::string>() + ": unexpected feature count");
  }
  return c;
}

json priors_json(const history::ExpertPriors& p) { return {{"err", p.err}, {"n", p.n}}; }

Result<history::ExpertPriors> priors_from_json(const json& j) {
  try {
    history::ExpertPriors p;
    p.err = j.at("err").get<std::array<std::array<double, history::kNumExperts>, 2>>();
    p.n = j.at("n").get<std::array<size_t, 2>>();
    return p;
  } catch (const json::exception& e) {
    return Status::invalid(std::string("expected {\"err\": [[4], [4]], \"n\": [2]}: ") + e.what());
  }
}

Result<QSource> q_source_from_json(const json& j) {
  const std::string s = j.is_string() ? j.get<std::string>() : std::string();
  if (s == q_source_name(QSource::kCodeModel)) return QSource::kCodeModel;
  if (s == q_source_name(QSource::kTreeRoute)) return QSource::kTreeRoute;
  if (s == q_source_name(QSource::kMean)) return QSource::kMean;
  return Status::invalid("unknown Q source (valid: code_model, tree_route, mean)");
}

// The gate and fusion of one resource: their manifest entries, boosters written beside it.
Result<json> save_components(const std::filesystem::path& base, const CascadeModel::Impl& m, Resource r) {
  json comp = json::object();
  for (const char* what : {"gate", "fusion"}) {
    const Component& c = std::string(what) == "gate" ? m.gate[idx(r)] : m.fusion[idx(r)];
    json cj = {{"constant", c.constant}, {"n", c.n}, {"file", nullptr}};
    if (c.booster) {
      const std::string file = component_file(what, r);
      if (auto st = write_file_atomic((base / file).string(), c.booster->save_buffer(models::ModelFormat::kUbj)); !st)
        return st;
      cj["file"] = file;
    }
    comp[what] = cj;
  }
  return comp;
}

// The tree route's manifest entry (null without one), its boosters written beside it: the bag's
// first under "files" (as a build before bags wrote its one booster: such a build still reads the
// model, with the first booster alone), the others in order under "bag_files".
Result<json> save_tree_route(const std::filesystem::path& base, const CascadeModel::Impl& m) {
  if (!m.tree) return json(nullptr);
  json tree = {{"route", m.tree->to_json()}, {"files", json::object()}, {"bag_files", json::object()}};
  for (Resource r : kResources) {
    const std::vector<std::string> bag = m.tree->booster_bytes(r);
    const std::string rn(resource_name(r));
    for (size_t k = 0; k < bag.size(); ++k) {
      const std::string file = k == 0 ? component_file("tree", r)
                                      : "tree_" + rn + "_" + std::to_string(k) + ".ubj";
      if (auto st = write_file_atomic((base / file).string(), bag[k]); !st) return st;
      if (k == 0) {
        tree["files"][rn] = file;
      } else {
        tree["bag_files"][rn].push_back(file);
      }
    }
  }
  return tree;
}

// The manifest's "training" block: set sizes and times (the sets themselves go to their file).
json training_json(const CascadeTrainReport& report) {
  const TrainingSets& s = report.sets;
  return {{"code_fit", s.code_fit.size()},
          {"code_fit_purged", s.code_fit_purged},
          {"code_early_stopping", s.code_early_stopping.size()},
          {"gate_fusion", s.gate_fusion.size()},
          {"gate_fusion_purged", s.gate_fusion_purged},
          {"policy", s.policy.size()},
          {"fusion_censored_dropped", s.fusion_censored_dropped},
          {"labelled", {{"mem", report.labelled[0]}, {"vram", report.labelled[1]}}},
          {"seconds", {{"code", report.seconds_code},
                       {"components", report.seconds_components},
                       {"policy", report.seconds_policy}}},
          {"sets_file", "training_sets.json"}};
}

// Known keys, a format version this build reads, kind "cascade".
Status check_manifest_header(const json& m) {
  static const char* kKeys[] = {"format_version", "kind", "util_cap", "fallback", "trained_on", "trained_at",
                                "config", "policy", "q_source", "priors", "tree_route",
                                "components", "upper_bound", "features", "code_model", "training"};
  for (auto it = m.begin(); it != m.end(); ++it) {
    bool known = false;
    for (const char* k : kKeys) known = known || it.key() == k;
    if (!known) return Status::invalid(it.key() + ": unknown manifest key for kind \"cascade\"");
  }
  if (!m.contains("format_version") || !m["format_version"].is_number_integer())
    return Status::invalid("format_version: required integer");
  const auto version = m["format_version"].get<int64_t>();
  if (version > kCascadeFormatVersion)
    return Status::unsupported("format_version " + std::to_string(version) +
                               " of kind \"cascade\" is newer than this build reads (" +
                               std::to_string(kCascadeFormatVersion) + "); upgrade peakcast or retrain");
  if (version < kCascadeFormatVersion)
    return Status::unsupported("format_version " + std::to_string(version) +
                               " of kind \"cascade\" was written by an older peakcast whose model "
                               "format differs from this build's; retrain with `peakcast train`");
  if (m.value("kind", std::string()) != "cascade") return Status::invalid("kind: expected \"cascade\"");
  return Status::ok();
}

// One resource's fallback, policy, upper bound, Q source, priors, gate, fusion and gate means.
Status load_resource(const std::string& dir, const json& m, Resource r, CascadeModel::Impl& impl) {
  const auto ri = idx(r);
  const std::string rn(resource_name(r));
  const json& fb = m["fallback"].value(rn, json(nullptr));
  if (!fb.is_number()) return Status::invalid("fallback." + rn + ": required number");
  impl.fallback[ri] = fb.get<double>();
  auto pol = policy_from_json(m["policy"].value(rn, json(nullptr)));
  if (!pol) return pol.status().with_context("policy." + rn);
  impl.policy[ri] = *pol;
  auto ub = upper_from_json(m["upper_bound"].value(rn, json(nullptr)));
  if (!ub) return ub.status().with_context("upper_bound." + rn);
  impl.upper[ri] = *ub;
  auto qs = q_source_from_json(m.value("q_source", json::object()).value(rn, json(nullptr)));
  if (!qs) return qs.status().with_context("q_source." + rn);
  impl.q_source[ri] = *qs;
  auto pr = priors_from_json(m.value("priors", json::object()).value(rn, json(nullptr)));
  if (!pr) return pr.status().with_context("priors." + rn);
  impl.priors[ri] = *pr;
  const json& comp = m["components"].value(rn, json::object());
  auto gate = component_from_json(dir, comp.value("gate", json(nullptr)));
  if (!gate) return gate.status().with_context("components." + rn + ".gate");
  impl.gate[ri] = std::move(gate).value();
  auto fusion = component_from_json(dir, comp.value("fusion", json(nullptr)));
  if (!fusion) return fusion.status().with_context("components." + rn + ".fusion");
  impl.fusion[ri] = std::move(fusion).value();
  if (m.contains("features") && m["features"].contains("gate_mean")) {
    for (const auto& v : m["features"]["gate_mean"].value(rn, json::array()))
      impl.gate_feature_mean[ri].push_back(null_to_nan(v));
  }
  return Status::ok();
}

// The tree route, when the manifest has one, with its boosters read from beside it.
Status load_tree_route(const std::string& dir, const json& m, CascadeModel::Impl& impl) {
  const json& t = m.value("tree_route", json(nullptr));
  if (!t.is_object()) return Status::ok();
  std::array<std::vector<models::Booster>, kNumResources> boosters;
  for (Resource r : kResources) {
    const std::string rn(resource_name(r));
    const json& f = t.value("files", json::object()).value(rn, json(nullptr));
    if (!f.is_string()) continue;
    std::vector<json> files{f};
    const json& more = t.value("bag_files", json::object()).value(rn, json::array());
    if (!more.is_array()) return Status::invalid("tree_route.bag_files." + rn + ": expected an array of file names");
    files.insert(files.end(), more.begin(), more.end());
    for (const json& file : files) {
      if (!file.is_string()) return Status::invalid("tree_route.bag_files." + rn + ": expected file names");
      // Named in its error: a file cut short is the one to restore.
      auto b = models::Booster::load_file((std::filesystem::path(dir) / file.get<std::string>()).string());
      if (!b) return b.status();
      boosters[idx(r)].push_back(std::move(b).value());
    }
  }
  auto route = TreeRoute::from_json(t.value("route", json(nullptr)), std::move(boosters));
  if (!route) return route.status();
  impl.tree.emplace(std::move(route).value());
  return Status::ok();
}

// training.labelled: the train block's labels per resource (required: a resource with none is not
// predicted, so a model must say).
Status load_labelled(const json& m, CascadeModel::Impl& impl) {
  const json& l = m.value("training", json::object()).value("labelled", json(nullptr));
  if (!l.is_object()) return Status::invalid("training.labelled: required object {mem, vram}");
  for (Resource r : kResources) {
    const std::string rn(resource_name(r));
    const json& n = l.value(rn, json(nullptr));
    if (!n.is_number_unsigned()) return Status::invalid("training.labelled." + rn + ": required count");
    impl.report.labelled[idx(r)] = n.get<size_t>();
  }
  return Status::ok();
}

// The training sets' file named by the manifest, when it names one.
Status load_training_sets(const std::string& dir, const json& m, CascadeModel::Impl& impl) {
  const std::string sets_file = m.value("training", json::object()).value("sets_file", std::string());
  if (sets_file.empty()) return Status::ok();
  auto sets = read_file((std::filesystem::path(dir) / sets_file).string());
  if (!sets) return sets.status();
  json sj = json::parse(*sets, nullptr, false);
  if (sj.is_discarded() || !sj.is_object()) return Status::invalid(sets_file + ": not a JSON object");
  impl.report.sets = sets_from_json(sj);
  return Status::ok();
}

}  // namespace

Status CascadeModel::save(const std::string& dir) const {
  const Impl& m = *impl_;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io(dir + ": cannot create directory: " + ec.message());
  const std::filesystem::path base(dir);
  if (auto st = m.code.save((base / "code").string()); !st) return st;

  json policy = json::object(), components = json::object(), upper = json::object(),
       gate_mean = json::object(), fallback = json::object(), q_source = json::object(),
       priors = json::object();
  auto tree = save_tree_route(base, m);
  if (!tree) return tree.status();
  for (Resource r : kResources) {
    const auto ri = idx(r);
    const std::string rn(resource_name(r));
    policy[rn] = policy_json(m.policy[ri]);
    q_source[rn] = std::string(q_source_name(m.q_source[ri]));
    priors[rn] = priors_json(m.priors[ri]);
    upper[rn] = upper_json(m.upper[ri]);
    fallback[rn] = m.fallback[ri];
    json gm = json::array();
    for (double v : m.gate_feature_mean[ri]) gm.push_back(num_or_null(v));
    gate_mean[rn] = gm;
    auto comp = save_components(base, m, r);
    if (!comp) return comp.status();
    components[rn] = std::move(comp).value();
  }
  upper["coverage"] = m.cfg.coverage;
  json manifest = {
      {"format_version", kCascadeFormatVersion},
      {"kind", "cascade"},
      {"util_cap", m.util_cap},
      {"fallback", fallback},
      {"trained_on", m.trained_on},
      {"trained_at", m.trained_at_s},
      {"config", to_json(m.cfg)},
      {"policy", policy},
      {"q_source", q_source},
      {"priors", priors},
      {"tree_route", *tree},
      {"components", components},
      {"upper_bound", upper},
      {"features", {{"gate", names_json(gate_feature_names())},
                    {"fusion", names_json(fusion_feature_names())},
                    {"gate_mean", gate_mean}}},
      {"code_model", "code"},
      {"training", training_json(m.report)}};
  if (auto st = write_file_atomic((base / "training_sets.json").string(), sets_json(m.report.sets).dump() + "\n"); !st)
    return st;
  // The manifest last: a directory with a manifest is complete.
  return write_file_atomic((base / "manifest.json").string(), manifest.dump(2) + "\n");
}

Result<CascadeModel> CascadeModel::load(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "manifest.json").string();
  auto text = read_file(path);
  if (!text) return text.status();
  json m = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) return Status::invalid(path + ": not a JSON object");
  auto r = load(dir, m);
  if (!r) return r.status().with_context(path);
  return r;
}

Result<CascadeModel> CascadeModel::load(const std::string& dir, const json& m) {
  // The readers below check the fields they need; a value of another JSON type that slips past
  // them (nlohmann throws type_error) is a bad manifest, not an internal error.
  try {
    return load_checked(dir, m);
  } catch (const json::exception& e) {
    return Status::invalid(std::string("a field has the wrong JSON type (") + e.what() + ")");
  }
}

Result<CascadeModel> CascadeModel::load_checked(const std::string& dir, const json& m) {
  if (Status st = check_manifest_header(m); !st) return st;
  if (const auto t = m.find("trained_on"); t != m.end() && !t->is_string())
    return Status::invalid("trained_on: expected a string");
  auto impl = std::make_unique<Impl>();
  if (!m.contains("util_cap") || !m["util_cap"].is_number() || !(m["util_cap"].get<double>() > 0))
    return Status::invalid("util_cap: required positive number");
  impl->util_cap = m["util_cap"].get<double>();
  impl->trained_on = m.value("trained_on", std::string());
  if (const auto t = m.find("trained_at"); t != m.end() && t->is_number_integer()) impl->trained_at_s = t->get<int64_t>();
  auto cfg = cascade_config_from_json(m.value("config", json::object()));
  if (!cfg) return cfg.status().with_context("config");
  impl->cfg = *cfg;
  for (const char* k : {"fallback", "policy", "components", "upper_bound"})
    if (!m.contains(k) || !m[k].is_object()) return Status::invalid(std::string(k) + ": required object");
  for (Resource r : kResources) {
    if (Status st = load_resource(dir, m, r, *impl); !st) return st;
  }
  if (Status st = load_tree_route(dir, m, *impl); !st) return st;
  for (Resource r : kResources) {
    if (uses_tree_route(impl->q_source[idx(r)]) && !impl->tree)
      return Status::invalid("q_source." + std::string(resource_name(r)) + ": " +
                             std::string(q_source_name(impl->q_source[idx(r)])) +
                             " chosen but the manifest has no tree_route");
  }
  if (m.contains("features")) {
    const json& g = m["features"].value("gate", json::array());
    if (g != names_json(gate_feature_names()))
      return Status::invalid("features.gate: the saved feature list differs from this build's");
  }
  const std::string code_dir = m.value("code_model", std::string("code"));
  auto code = models::code::CodeModel::load((std::filesystem::path(dir) / code_dir).string());
  if (!code) return code.status().with_context("code_model");
  impl->code = std::move(code).value();
  impl->report.code = impl->code.report();
  impl->report.policy = impl->policy;
  if (Status st = load_training_sets(dir, m, *impl); !st) return st;
  if (Status st = load_labelled(m, *impl); !st) return st;
  return CascadeModel(std::move(impl));
}

}  // namespace peakcast::cascade
