#include "peakcast/features/tokenizer.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace pf = peakcast::features;

namespace {

bool has(const std::vector<std::string>& toks, const std::string& t) {
  return std::find(toks.begin(), toks.end(), t) != toks.end();
}
bool any_starts_with(const std::vector<std::string>& toks, const std::string& prefix) {
  return std::any_of(toks.begin(), toks.end(),
                     [&](const std::string& t) { return t.rfind(prefix, 0) == 0; });
}
std::string bin_of(double x) { return std::to_string(static_cast<int>(std::floor(std::log2(x)))); }

}  // namespace

TEST(Tokenizer, SbatchDirectivesAreTyped) {
  const std::string script =
      "#!/bin/bash\n"
      "#SBATCH --job-name=train_resnet\n"
      "#SBATCH --mem=64G\n"
      "#SBATCH --mem-per-cpu=4000\n"
      "#SBATCH -t 2-00:00:00\n"
      "#SBATCH --gres=gpu:a100:2\n"
      "#SBATCH -N2\n"
      "#SBATCH --cpus-per-task 8\n"
      "#SBATCH --gpus=4\n";
  auto t = pf::tokenize_script(script);
  EXPECT_TRUE(has(t, "sbatch:--mem"));
  EXPECT_TRUE(has(t, "sbatch:--mem=bin:" + bin_of(64.0 * (1ULL << 30))));          // 36
  EXPECT_TRUE(has(t, "sbatch:--mem-per-cpu=bin:" + bin_of(4000.0 * 1024 * 1024)));  // bare = MB
  EXPECT_TRUE(has(t, "sbatch:--time"));                       // -t spelled long
  EXPECT_TRUE(has(t, "sbatch:--time=hbin:" + bin_of(48.0)));  // two days in hours
  EXPECT_TRUE(has(t, "sbatch:--gres:gpu"));
  EXPECT_TRUE(has(t, "sbatch:--gres:gpu:a100"));
  EXPECT_TRUE(has(t, "sbatch:--gres:gpu=gpus:2"));
  EXPECT_TRUE(has(t, "sbatch:--nodes=bin:1"));          // attached value "-N2"
  EXPECT_TRUE(has(t, "sbatch:--cpus-per-task=bin:3"));  // space-separated value
  EXPECT_TRUE(has(t, "sbatch:--gpus=gpus:4"));
  EXPECT_TRUE(has(t, "sbatch:--job-name=train_resnet"));
  EXPECT_FALSE(any_starts_with(t, "path:bin"));  // shebang dropped
}

TEST(Tokenizer, OtherSchedulersDirectives) {
  auto pbs = pf::tokenize_script("#PBS -l select=2:ncpus=8:mem=16gb:ngpus=1,walltime=12:00:00\n");
  EXPECT_TRUE(has(pbs, "pbs:-l:ncpus=bin:3"));
  EXPECT_TRUE(has(pbs, "pbs:-l:mem=bin:" + bin_of(16.0 * (1ULL << 30))));
  EXPECT_TRUE(has(pbs, "pbs:-l:ngpus=gpus:1"));
  EXPECT_TRUE(has(pbs, "pbs:-l:walltime=hbin:3"));  // 12 h

  auto uge = pf::tokenize_script("#$ -l h_vmem=1G,h_rt=1:0:0\n#$ -pe smp 4\n");
  EXPECT_TRUE(has(uge, "uge:-l:h_vmem=bin:30"));
  EXPECT_TRUE(has(uge, "uge:-l:h_rt=hbin:0"));
  EXPECT_TRUE(has(uge, "uge:-pe=smp"));
  EXPECT_TRUE(has(uge, "uge:-pe=bin:2"));

  auto lsf = pf::tokenize_script("#BSUB -R \"rusage[mem=4000] span[ptile=4]\"\n#BSUB -gpu \"num=2\"\n#BSUB -W 30\n");
  EXPECT_TRUE(has(lsf, "bsub:-R:rusage:mem=bin:" + bin_of(4000.0 * 1024 * 1024)));
  EXPECT_TRUE(has(lsf, "bsub:-R:span:ptile=bin:2"));
  EXPECT_TRUE(has(lsf, "bsub:-gpu:num=gpus:2"));
  EXPECT_TRUE(has(lsf, "bsub:-W=hbin:-1"));  // 30 minutes

  auto pjm = pf::tokenize_script("#PJM -L \"rscgrp=small,node=1\"\n#PJM -L elapse=72:00:00\n");
  EXPECT_TRUE(has(pjm, "pjm:-L:rscgrp=small"));
  EXPECT_TRUE(has(pjm, "pjm:-L:node=bin:0"));
  EXPECT_TRUE(has(pjm, "pjm:-L:elapse=hbin:6"));

  auto flux = pf::tokenize_script("#flux: -N 2\n#FLUX: -t 2h\n#COBALT -t 100\n#COBALT -n 2\n");
  EXPECT_TRUE(has(flux, "flux:-N=bin:1"));
  EXPECT_TRUE(has(flux, "flux:-t=hbin:1"));
  EXPECT_TRUE(has(flux, "cobalt:-t=hbin:0"));  // 100 minutes
  EXPECT_TRUE(has(flux, "cobalt:-n=bin:1"));
}

