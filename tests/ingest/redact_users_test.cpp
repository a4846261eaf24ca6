// Redaction's rules 7-9 (docs/redaction.md: e-mail addresses, scheduler mail directives, user
// paths), hashing invariance across users and cosmetic edits, idempotence, and a sweep over the
// real SCRIPT-AI corpus when ../shared is present. Rules 1-6: redact_test.cpp.
#include "peakcast/ingest/redact.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/core/hash.h"

namespace peakcast::ingest {
namespace {

// ---- e-mail


TEST(Redact, EmailAddresses) {
  RedactionCounts c;
  EXPECT_EQ(redact_script("#SBATCH --mail-user=jane.doe+hpc@cs.example.edu\n#SBATCH --mail-type=END", &c),
            "#SBATCH --mail-user=<EMAIL>\n#SBATCH --mail-type=END");
  EXPECT_EQ(c.emails, 1);
  EXPECT_EQ(redact_script("#PBS -M me@uni.ac.uk"), "#PBS -M <EMAIL>");
  EXPECT_EQ(redact_script("#SBATCH --mail-user=${USER}@iastate.edu"), "#SBATCH --mail-user=<EMAIL>");
  EXPECT_EQ(redact_script("#PBS -M <YourNetID>@unm.edu"), "#PBS -M <EMAIL>");
  EXPECT_EQ(redact_script("echo done | mail -s hi mailto:a@b.org"), "echo done | mail -s hi mailto:<EMAIL>");
  // Directive values that are bare user names are identifying too.
  EXPECT_EQ(redact_script("#SBATCH --mail-user jsmith"), "#SBATCH --mail-user <EMAIL>");
  EXPECT_EQ(redact_script("#BSUB -u jsmith"), "#BSUB -u <EMAIL>");
  EXPECT_EQ(redact_script("#SBATCH --mail-user < your email >"), "#SBATCH --mail-user <EMAIL>");
  EXPECT_EQ(redact_script("#SBATCH --mail-user=\"a@b.edu\""), "#SBATCH --mail-user=\"<EMAIL>\"");
  // Slurm -M is --clusters, not mail; read groups and git logins are not people.
  for (std::string s : {"#SBATCH -M cluster2", "bwa mem -R \"@RG\\tID:x\" ref.fa",
                        "git clone git@github.com:org/repo.git", "python -m pkg@1.2",
                        "sed -e 's@spec.satisfies@x@g' f"}) {
    EXPECT_EQ(redact_script(s), s) << s;
  }
  // Only those two forms: a person called s or git is still a person.
  EXPECT_EQ(redact_script("echo report | mail s@company.com"), "echo report | mail <EMAIL>");
  EXPECT_EQ(redact_script("#contact: git@company.com"), "#contact: <EMAIL>");
  EXPECT_EQ(redact_script("notify s@company.com git@company.org"), "notify <EMAIL> <EMAIL>");
}

// A directive line that ends in a backslash goes on over the next one: qsub joins them (OpenPBS
// qsub.c get_script), and whatever sbatch does (it reads each #SBATCH line alone), the name on
// the next line is a person's all the same. The mail option, its value, or part of the value on
// a continuation line is read as the joined directive's (until 2026-12-06 only the directive's
// own line was, and `-M jdoe` on the next line survived). The value's continuations stay, so the
// lines stay where they were; the placeholder stands on the value's last line.
TEST(Redact, MailDirectivesOverContinuationLines) {
  struct Case {
    std::string in, out;
  };
  const std::vector<Case> cases = {
      {"#PBS -m abe \\\n     -M jdoe\nmpirun ./a.out", "#PBS -m abe \\\n     -M <EMAIL>\nmpirun ./a.out"},
      {"#PBS -l nodes=1 \\\n-M jdoe", "#PBS -l nodes=1 \\\n-M <EMAIL>"},
      {"#PBS -M \\\njdoe\ndate", "#PBS -M \\\n<EMAIL>\ndate"},
      {"#PBS -M jdoe,\\\nasmith -q gpu", "#PBS -M \\\n<EMAIL> -q gpu"},
      {"#PBS -M jdoe,\\\nasmith,\\\nbkhan", "#PBS -M \\\n\\\n<EMAIL>"},
      {"#PBS -M a@x.org,\\\nasmith", "#PBS -M \\\n<EMAIL>"},
      {"#$ -m e \\\n  -M jdoe", "#$ -m e \\\n  -M <EMAIL>"},
      {"#BSUB -J x \\\n  -u jdoe", "#BSUB -J x \\\n  -u <EMAIL>"},
      {"#SBATCH --mail-type=END \\\n  --mail-user=jdoe\necho", "#SBATCH --mail-type=END \\\n  --mail-user=<EMAIL>\necho"},
      {"#SBATCH --mail-user \\\njdoe", "#SBATCH --mail-user \\\n<EMAIL>"},
      {"#SBATCH --mail-user=jd\\\noe", "#SBATCH --mail-user=\\\n<EMAIL>"},
      {"#PJM -m e \\\n --mail-list jdoe", "#PJM -m e \\\n --mail-list <EMAIL>"},
      {"#COBALT -n 1 \\\n --notify jdoe", "#COBALT -n 1 \\\n --notify <EMAIL>"},
  };
  for (const auto& c : cases) {
    RedactionCounts n;
    const std::string once = redact_script(c.in, &n);
    EXPECT_EQ(once, c.out) << c.in;
    EXPECT_GE(n.emails, 1) << c.in;
    EXPECT_EQ(once.find("jdoe"), std::string::npos) << c.in;
    EXPECT_EQ(once.find("smith"), std::string::npos) << c.in;
    EXPECT_EQ(redact_script(once), once) << c.in;  // idempotent
  }
  // A name glued to an address rule 7 redacted is redacted too (until 2026-12-06 the value read
  // as the placeholder alone and `bob` stayed); a list of redacted addresses stays as it is.
  EXPECT_EQ(redact_script("#PBS -M a@x.org,bob"), "#PBS -M <EMAIL>");
  EXPECT_EQ(redact_script("#PBS -M a@x.org,b@y.org"), "#PBS -M <EMAIL>,<EMAIL>");
  EXPECT_EQ(redact_script("#SBATCH --mail-user='j'doe"), "#SBATCH --mail-user=<EMAIL>");
  EXPECT_EQ(redact_script("#SBATCH --mail-user=''export"), "#SBATCH --mail-user=<EMAIL>");
  // Each #-line is a directive of its own: a continuation joins only a line that is not one.
  EXPECT_EQ(redact_script("#PBS -l nodes=1 \\\n#PBS -M jdoe"), "#PBS -l nodes=1 \\\n#PBS -M <EMAIL>");
  EXPECT_EQ(redact_script("#PBS -N x \\\n#SBATCH --mail-user=jdoe"), "#PBS -N x \\\n#SBATCH --mail-user=<EMAIL>");
  // What is not a mail option stays, joined or not: Slurm's -M (clusters), a command's -u.
  for (std::string s : {"#SBATCH -p gpu \\\n  -M cluster2", "python run.py \\\n  -M jdoe",
                        "#PBS -l nodes=1 \\\n-Nx", "# see \\\n-M below", "#PBS -M <EMAIL> \\\n-q gpu"}) {
    EXPECT_EQ(redact_script(s), s) << s;
  }
}

// ---- paths

TEST(Redact, UserPaths) {
  struct Case {
    std::string in, out;
  };
  const std::vector<Case> cases = {
      {"cd /home/alice/proj", "cd /home/<USER>/proj"},
      {"cd /Users/alice", "cd /Users/<USER>"},
      {"out=/scratch/alice/run1", "out=/scratch/<USER>/run1"},
      {"cd /gpfs/alpine/scratch/adw62/chm155", "cd /gpfs/alpine/scratch/<USER>/chm155"},
      {"cc /glade/u/home/benkirk/hello.C", "cc /glade/u/home/<USER>/hello.C"},
      {"cd /global/homes/j/jsmith/x", "cd /global/homes/<USER>/x"},
      {"cd /work/0123/alice/x", "cd /work/<GROUP>/<USER>/x"},
      {"d=/hppfs/work/pn98ve/di67rov/t", "d=/hppfs/work/<GROUP>/<USER>/t"},
      {"PATH=/opt/bin:/home/alice/bin", "PATH=/opt/bin:/home/<USER>/bin"},
      {"ls ~alice/data", "ls ~<USER>/data"},
      {"source /home/u11887/work/PyTorch-1.10.1/env.src", "source /home/<USER>/work/PyTorch-1.10.1/env.src"},
  };
  for (const auto& c : cases) {
    RedactionCounts n;
    EXPECT_EQ(redact_script(c.in, &n), c.out) << c.in;
    EXPECT_GE(n.paths, 1) << c.in;
  }
  // Already user-neutral or not a user directory: kept.
  for (std::string s : {"cd $HOME/work/proj", "cd ~/scratch/run", "cd ${SCRATCH}/x", "cd ./home/x",
                        "wget https://example.org/home/index.html", "ls /home/", "cd /data/a/b/c/home/x"}) {
    EXPECT_EQ(redact_script(s), s) << s;
  }
}

// ---- hashing

const char* kScriptTemplate =
    "#!/bin/bash\n"
    "#SBATCH --job-name=train\n"
    "#SBATCH --mem=64G\n"
    "#SBATCH --gres=gpu:1\n"
    "#SBATCH --mail-user=@USER@@uni.edu\n"
    "export HF_TOKEN=@TOKEN@\n"
    "cd /home/@USER@/proj\n"
    "python train.py --batch-size 64 --data /scratch/@USER@/imagenet\n";

std::string instantiate(const std::string& user, const std::string& token) {
  std::string s = kScriptTemplate;
  for (auto [key, val] : {std::pair<std::string, std::string>{"@USER@", user}, {"@TOKEN@", token}}) {
    for (size_t p; (p = s.find(key)) != std::string::npos;) s.replace(p, key.size(), val);
  }
  return s;
}

TEST(Redact, TwoUsersCopiesHashTheSame) {
  std::string a = instantiate("alice", "hf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  std::string b = instantiate("bob", "hf_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  ASSERT_NE(a, b);
  EXPECT_EQ(redact_script(a), redact_script(b));
  EXPECT_EQ(script_sha256(a), script_sha256(b));
  // Cosmetic differences: CRLF and trailing blanks.
  std::string crlf;
  for (char c : b) crlf += c == '\n' ? std::string("  \r\n") : std::string(1, c);
  EXPECT_EQ(script_sha256(a), script_sha256(crlf + "\r\n\r\n"));
  EXPECT_EQ(script_sha256(a).size(), 64u);
}

TEST(Redact, ChangedArgumentChangesHash) {
  std::string a = instantiate("alice", "x");
  std::string b = a;
  b.replace(b.find("--batch-size 64"), 15, "--batch-size 128");
  EXPECT_NE(script_sha256(a), script_sha256(b));
  std::string c = a;
  c.replace(c.find("--mem=64G"), 9, "--mem=32G");
  EXPECT_NE(script_sha256(a), script_sha256(c));
}

TEST(Redact, WorkloadKey) {
  EXPECT_EQ(workload_key("NFCORE_CHIPSEQ:FASTQC"), sha256_hex("workload:NFCORE_CHIPSEQ:FASTQC"));
  EXPECT_NE(workload_key("a"), workload_key("b"));
  EXPECT_NE(workload_key("a"), script_sha256("a"));
}

// ---- idempotence

TEST(Redact, IdempotentOnExamples) {
  for (const auto& s : {instantiate("alice", "ghp_0123456789abcdefghijklmnopqrstuvwxyz"),
                        std::string("curl -u a:b https://c:d@e.org/f -H 'Authorization: Bearer 12345678'"),
                        std::string("x=\"/home/u/a\" PASSWORD=abc<def TOKEN=~bob")}) {
    std::string once = redact_script(s);
    EXPECT_EQ(redact_script(once), once) << s;
  }
}

// Texts where one rule's redaction moved what another reads, found by the property at a larger
// size (RC_PARAMS="max_success=100000 max_size=150"), shrunk: a `#PBS -M` line whose second `-M`
// stood inside a value a command's password flag took; `~NAME=` under a secret name, whose
// harmless value the assignment rule skipped, turned into `~<USER>=`; a command password whose
// value held the `\` that continued its line, or a quote that closed the string around it.
TEST(Redact, IdempotentWhereRulesOverlap) {
  for (const std::string s : {"#PBS -M redis-cli -a ' -M a", "#PBS -M smbclient -U\" -M o %s", "#PBS -M 7z -p' -M f",
                              "#PBS -M openssl -k \" -M s", "~HF_TOKEN=${X}@HF_TOKEN=export", "~Credential=$=TOKEN=v",
                              "'7z -p\\\nredis-cli -a '\"", "\"zip -P\"&\" -PA", "redis-cli -a E& -a e"}) {
    const std::string once = redact_script(s);
    EXPECT_EQ(redact_script(once), once) << s;
  }
  // The first -M is the directive's: `#PBS -M a -M b` names a, b stays as written.
  EXPECT_EQ(redact_script("#PBS -M a@x.org -M bob"), "#PBS -M <EMAIL> -M bob");
  EXPECT_EQ(redact_script("#PBS -l nodes=1 -M alice -M bob"), "#PBS -l nodes=1 -M <EMAIL> -M bob");
}

// Random scripts glued from fragments that exercise every rule and their boundaries.
RC_GTEST_PROP(RedactProp, Idempotent, ()) {
  static const std::vector<std::string> kPieces = {
      "export ", "HF_TOKEN", "API_KEY", "password", "--token", "=", " ", ": ", "\"", "'", "$",
      "${X}", "abc123", "hf_abcdefghijklmnopqrstuvwxyz0123", "ghp_", "0123456789abcdefghij",
      "@", "alice", "uni.edu", ".", "/home/", "/work/", "/scratch/", "~", "bob", "/", "\n",
      "\r\n", "\t", "#SBATCH --mail-user=", "#PBS -M ", "-----BEGIN RSA PRIVATE KEY-----",
      "-----END RSA PRIVATE KEY-----", "https://", ":", "curl -u ", "Bearer ", "<", ">",
      "mailto:", "sshpass -p ", "(", "[", "]", "-", "_", "AKIA", "ABCDEFGHIJKLMNOP", ";",
      "mysql ", "-p", "docker login ", "PASS", "sk-", "9", "${", ":-", "-", ":=", "}", "$'",
      "$\"", "\\", "aws configure set ", "aws_secret_access_key ", "machine ", "h ", "login ",
      "default ", "password ", "\\n", "%s", "setenv ", "-u", "curl -u", "://:", "Authorization: ",
      "ApiKey ", "redis-cli -a ", "openssl -k ", "zip -P ", "7z a -p", "lftp -u ", "smbclient -U ", ",", "%",
      "|", "\\\n", "?", "&", "sig=", "X-Amz-Credential=", "nvapi-", "pypi-AgE", "sk_live_", "xapp-1-", "SG.",
      "ya29.", "---- BEGIN SSH2 PRIVATE KEY ----", "---- END SSH2 PRIVATE KEY ----", "PuTTY-User-Key-File-2: ",
      "Private-MAC: ", "\"auth\"", "my ", "$password", " = ", "->", "<password>", "</password>", "TOKEN=",
      "\\ ", "literal"};
  auto idx = *rc::gen::container<std::vector<size_t>>(
      rc::gen::inRange<size_t>(0, kPieces.size()));
  std::string s;
  for (size_t i : idx) s += kPieces[i];
  std::string once = redact_script(s);
  RC_ASSERT(redact_script(once) == once);
}

// ---- real scripts

// Independent detectors (std::regex, not the library's patterns) for what must not survive.
const std::regex kEmail(R"([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})");
const std::regex kTokenShape(
    R"((gh[pousr]_[A-Za-z0-9]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[A-Z0-9]{16}|hf_[A-Za-z0-9]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY))");
const std::regex kSecretAssign(
    R"((TOKEN|SECRET|PASSWORD|API_KEY|token|secret|password|api_key)["']?\s*[=:]\s*["']?[A-Za-z0-9+/_-]{12,})");

TEST(RedactRealScripts, NothingIdentifyingSurvives) {
  const std::string path = PEAKCAST_SOURCE_DIR "/../shared/data/scripts/script-ai.jsonl";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "real scripts not found at " << path << " (../shared is absent)";
  std::string line;
  int scripts = 0, changed = 0, with_email = 0, with_secret = 0, with_path = 0;
  RedactionCounts total;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto obj = nlohmann::json::parse(line);
    std::string text = obj.at("text").get<std::string>();
    ++scripts;
    RedactionCounts c;
    std::string r = redact_script(text, &c);
    EXPECT_EQ(redact_script(r), r) << "not idempotent on script id " << obj.at("id");
    std::smatch m;
    std::string check = r;
    // Exactly the two forms kept on purpose: git@host:repo (an SSH login) and s@X@Y@ (a sed
    // substitution with '@' as the delimiter). Any other address must be gone.
    static const std::regex kKept(R"((^|[^A-Za-z0-9_.%+-])(git@[A-Za-z0-9.-]+:|s@[^@\n]*@))");
    check = std::regex_replace(check, kKept, "$1KEPT");
    EXPECT_FALSE(std::regex_search(check, m, kEmail)) << "id " << obj.at("id") << ": " << m.str();
    EXPECT_FALSE(std::regex_search(r, m, kTokenShape)) << "id " << obj.at("id") << ": " << m.str();
    EXPECT_FALSE(std::regex_search(r, m, kSecretAssign)) << "id " << obj.at("id") << ": " << m.str();
    if (c.total() > 0) ++changed;
    with_email += c.emails > 0;
    with_secret += c.secrets + c.tokens + c.private_keys > 0;
    with_path += c.paths > 0;
    total.emails += c.emails;
    total.secrets += c.secrets;
    total.tokens += c.tokens;
    total.private_keys += c.private_keys;
    total.paths += c.paths;
  }
  EXPECT_EQ(scripts, 652) << "the corpus described in ../shared/data/README.md has 652 scripts";
  // The corpus has dozens of #SBATCH --mail-user / #PBS -M lines and user home paths.
  EXPECT_GT(with_email, 20);
  EXPECT_GT(with_path, 5);
  RecordProperty("scripts_redacted", changed);
  std::printf("[ redaction ] %d of %d scripts redacted: %d with e-mail (%d replacements), "
              "%d with secrets/tokens (%d secrets, %d tokens, %d keys), %d with user paths (%d)\n",
              changed, scripts, with_email, total.emails, with_secret, total.secrets, total.tokens,
              total.private_keys, with_path, total.paths);
}

}  // namespace
}  // namespace peakcast::ingest
