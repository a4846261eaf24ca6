#include <algorithm>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "peakcast/core/io.h"
#include "peakcast/eval/method.h"

namespace peakcast::eval {

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void Method::predict_batch(std::span<const JobContext* const> jobs,
                           std::span<Prediction> out) const {
  if (jobs.size() != out.size()) throw std::invalid_argument("predict_batch: size mismatch");
  for (size_t i = 0; i < jobs.size(); ++i) out[i] = predict(*jobs[i]->job, jobs[i]->view);
}

void MethodRegistry::add(std::string name, std::string description, MethodFactory factory,
                         MethodReads reads) {
  if (contains(name)) throw std::logic_error("method registered twice: " + name);
  entries_.push_back({std::move(name), std::move(description), std::move(factory), reads});
}

const MethodRegistry::Entry* MethodRegistry::find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

MethodReads MethodRegistry::reads(std::string_view name) const {
  const Entry* e = find(name);
  return e ? e->reads : MethodReads{};
}

std::vector<std::string> MethodRegistry::reading(bool MethodReads::*option) const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) {
    if (e.reads.*option) out.push_back(e.name);
  }
  return out;
}

bool MethodRegistry::contains(std::string_view name) const { return find(name) != nullptr; }

std::vector<std::string> MethodRegistry::names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.name);
  return out;
}

std::string_view MethodRegistry::description(std::string_view name) const {
  const Entry* e = find(name);
  return e ? std::string_view(e->description) : std::string_view();
}

Result<std::unique_ptr<Method>> MethodRegistry::create(std::string_view name,
                                                       const MethodOptions& o) const {
  if (const Entry* e = find(name)) return e->factory(o);
  return Status::invalid(fmt::format("unknown method '{}'; valid methods: {}", name,
                                     fmt::join(names(), ", ")));
}

Result<std::vector<std::string>> MethodRegistry::resolve(std::string_view list) const {
  if (trim(list) == "all") return names();
  std::vector<std::string> out;
  for (std::string_view part : split(list, ',')) {
    part = trim(part);
    if (part.empty()) continue;
    if (!contains(part)) {
      return Status::invalid(fmt::format("unknown method '{}'; valid methods: {} (or 'all')", part,
                                         fmt::join(names(), ", ")));
    }
    if (std::find(out.begin(), out.end(), part) == out.end()) out.emplace_back(part);
  }
  if (out.empty()) return Status::invalid("no method named; valid methods: " + fmt::format("{}", fmt::join(names(), ", ")));
  return out;
}

}  // namespace peakcast::eval