TEST(Tokenizer, CommandsFlagsAndNumbers) {
  auto t = pf::tokenize_script(
      "module load cuda/11.8 gcc\n"
      "export OMP_NUM_THREADS=8\n"
      "srun -n 4 /usr/bin/python3 train.py --batch-size 64 --lr=0.001 epochs=10 --model resnet50 | tee log.txt\n");
  EXPECT_TRUE(has(t, "cmd:module"));
  EXPECT_TRUE(has(t, "module:cuda"));
  EXPECT_TRUE(has(t, "module:cuda/11.8"));
  EXPECT_TRUE(has(t, "module:gcc"));
  EXPECT_TRUE(has(t, "env:OMP_NUM_THREADS"));
  EXPECT_TRUE(has(t, "env:OMP_NUM_THREADS=bin:3"));
  EXPECT_TRUE(has(t, "cmd:srun"));
  EXPECT_TRUE(has(t, "-n=bin:2"));
  EXPECT_TRUE(has(t, "cmd:python3"));  // a launcher's program, basename of its path
  EXPECT_TRUE(has(t, "--batch-size"));
  EXPECT_TRUE(has(t, "--batch-size=bin:6"));
  EXPECT_TRUE(has(t, "num:bin:6"));
  EXPECT_TRUE(has(t, "--lr=bin:-10"));
  EXPECT_TRUE(has(t, "kv:epochs=bin:3"));
  EXPECT_TRUE(has(t, "--model=resnet50"));
  EXPECT_TRUE(has(t, "path:train"));
  EXPECT_TRUE(has(t, "path:py"));
  EXPECT_TRUE(has(t, "op:|"));
  EXPECT_TRUE(has(t, "cmd:tee"));  // first word of the second pipeline stage
}

TEST(Tokenizer, CommentsDroppedDirectivesKept) {
  auto t = pf::tokenize_script(
      "#!/bin/bash\n# secretword in a comment\n#SBATCH -p gpu\necho hi # trailing secretword\n"
      "  # indented secretword\n#SBATCHX --mem=1\n");
  for (const auto& tok : t) EXPECT_EQ(tok.find("secretword"), std::string::npos) << tok;
  EXPECT_TRUE(has(t, "sbatch:--partition=gpu"));
  EXPECT_TRUE(has(t, "cmd:echo"));
  EXPECT_FALSE(any_starts_with(t, "sbatch:--mem"));  // "#SBATCHX" is a comment
}

