// The swappable model (model_slot.h).
#include "peakcast/serve/model_slot.h"

#include <sys/stat.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "peakcast/core/hash.h"
#include "peakcast/core/io.h"
#include "peakcast/core/log.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/bounds.h"

namespace peakcast::serve {
namespace {

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

// A Prometheus label value: backslash, quote and newline escaped.
std::string label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

Result<ModelInfo> read_model_info(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  Result<std::string> text = read_file(path);
  if (!text) return text.status();
  const nlohmann::json m = nlohmann::json::parse(*text, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return Status::invalid(path + ": not a JSON object");
  ModelInfo info;
  info.dir = dir;
  info.kind = m.value("kind", std::string("unknown"));
  const auto fv = m.find("format_version");
  const std::string format = fv != m.end() && fv->is_number_integer() ? std::to_string(fv->get<int64_t>()) : "?";
  info.version = info.kind + "-v" + format + "-" + sha256_hex(*text).substr(0, 12);
  if (auto t = m.find("trained_at"); t != m.end()) {
    // Epoch seconds within the readers' range; anything else (1e300: llround's result out of
    // range is unspecified) is no time: the file's own, below.
    if (t->is_number() && t->get<double>() >= 0 && t->get<double>() <= ingest::kMaxEpochSeconds) {
      info.trained_at_s = static_cast<int64_t>(std::llround(t->get<double>()));
    }
    if (t->is_string()) info.trained_at_s = parse_timestamp_ms(t->get<std::string>()).value_or(0) / kMsPerSecond;
  }
  struct stat st{};
  if (info.trained_at_s == 0 && ::stat(path.c_str(), &st) == 0) info.trained_at_s = st.st_mtime;
  return info;
}

ModelSlot::ModelSlot(std::shared_ptr<const cascade::Predictor> model)
    : ModelSlot(model, ModelInfo{"", "in-memory", "in-memory", model ? model->describe() : "", 0, now_s()}) {}

ModelSlot::ModelSlot(std::shared_ptr<const cascade::Predictor> model, ModelInfo info)
    : model_(std::move(model)), info_(std::move(info)) {
  if (!model_) throw std::invalid_argument("ModelSlot: a model is required");
}

Result<std::shared_ptr<ModelSlot>> ModelSlot::open(const std::string& dir) {
  auto loaded = cascade::load_predictor(dir);
  if (!loaded) return loaded.status();
  auto info = read_model_info(dir);
  if (!info) return info.status();
  std::shared_ptr<const cascade::Predictor> model(std::move(*loaded));
  info->description = model->describe();
  info->loaded_at_s = now_s();
  return std::make_shared<ModelSlot>(std::move(model), std::move(*info));
}

std::shared_ptr<const cascade::Predictor> ModelSlot::get() const {
  std::lock_guard lock(mu_);
  return model_;
}

ModelInfo ModelSlot::info() const {
  std::lock_guard lock(mu_);
  return info_;
}

Result<ModelInfo> ModelSlot::reload(const std::string& dir_arg) {
  std::lock_guard one(reload_mu_);
  const ModelInfo current = info();
  const std::string dir = dir_arg.empty() ? current.dir : dir_arg;
  auto refuse = [&](const Status& s) -> Result<ModelInfo> {
    reloads_failed_.fetch_add(1, std::memory_order_relaxed);
    Status why = s.with_context("reload " + (dir.empty() ? std::string("(no model directory)") : dir) +
                                ": kept " + current.version);
    {
      std::lock_guard lock(mu_);
      last_error_ = why.message();
    }
    log(LogLevel::kWarn, why.message());
    return why;
  };
  if (dir.empty()) return refuse(Status::invalid("this model was not loaded from a directory"));
  // A loader that throws (a manifest field of the wrong JSON type, a library's error) fails the
  // reload like any other reason: thrown out of the SIGHUP or admin thread, it would call
  // std::terminate. The JSON library's message is left out: it may quote the file's bytes.
  Result<std::unique_ptr<cascade::Predictor>> loaded = Status::internal("not loaded");
  Result<ModelInfo> info = Status::internal("not read");
  try {
    loaded = cascade::load_predictor(dir);  // the slow part, outside every lock
    if (!loaded) return refuse(loaded.status());
    info = read_model_info(dir);
  } catch (const nlohmann::json::exception& e) {
    return refuse(Status::invalid(dir + "/manifest.json: a field of an unexpected JSON type (JSON error id " +
                                  std::to_string(e.id) + ")"));
  } catch (const std::exception& e) {
    return refuse(Status::internal(std::string("loading threw: ") + e.what()));
  }
  if (!info) return refuse(info.status());
  std::shared_ptr<const cascade::Predictor> model(std::move(*loaded));
  const double old_cap = get()->util_cap();
  if (std::abs(model->util_cap() - old_cap) > 1e-12) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "util_cap %g differs from the served model's %g (the stored "
                  "labels use it): restart peakcastd to change it", model->util_cap(), old_cap);
    return refuse(Status::invalid(buf));
  }
  info->description = model->describe();
  info->loaded_at_s = now_s();
  {
    std::lock_guard lock(mu_);
    model_ = std::move(model);  // the old model lives on in requests that still hold it
    info_ = *info;
    last_error_.clear();
  }
  reloads_ok_.fetch_add(1, std::memory_order_relaxed);
  log(LogLevel::kInfo, "model reloaded: " + info->version + " from " + dir + " (was " + current.version + ")");
  return *info;
}

nlohmann::json ModelSlot::to_json() const {
  std::lock_guard lock(mu_);
  return {{"version", info_.version},
          {"kind", info_.kind},
          {"trained_at", info_.trained_at_s},
          {"loaded_at", info_.loaded_at_s},
          {"dir", info_.dir},
          {"description", info_.description},
          {"reloads", {{"ok", reloads_ok_.load()}, {"failed", reloads_failed_.load()}}},
          {"last_reload_error", last_error_.empty() ? nlohmann::json() : nlohmann::json(last_error_)}};
}

std::string ModelSlot::render_metrics() const {
  const ModelInfo i = info();
  char buf[1024];
  std::string out =
      "# HELP peakcast_model_info The model being served (value 1).\n"
      "# TYPE peakcast_model_info gauge\n";
  out += "peakcast_model_info{version=\"" + label(i.version) + "\",kind=\"" + label(i.kind) + "\"} 1\n";
  std::snprintf(buf, sizeof buf,
                "# HELP peakcast_model_trained_timestamp_seconds When the served model was trained (0: unknown).\n"
                "# TYPE peakcast_model_trained_timestamp_seconds gauge\n"
                "peakcast_model_trained_timestamp_seconds %" PRId64 "\n"
                "# HELP peakcast_model_loaded_timestamp_seconds When this process loaded the served model.\n"
                "# TYPE peakcast_model_loaded_timestamp_seconds gauge\n"
                "peakcast_model_loaded_timestamp_seconds %" PRId64 "\n"
                "# HELP peakcast_model_reloads_total Model reloads (SIGHUP, admin socket) by result.\n"
                "# TYPE peakcast_model_reloads_total counter\n"
                "peakcast_model_reloads_total{result=\"ok\"} %" PRIu64 "\n"
                "peakcast_model_reloads_total{result=\"failed\"} %" PRIu64 "\n",
                i.trained_at_s, i.loaded_at_s, reloads_ok_.load(), reloads_failed_.load());
  return out + buf;
}

}  // namespace peakcast::serve
