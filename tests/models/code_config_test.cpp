// Declared configuration and the user vocabulary (Torch-free parts of the code predictor).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "code_test_data.h"
#include "peakcast/models/code/code_config.h"
#include "peakcast/models/code/code_text.h"

namespace peakcast::models::code {
namespace {

TEST(CodeConfig, JsonRoundTripKeepsEveryOption) {
  CodeModelConfig c;
  c.encoder = "textcnn";
  c.lr = 0.0125;
  c.seed = 1234567890123ULL;
  c.seq_max_tokens = 77;
  auto back = code_config_from_json(to_json(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(to_json(*back), to_json(c));
  EXPECT_EQ(to_json(c).size(), code_config_options().size());
}

TEST(CodeConfig, UnknownKeyIsAnErrorListingValidNames) {
  auto r = code_config_from_json({{"learning_rate", 0.1}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("learning_rate"), std::string::npos);
  EXPECT_NE(r.status().message().find("lr"), std::string::npos);
  CodeModelConfig c;
  EXPECT_FALSE(set_code_option(c, "batchsize", "3").is_ok());
}

TEST(CodeConfig, BoundsAndTypesAreChecked) {
  EXPECT_FALSE(code_config_from_json({{"batch_size", 0}}).ok());
  EXPECT_FALSE(code_config_from_json({{"batch_size", 2.5}}).ok());
  EXPECT_FALSE(code_config_from_json({{"dropout", 1.5}}).ok());
  EXPECT_FALSE(code_config_from_json({{"encoder", 3}}).ok());
  CodeModelConfig c;
  EXPECT_TRUE(set_code_option(c, "lr", "3e-3").is_ok());
  EXPECT_DOUBLE_EQ(c.lr, 3e-3);
  EXPECT_FALSE(set_code_option(c, "lr", "fast").is_ok());
  EXPECT_TRUE(set_code_option(c, "encoder", "bilstm").is_ok());
  EXPECT_EQ(c.encoder, "bilstm");
  c.patience = -1;
  EXPECT_FALSE(c.validate().is_ok());
}

TEST(UserVocab, RareAndUnseenUsersShareRowZero) {
  auto jobs = testing::make_batch_size_jobs(50, 1, 3);
  Job rare = jobs[0];
  rare.user = "rare";
  auto all = testing::ptrs(jobs);
  all.push_back(&rare);
  auto v = UserVocab::fit(all, 2);
  EXPECT_EQ(v.rows(), 4);  // user0..user2 + unknown
  EXPECT_EQ(v.row("rare"), 0);
  EXPECT_EQ(v.row("stranger"), 0);
  EXPECT_GT(v.row("user1"), 0);
  EXPECT_NE(v.row("user1"), v.row("user2"));
  auto back = UserVocab::from_json(v.to_json());
  ASSERT_TRUE(back.ok());
  for (const char* u : {"user0", "user1", "user2", "rare"}) EXPECT_EQ(back->row(u), v.row(u));
  EXPECT_FALSE(UserVocab::from_json(nlohmann::json::array({"zz"})).ok());
}

TEST(CodeText, ScriptElseIdentity) {
  Job j;
  j.workload = "17";
  j.job_name = "sim";
  auto t = code_text(j);
  EXPECT_FALSE(t.is_script);
  EXPECT_NE(t.text.find("workload=17"), std::string::npos);
  auto tokens = code_tokens(t, 4096);
  EXPECT_NE(std::find(tokens.begin(), tokens.end(), "identity:workload=17"), tokens.end());
  j.script = "  \n";
  EXPECT_FALSE(code_text(j).is_script);
  j.script = "echo hi\n";
  EXPECT_TRUE(code_text(j).is_script);
}

TEST(CodeText, HeadTailKeepsSixtyFortySplit) {
  std::vector<int64_t> ids(100);
  for (int i = 0; i < 100; ++i) ids[i] = i;
  auto out = head_tail(ids, 10);
  ASSERT_EQ(out.size(), 10u);
  EXPECT_EQ(out[5], 5);
  EXPECT_EQ(out[6], 96);
  EXPECT_EQ(head_tail({1, 2}, 10).size(), 2u);
}

}  // namespace
}  // namespace peakcast::models::code