// sbatch's own rules for #SBATCH (22.05, each case read live through job_submit/lua): a directive
// is a line that starts with "#SBATCH" in its first column, before the first command line (blank
// and comment lines do not end the header); "#SBATCH--mem=" needs no blank after the prefix; an
// unquoted '#' ends the options of the line; each line is read alone (a trailing backslash does
// not join the next one).
TEST(Tokenizer, SbatchDirectivesFollowSbatchRules) {
  const std::string mem = "sbatch:--mem=bin:";
  auto after = pf::tokenize_script("#!/bin/bash\n#SBATCH -p gpu\n\n# note\necho hi\n#SBATCH --mem=123M\n");
  EXPECT_TRUE(has(after, "sbatch:--partition=gpu"));
  EXPECT_TRUE(has(after, "cmd:echo"));
  EXPECT_FALSE(any_starts_with(after, "sbatch:--mem"));  // after a command: ignored by sbatch

  auto indented = pf::tokenize_script("#!/bin/bash\n   #SBATCH --mem=124M\ntrue\n");
  EXPECT_FALSE(any_starts_with(indented, "sbatch:--mem"));  // not in the first column

  auto glued = pf::tokenize_script("#!/bin/bash\n#SBATCH--mem=125M\ntrue\n");
  EXPECT_TRUE(has(glued, mem + bin_of(125.0 * 1024 * 1024)));

  auto noted = pf::tokenize_script("#SBATCH --mem=126M # note -c 2\n#sbatch --mem=1G\ntrue\n");
  EXPECT_TRUE(has(noted, mem + bin_of(126.0 * 1024 * 1024)));
  EXPECT_FALSE(any_starts_with(noted, "sbatch:--cpus-per-task"));
  EXPECT_EQ(std::count_if(noted.begin(), noted.end(),
                          [&](const std::string& t) { return t.rfind(mem, 0) == 0; }),
            1);  // "#sbatch" is a comment

  auto continued = pf::tokenize_script("#SBATCH --mem=133M \\\n#SBATCH -n 2\ntrue\n");
  EXPECT_TRUE(has(continued, mem + bin_of(133.0 * 1024 * 1024)));
  EXPECT_TRUE(has(continued, "sbatch:--ntasks=bin:1"));
  // The same for a plain comment: bash does not continue a comment line, so the command after
  // it is still a command.
  auto after_comment = pf::tokenize_script("# see below \\\necho hi\n");
  EXPECT_TRUE(has(after_comment, "cmd:echo"));
  // sbatch drops the trailing backslash (an escape with nothing after it on the line) and reads
  // the next line alone: not starting with '#', it is the first command, and later #SBATCH lines
  // are comments (src/sbatch/opt.c _next_line, _get_argument). So "--mem=4\\<newline>G" asks
  // for 4 MiB, not 4 GiB.
  auto split_value = pf::tokenize_script("#SBATCH --mem=4\\\nG\n#SBATCH -n 2\ntrue\n");
  EXPECT_TRUE(has(split_value, mem + bin_of(4.0 * 1024 * 1024)));
  EXPECT_FALSE(any_starts_with(split_value, "sbatch:--ntasks"));
}

