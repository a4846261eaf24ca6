// Helpers shared by the serve tests: a temp folder, a history model, canonical bodies, and a
// store wrapper that fails on demand.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/cascade/history_predictor.h"
#include "peakcast/serve/store.h"

namespace peakcast::serve::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "peakcast-serve-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::shared_ptr<const cascade::Predictor> history_model() {
  return std::make_shared<cascade::HistoryPredictor>(cascade::HistoryPredictorConfig{});
}

inline nlohmann::json request_json(const std::string& user, const std::string& script,
                                   int64_t submit, uint64_t req_mem) {
  return {{"job_id", "pending"}, {"user", user}, {"submit_time", submit},
          {"req_mem_bytes", req_mem}, {"script", script}};
}

inline nlohmann::json completion_json(const std::string& id, const std::string& user,
                                      const std::string& script, int64_t submit, int64_t end,
                                      uint64_t req_mem, uint64_t peak) {
  nlohmann::json j = request_json(user, script, submit, req_mem);
  j["job_id"] = id;
  j["end_time"] = end;
  j["peak_mem_bytes"] = peak;
  return j;
}

// Wraps a store; while `fail_writes` is set, writes fail like a full disk; a `checkpoint_error`
// set before use is reported by health() as a failed WAL checkpoint's.
class FaultyStore final : public CompletionStore {
 public:
  explicit FaultyStore(std::unique_ptr<CompletionStore> inner) : inner_(std::move(inner)) {}
  std::atomic<bool> fail_writes{false};
  std::string checkpoint_error;
  Result<bool> insert(const Job& job) override {
    if (fail_writes) return Status::io("database: storing job " + job.job_id + ": database or disk is full");
    return inner_->insert(job);
  }
  Result<bool> contains(const std::string& id) override { return inner_->contains(id); }
  Result<std::optional<Job>> find(const std::string& id) override { return inner_->find(id); }
  Result<bool> contains_run(const Job& run) override { return inner_->contains_run(run); }
  Result<std::optional<Job>> find_run(const Job& run) override { return inner_->find_run(run); }
  StoreHealth health() override {
    StoreHealth h = inner_->health();
    h.answers_not_kept += answers_refused_.load();
    if (!checkpoint_error.empty()) h.checkpoint_error = checkpoint_error;
    return h;
  }
  Status for_each(const std::function<void(Job&&)>& v) override { return inner_->for_each(v); }
  Result<std::vector<Job>> recent(const HistoryFilter& f, size_t n) override { return inner_->recent(f, n); }
  Result<size_t> count() override { return inner_->count(); }
  Result<std::optional<std::string>> get_meta(const std::string& k) override { return inner_->get_meta(k); }
  Status set_meta(const std::string& k, const std::string& v) override {
    if (fail_writes) return Status::io("database: disk is full");
    return inner_->set_meta(k, v);
  }
  Status record_answer(const AnswerRecord& a) override {
    if (fail_writes) {
      ++answers_refused_;
      return Status::io("database: keeping an answer: database or disk is full");
    }
    return inner_->record_answer(a);
  }
  Status for_each_answer(const std::function<void(AnswerRecord&&)>& v) override { return inner_->for_each_answer(v); }

 private:
  std::unique_ptr<CompletionStore> inner_;
  std::atomic<uint64_t> answers_refused_{0};
};

}  // namespace peakcast::serve::testing
