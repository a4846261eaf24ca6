#include "peakcast/history/history.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "history/id_set.h"
#include "history/series.h"
#include "peakcast/core/hash.h"

namespace peakcast::history {
namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using PerResource = std::array<detail::Series, kNumResources>;
using KeyMap = std::unordered_map<std::string, PerResource, StringHash, std::equal_to<>>;

KeyStats stats_of(const KeyMap& map, std::string_view key, int64_t t, Resource r,
                  bool floor_censored) {
  if (key.empty()) return {};
  const auto it = map.find(key);
  if (it == map.end()) return {};
  return it->second[idx(r)].stats(t, floor_censored);
}

size_t map_bytes(const KeyMap& map) {
  // Node: key string + value + next pointer + cached hash; plus the bucket array.
  size_t n = map.bucket_count() * sizeof(void*);
  for (const auto& [key, series] : map) {
    n += sizeof(std::string) + sizeof(PerResource) + 2 * sizeof(void*);
    if (key.capacity() > 15) n += key.capacity() + 1;
    for (const detail::Series& s : series) n += s.heap_bytes();
  }
  return n;
}

// The idempotence key of a completion: its run. Slurm keeps the id of a job it requeues and
// resets its submit time, so a later run of the same id is a run of its own (as peakcastd's store
// keys a completion: job id and submit time); the same run read twice is one.
uint64_t run_hash(const Job& job) {
  const uint64_t submit = static_cast<uint64_t>(job.submit_ms);
  char bytes[sizeof submit];
  for (size_t i = 0; i < sizeof submit; ++i) bytes[i] = static_cast<char>(submit >> (8 * i));
  return fnv1a64(std::string_view(bytes, sizeof bytes), fnv1a64(job.job_id));
}

}  // namespace

struct HistoryStore::Impl {
  KeyMap scripts;
  KeyMap users;
  bool track_ids = true;
  detail::IdSet ids;
  size_t added = 0;
  int64_t watermark = std::numeric_limits<int64_t>::min();
  // advance_pending_submit's promise; INT64_MAX: none made.
  int64_t pending_submit = std::numeric_limits<int64_t>::max();
};

HistoryStore::HistoryStore() : impl_(std::make_unique<Impl>()) {}
HistoryStore::HistoryStore(bool track_ids) : impl_(std::make_unique<Impl>()) { impl_->track_ids = track_ids; }
HistoryStore::~HistoryStore() = default;
HistoryStore::HistoryStore(HistoryStore&&) noexcept = default;
HistoryStore& HistoryStore::operator=(HistoryStore&&) noexcept = default;

bool HistoryStore::add_completion(const Job& job) {
  if (!job.any_valid()) return false;
  if (impl_->track_ids && !impl_->ids.insert(run_hash(job))) return false;
  ++impl_->added;
  const uint64_t tag = detail::order_tag(job);
  PerResource* by_script = nullptr;
  PerResource* by_user = nullptr;
  if (!job.script_key.empty()) by_script = &impl_->scripts[job.script_key];
  if (!job.user.empty()) by_user = &impl_->users[job.user];
  for (Resource r : kResources) {
    if (!job.is_valid(r)) continue;
    detail::Entry e;
    e.end = job.end_ms;
    e.submit = job.submit_ms;
    // Censored only for the resource whose limit killed the job; the other is a measurement.
    e.tag = censored_for(job, r) ? tag : (tag & ~uint64_t{1});
    e.x = job.label(r);
    // A valid label that is not censored is a measured peak.
    e.completed = !e.censored() && job.state == "COMPLETED";
    if (by_script) (*by_script)[idx(r)].add(e, impl_->watermark, impl_->pending_submit);
    if (by_user) (*by_user)[idx(r)].add(e, impl_->watermark, impl_->pending_submit);
  }
  return true;
}

void HistoryStore::advance_watermark(int64_t t) {
  if (t > impl_->watermark) impl_->watermark = t;
}

int64_t HistoryStore::watermark() const { return impl_->watermark; }

void HistoryStore::advance_pending_submit(int64_t t) {
  int64_t& p = impl_->pending_submit;
  if (p == std::numeric_limits<int64_t>::max() || t > p) p = t;
}

HistoryView HistoryStore::query(const Job& job, Resource r) const {
  return query(job.script_key, job.user, job.submit_ms, r);
}

HistoryViews HistoryStore::query_views(const Job& job, std::array<bool, kNumResources> which) const {
  HistoryViews views;
  for (Resource r : kResources) {
    if (which[idx(r)]) views[idx(r)] = query(job, r);
  }
  return views;
}

HistoryView HistoryStore::query(const std::string& script_key, const std::string& user,
                                int64_t t, Resource r) const {
  if (t < impl_->watermark) {
    throw std::logic_error("history: query at a time before the watermark");
  }
  HistoryView v;
  // A trailing OOM floors the experts of the same script only: for another script of the same
  // user it says nothing about the next job's need.
  v.exact = stats_of(impl_->scripts, script_key, t, r, true);
  v.user = stats_of(impl_->users, user, t, r, false);
  v.level = v.exact.count > 0 ? Level::kExactScript
            : v.user.count > 0 ? Level::kUser
                               : Level::kNone;
  return v;
}

HistoryStore::Forgotten HistoryStore::forget_before(int64_t t) {
  Forgotten out;
  for (KeyMap* map : {&impl_->scripts, &impl_->users}) {
    for (auto it = map->begin(); it != map->end();) {
      int64_t left = 0;
      for (detail::Series& s : it->second) {
        out.labels += static_cast<size_t>(s.forget_before(t));
        left += s.count();
      }
      if (left > 0) {
        ++it;
      } else {
        it = map->erase(it);
        ++out.keys;
      }
    }
  }
  return out;
}

size_t HistoryStore::size() const { return impl_->added; }

size_t HistoryStore::key_count() const { return impl_->scripts.size() + impl_->users.size(); }

size_t HistoryStore::memory_bytes() const {
  return sizeof(Impl) + map_bytes(impl_->scripts) + map_bytes(impl_->users) +
         impl_->ids.heap_bytes();
}

size_t HistoryStore::retained_entries() const {
  size_t n = 0;
  for (const KeyMap* m : {&impl_->scripts, &impl_->users}) {
    for (const auto& [key, series] : *m) {
      for (const detail::Series& s : series) n += s.retained();
    }
  }
  return n;
}

}  // namespace peakcast::history