// qsub's rules for #PBS (OpenPBS check_job_script.c pbs_ispbsdir / pbs_isexecutable, POSIX qsub):
// leading blanks before the prefix are allowed, directives after the first executable line are
// ignored, and a line with ':' in its first column is not executable. bsub reads #BSUB lines
// wherever they are (IBM LSF 10.1, bsub job_script: "#BSUB -P myproj" after the commands applies).
TEST(Tokenizer, PbsAndBsubDirectivesFollowTheirSchedulers) {
  auto after = pf::tokenize_script("#!/bin/bash\n#PBS -q gpu\n\n# note\ncd $PBS_O_WORKDIR\n#PBS -l mem=4gb\n");
  EXPECT_TRUE(has(after, "pbs:-q"));
  EXPECT_TRUE(has(after, "cmd:cd"));
  EXPECT_FALSE(any_starts_with(after, "pbs:-l"));  // after the first command: ignored by qsub

  auto indented = pf::tokenize_script("#!/bin/bash\n   #PBS -l walltime=01:00:00\ntrue\n");
  EXPECT_TRUE(any_starts_with(indented, "pbs:-l"));  // qsub skips leading blanks

  auto colon = pf::tokenize_script("#!/bin/sh\n: ${DATA:=/scratch}\n#PBS -l ncpus=8\ntrue\n");
  EXPECT_TRUE(any_starts_with(colon, "pbs:-l"));  // ':' in column 1 is not executable to qsub

  // qsub joins a directive line that ends in a backslash with the next line, backslash and
  // newline removed (OpenPBS qsub.c get_script: "next line is continuation of this line"), so
  // that line is part of the directive, not the first command; a comment line's backslash (and a
  // #PBS line after the first command, a comment to qsub) joins nothing.
  auto cont = pf::tokenize_script(
      "#!/bin/bash\n#PBS -l select=1:ncpus=8,\\\nwalltime=12:00:00 \\\n  -N train\n#PBS -q gpu\npython t.py\n");
  EXPECT_TRUE(has(cont, "pbs:-l:walltime=hbin:3"));
  EXPECT_TRUE(has(cont, "pbs:-N"));
  EXPECT_TRUE(has(cont, "pbs:-q"));  // the continuation is no command: later #PBS lines count
  EXPECT_FALSE(any_starts_with(cont, "env:walltime"));  // not an assignment command
  EXPECT_FALSE(has(cont, "cmd:train"));
  auto late = pf::tokenize_script("#!/bin/bash\ntrue\n#PBS -q gpu \\\nmake -j 4\n");
  EXPECT_TRUE(has(late, "cmd:make"));

  auto bsub = pf::tokenize_script("#!/bin/sh\n#BSUB -n 2\nmyjob1 arg1\n#BSUB -P myproj\n");
  EXPECT_TRUE(has(bsub, "bsub:-n=bin:1"));
  EXPECT_TRUE(has(bsub, "bsub:-P"));  // bsub reads #BSUB after commands too
}

// bash: a '#' that starts a word begins a comment that runs to the end of its line, and a
// backslash inside a comment is text: the next line is not joined to it. A '#' inside a word, in
// quotes or escaped starts no comment, so a backslash after it still continues the line.
TEST(Tokenizer, TrailingCommentEndsItsLine) {
  auto noted = pf::tokenize_script("echo start # see notes \\\npython train.py --steps 1024\n");
  EXPECT_TRUE(has(noted, "cmd:python"));
  EXPECT_TRUE(has(noted, "--steps=bin:10"));
  auto after_op = pf::tokenize_script("cd /work;# note \\\nmake -j 4\n");
  EXPECT_TRUE(has(after_op, "cmd:make"));
  for (const char* not_comment : {"python run.py a#b \\\n  --steps 1024\n",
                                  "python run.py '# x' \\\n  --steps 1024\n",
                                  "python run.py \\# \\\n  --steps 1024\n",
                                  "python run.py ${#x} \\\n  --steps 1024\n"}) {
    auto t = pf::tokenize_script(not_comment);
    EXPECT_TRUE(has(t, "--steps=bin:10")) << not_comment;  // joined: an argument of python
    EXPECT_EQ(std::count(t.begin(), t.end(), "cmd:python"), 1) << not_comment;
  }
}

// POSIX sh (XCU 2.2.1): a backslash that is itself escaped continues nothing: a line ending in
// "\\" ends there, with a literal backslash. An odd run of backslashes ends in an escaping one
// ("\\\" + newline continues), and so does a backslash in double quotes. In single quotes the
// backslash is an ordinary character, but the newline is inside the open quote, so the command
// still goes on to the next line (the quoted script that `bash -c` or env_parallel runs).
TEST(Tokenizer, BackslashNewlineContinuesOnlyWhereItEscapes) {
  auto escaped = pf::tokenize_script("echo C:\\\\\npython train.py --steps 1024\n");
  EXPECT_EQ(std::count(escaped.begin(), escaped.end(), "cmd:python"), 1);
  EXPECT_TRUE(has(escaped, "--steps=bin:10"));
  for (const char* joined : {"python run.py C:\\\\\\\n  --steps 1024\n",
                             "python run.py \"a \\\n  b\" --steps 1024\n",
                             "python run.py 'a'\\\n  --steps 1024\n",
                             "python run.py -c 'a \\\n  b' --steps 1024\n"}) {
    auto t = pf::tokenize_script(joined);
    EXPECT_TRUE(has(t, "--steps=bin:10")) << joined;  // an argument of python: joined
    EXPECT_EQ(std::count(t.begin(), t.end(), "cmd:python"), 1) << joined;
  }
}

