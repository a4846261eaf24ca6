// The exact cache: key over what the code model reads, LRU bound.
#include <gtest/gtest.h>

#include "peakcast/cascade/exact_cache.h"

namespace peakcast::cascade {
namespace {

Job job(const std::string& script, const std::string& user, double cpus) {
  Job j;
  j.script = script;
  j.user = user;
  j.req_cpus = cpus;
  j.req_mem_bytes = 1ULL << 30;
  return j;
}

TEST(ExactCache, KeyChangesWithScriptUserAndRequestOnly) {
  const Job a = job("python a.py", "u1", 4);
  Job a2 = a;
  a2.job_id = "other";
  a2.submit_ms = 99;
  EXPECT_EQ(exact_cache_key(a), exact_cache_key(a2));
  EXPECT_NE(exact_cache_key(a), exact_cache_key(job("python b.py", "u1", 4)));
  EXPECT_NE(exact_cache_key(a), exact_cache_key(job("python a.py", "u2", 4)));
  EXPECT_NE(exact_cache_key(a), exact_cache_key(job("python a.py", "u1", 8)));
  // Field boundaries matter: script "ab" + user "c" differs from script "a" + user "bc".
  EXPECT_NE(exact_cache_key(job("ab", "c", 1)), exact_cache_key(job("a", "bc", 1)));
}

TEST(ExactCache, EvictsLeastRecentlyUsed) {
  ExactCache c(2);
  models::code::CodePrediction p1, p2, p3;
  p1.util = {0.1f, 0.0f};
  p2.util = {0.2f, 0.0f};
  p3.util = {0.3f, 0.0f};
  c.put("a", p1);
  c.put("b", p2);
  ASSERT_TRUE(c.get("a").has_value());  // a is now most recent
  c.put("c", p3);                       // evicts b
  EXPECT_FALSE(c.get("b").has_value());
  EXPECT_EQ(c.get("a")->util[0], 0.1f);
  EXPECT_EQ(c.get("c")->util[0], 0.3f);
  EXPECT_EQ(c.size(), 2u);
  ExactCache off(0);
  off.put("a", p1);
  EXPECT_FALSE(off.get("a").has_value());
}

}  // namespace
}  // namespace peakcast::cascade