// POSIX sh (XCU 2.2.1, 2.2.3) removes a backslash-newline pair, outside quotes and inside double
// quotes, before it splits words: "--mem=8\<newline>G" is the one word "--mem=8G", and a blank
// separates words only where the script writes one. Until 2026-12-06 the pair became a blank, so
// the split word read as "--mem=8" (8 MiB) and "G". In single quotes the pair is kept by this
// shell and removed by the shell that runs the string (bash -c '...'), so it is removed too.
TEST(Tokenizer, BackslashNewlineIsRemovedAsShDoes) {
  for (const auto& [split, whole] : std::vector<std::pair<std::string, std::string>>{
           {"srun --mem=8\\\nG ./a.out\n", "srun --mem=8G ./a.out\n"},
           {"srun --mem=8\\\r\nG ./a.out\r\n", "srun --mem=8G ./a.out\n"},
           {"python tr\\\nain.py --steps 10\\\n24\n", "python train.py --steps 1024\n"},
           {"echo \"ab\\\ncd\" x\n", "echo \"abcd\" x\n"},
           {"bash -c 'python t.py --k 1\\\n6'\n", "bash -c 'python t.py --k 16'\n"},
           {"python t.py \\\n  --k 16\n", "python t.py   --k 16\n"}}) {
    EXPECT_EQ(pf::tokenize_script(split), pf::tokenize_script(whole)) << split;
  }
  auto mem = pf::tokenize_script("srun --mem=8\\\nG ./a.out\n");
  EXPECT_FALSE(has(mem, "w:g")) << "the G of --mem=8G read as a word of its own";
}

TEST(Tokenizer, QuotingAndContinuations) {
  auto t = pf::tokenize_script(
      "python run.py \\\n  --steps 1024 \\\n  --name \"my run\"\n"
      "MSG='# not a comment'\nbash -c \"python eval.py --k 3\"\n");
  EXPECT_TRUE(has(t, "--steps=bin:10"));  // continuation joined into one command
  EXPECT_TRUE(has(t, "env:MSG"));
  EXPECT_TRUE(has(t, "w:comment"));        // '#' inside quotes is text
  EXPECT_TRUE(has(t, "--k=bin:1"));        // quoted command string tokenized as arguments
  EXPECT_EQ(std::count(t.begin(), t.end(), "cmd:python"), 1);
}

TEST(Tokenizer, TruncationKeepsHeadAndTailShares) {
  std::string script;
  for (int i = 0; i < 500; ++i) script += "cmd" + std::to_string(i) + "x\n";
  pf::TokenizerOptions o;
  o.max_tokens = 100;
  auto full = pf::tokenize_script(script, pf::TokenizerOptions{100000, 0.6});
  auto t = pf::tokenize_script(script, o);
  ASSERT_EQ(full.size(), 500u);
  ASSERT_EQ(t.size(), 100u);
  for (size_t i = 0; i < 60; ++i) EXPECT_EQ(t[i], full[i]);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(t[60 + i], full[full.size() - 40 + i]);
}

RC_GTEST_PROP(Tokenizer, TruncationRule, (std::vector<int> xs, unsigned max, unsigned share_pct)) {
  std::vector<std::string> toks;
  for (int x : xs) toks.push_back(std::to_string(x));
  pf::TokenizerOptions o{max % 300, (share_pct % 101) / 100.0};
  auto t = pf::truncate_tokens(toks, o);
  RC_ASSERT(t.size() == std::min(toks.size(), o.max_tokens));
  if (toks.size() > o.max_tokens) {
    size_t head = static_cast<size_t>(std::floor(o.head_share * o.max_tokens));
    for (size_t i = 0; i < head; ++i) RC_ASSERT(t[i] == toks[i]);
    for (size_t i = head; i < t.size(); ++i) RC_ASSERT(t[i] == toks[toks.size() - t.size() + i]);
  }
}

RC_GTEST_PROP(Tokenizer, NeverThrowsDeterministicAndBounded, (std::string text)) {
  auto a = pf::tokenize_script(text);
  auto b = pf::tokenize_script(text);
  RC_ASSERT(a == b);
  RC_ASSERT(a.size() <= 4096u);
  for (const auto& t : a) RC_ASSERT(!t.empty() && t.size() <= 64u);
}

TEST(Tokenizer, HashedIdsInRangeAndStable) {
  std::vector<std::string> toks = {"cmd:python", "--batch-size=bin:6", "num:bin:6"};
  auto ng = pf::hashed_ngrams(toks, 1000);
  ASSERT_EQ(ng.size(), 5u);  // 3 unigrams then 2 bigrams
  for (auto id : ng) EXPECT_TRUE(id >= 0 && id < 1000);
  EXPECT_EQ(ng[0], pf::token_bucket("cmd:python", 1000));
  EXPECT_EQ(pf::hashed_ngrams(toks, 1000), ng);
  EXPECT_EQ(pf::hashed_ngrams(toks, 1000, false).size(), 3u);
  auto ids = pf::hashed_token_ids(toks, 50);
  for (auto id : ids) EXPECT_TRUE(id >= 1 && id < 50);
  EXPECT_THROW(pf::hashed_token_ids(toks, 1), std::invalid_argument);
  EXPECT_TRUE(pf::hashed_ngrams({}, 10).empty());
}

TEST(Tokenizer, RealScriptsNeverThrow) {
  const std::string path = PEAKCAST_SOURCE_DIR "/../shared/data/scripts/script-ai.jsonl";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "real scripts absent: " << path;
  std::string line;
  std::vector<size_t> counts;
  size_t truncated = 0, with_directive = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    std::string text = j.at("text").get<std::string>();
    std::vector<std::string> toks;
    ASSERT_NO_THROW(toks = pf::tokenize_script(text)) << j.at("id");
    auto again = pf::tokenize_script(text);
    ASSERT_EQ(toks, again);
    auto full = pf::tokenize_script(text, pf::TokenizerOptions{1u << 30, 0.6});
    counts.push_back(full.size());
    if (full.size() > 4096) ++truncated;
    bool directive = std::any_of(toks.begin(), toks.end(), [](const std::string& t) {
      for (const char* p : {"sbatch:", "pbs:", "bsub:", "uge:", "pjm:", "flux:", "cobalt:"}) {
        if (t.rfind(p, 0) == 0) return true;
      }
      return false;
    });
    if (directive) ++with_directive;
    EXPECT_FALSE(toks.empty()) << "script " << j.at("id") << " gave no tokens";
  }
  ASSERT_EQ(counts.size(), 652u);
  std::sort(counts.begin(), counts.end());
  auto q = [&](double p) { return counts[static_cast<size_t>(p * (counts.size() - 1))]; };
  std::cout << "[ tokens   ] 652 real scripts: min " << counts.front() << ", p10 " << q(0.1)
            << ", p50 " << q(0.5) << ", p90 " << q(0.9) << ", p99 " << q(0.99) << ", max "
            << counts.back() << "; over 4096: " << truncated << "; with a parsed directive: "
            << with_directive << "\n";
  // Nearly every script in the corpus is a batch script with directives.
  EXPECT_GT(with_directive, counts.size() * 9 / 10);
}
