// README.md's "Commands" table and "Installing on a Slurm cluster" section, what administrators
// follow, against the programs of this build: every long option named there is one its program
// takes (its --help), every default in the table of limits the daemon's, every `peakcast_...`
// series one a running peakcastd exports on /metrics, every /healthz field one it answers with.
// README is read when the test runs, so an option renamed in the code, or misspelt in README,
// fails here. Which program an option is named for: readme_mentions.h.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "readme_mentions.h"
#include "serve_test_util.h"
#include "support/command.h"

#include "peakcast/serve/service.h"

namespace peakcast::serve {
namespace {

using nlohmann::json;

const std::string kPeakcastd = PEAKCAST_BINARY_DIR "/bin/peakcastd";
const std::string& kPeakcast = peakcast::test_support::kPeakcastBinary;

std::string source_file(const std::string& relative) {
  return testing::file_text(std::string(PEAKCAST_SOURCE_DIR) + "/" + relative);
}

// The blocks of the two sections; fails the test when README lacks one.
std::vector<testing::Block> readme_blocks(const std::string& title) {
  const std::string section = testing::readme_section(source_file("README.md"), title);
  EXPECT_FALSE(section.empty()) << "README.md has no section \"## " << title << "\"";
  return testing::readme_blocks(section);
}

// The long options a --help lists: the names that start an option line ("  -o,--output TEXT").
std::set<std::string> options_in_help(const std::string& help) {
  std::set<std::string> out;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string names;
    if (!(words >> names) || !names.starts_with("-")) continue;
    std::stringstream list(names);
    for (std::string n; std::getline(list, n, ',');) {
      if (n.starts_with("--")) out.insert(n);
    }
  }
  return out;
}

// `program --help`'s options: "peakcastd", "peakcast" or "peakcast SUB".
const std::set<std::string>& help_options(const std::string& program) {
  static std::map<std::string, std::set<std::string>> cache;
  auto it = cache.find(program);
  if (it != cache.end()) return it->second;
  const std::string line = program == "peakcastd" ? kPeakcastd : kPeakcast + program.substr(std::strlen("peakcast"));
  const auto r = peakcast::test_support::run_shell(line + " --help 2>&1");
  EXPECT_EQ(r.exit_code, 0) << line << " --help: " << r.out;
  return cache[program] = options_in_help(r.out);
}

// Every option of the command line tool: its own and each subcommand's (those under
// "Subcommands:" in its --help).
std::set<std::string> every_peakcast_option() {
  std::set<std::string> out = help_options("peakcast");
  const auto r = peakcast::test_support::run_shell(kPeakcast + " --help 2>&1");
  const std::string head = "\nSubcommands:\n";
  const size_t at = r.out.find(head);
  EXPECT_NE(at, std::string::npos) << r.out;
  std::istringstream in(at == std::string::npos ? "" : r.out.substr(at + head.size()));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string sub;
    if (!line.starts_with("  ") || !(words >> sub)) break;
    const std::set<std::string>& o = help_options("peakcast " + sub);
    out.insert(o.begin(), o.end());
  }
  return out;
}

class Readme : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& b : {kPeakcastd, kPeakcast}) {
      if (!std::filesystem::exists(b)) GTEST_SKIP() << b << " not built";
    }
  }
};

TEST_F(Readme, EveryOptionItNamesIsOneItsProgramTakes) {
  // The Slurm options of a job (`--mem`, `--gpus-per-task`) the install section speaks of
  // where the hook reads them: job_submit.lua names each.
  std::set<std::string> job_options;
  const std::string hook = source_file("contrib/slurm/job_submit.lua");
  ASSERT_FALSE(hook.empty());
  const std::regex option("--[a-z][a-z0-9-]*");  // Lua's comments start "-- "
  for (auto it = std::sregex_iterator(hook.begin(), hook.end(), option); it != std::sregex_iterator(); ++it) {
    job_options.insert(it->str());
  }
  // An option no sentence ties to a program, in the Commands section's prose: one of the tool's.
  const std::set<std::string> any_peakcast_option = every_peakcast_option();
  size_t checked = 0;
  for (const auto& [title, default_program] : std::vector<std::pair<std::string, std::string>>{
           {"Commands", "peakcast"}, {"Installing on a Slurm cluster", "peakcastd"}}) {
    for (const testing::OptionMention& m : testing::option_mentions(readme_blocks(title), default_program)) {
      ++checked;
      const bool job_option = title != "Commands" && m.by_default && job_options.count(m.option) > 0;
      const bool tool_option = m.program == "peakcast" && m.by_default && any_peakcast_option.count(m.option) > 0;
      EXPECT_TRUE(help_options(m.program).count(m.option) > 0 || job_option || tool_option)
          << "README (" << title << ") names " << m.option << " for " << m.program
          << ", whose --help does not list it, in: " << m.sentence;
    }
  }
  // Each section names dozens; fewer means the reading above stopped finding them.
  EXPECT_GE(checked, 80u);
}

// The other sections' command lines (`peakcast report T -o F --threads 2`), where the program is
// named: each of their options is one it takes.
TEST_F(Readme, EveryCommandLineInTheOtherSectionsTakesItsOptions) {
  const std::string readme = source_file("README.md");
  size_t checked = 0;
  for (const std::string& title : testing::readme_section_titles(readme)) {
    if (title == "Commands" || title == "Installing on a Slurm cluster") continue;
    for (const testing::OptionMention& m : testing::option_mentions(readme_blocks(title), "")) {
      if (m.by_default) continue;  // an option no command line in its sentence names
      ++checked;
      EXPECT_TRUE(help_options(m.program).count(m.option) > 0)
          << "README (" << title << ") runs " << m.program << " with " << m.option
          << ", which its --help does not list, in: " << m.sentence;
    }
  }
  EXPECT_GE(checked, 10u);
}

// A size or count as README and --help write it: "5", "16384", "1 MiB", "256 MiB, or ..."
// (nullopt: no number first).
std::optional<double> leading_quantity(const std::string& text) {
  static const std::regex q(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*(KiB|MiB|GiB)?)");
  std::smatch m;
  if (!std::regex_search(text, m, q)) return std::nullopt;
  const double unit = m[2] == "KiB" ? 1024.0 : m[2] == "MiB" ? 1024.0 * 1024 : m[2] == "GiB" ? 1024.0 * 1024 * 1024 : 1.0;
  return std::stod(m[1]) * unit;
}

// peakcastd --help's default of each option ("--idle-timeout FLOAT:[0.05 - 3600]=5": "5").
std::map<std::string, std::string> daemon_defaults() {
  std::map<std::string, std::string> out;
  const auto r = peakcast::test_support::run_shell(kPeakcastd + " --help 2>&1");
  std::istringstream in(r.out);
  const std::regex line_re(R"(^\s+(--[a-z0-9-]+) (.*?)(?:  |$))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, line_re)) continue;
    const std::string type = m[2];
    const size_t eq = type.rfind('=');
    if (eq != std::string::npos) out[m[1]] = type.substr(eq + 1);
  }
  return out;
}

// The install section's table of limits (| option | default | beyond it |): each default is the
// one the daemon has.
TEST_F(Readme, EveryDefaultInItsLimitsTableIsTheDaemons) {
  const std::string section = testing::readme_section(source_file("README.md"), "Installing on a Slurm cluster");
  const std::map<std::string, std::string> defaults = daemon_defaults();
  std::istringstream in(section);
  bool in_table = false;
  size_t rows = 0;
  const std::regex row(R"(^\s*\| `(--[a-z0-9-]+)[^`]*` \| ([^|]*) \|)");
  for (std::string line; std::getline(in, line);) {
    if (line.find("| option | default |") != std::string::npos) {
      in_table = true;
      continue;
    }
    std::smatch m;
    if (!in_table || line.find("---") != std::string::npos) continue;
    if (!std::regex_search(line, m, row)) {
      in_table = line.find('|') != std::string::npos;
      continue;
    }
    ++rows;
    const std::string option = m[1], documented = m[2];
    ASSERT_TRUE(defaults.count(option)) << option << ": no default in peakcastd --help";
    const auto want = leading_quantity(documented), have = leading_quantity(defaults.at(option));
    ASSERT_TRUE(want && have) << option << ": README " << documented << ", --help " << defaults.at(option);
    EXPECT_EQ(*want, *have) << option << ": README says the default is " << documented << ", peakcastd --help "
                            << defaults.at(option);
  }
  EXPECT_GE(rows, 8u) << "README's table of limits was not found";
}

// Family names and series names of a /metrics text ("# TYPE" lines and samples).
std::set<std::string> exported_series(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  const std::regex type_line(R"(^# TYPE (\w+) )"), sample(R"(^(\w+))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, type_line) || (!line.starts_with("#") && std::regex_search(line, m, sample))) {
      out.insert(m[1]);
    }
  }
  return out;
}

// Whether `j` has the field at a dotted path ("storage.wal_bytes").
bool has_field(const json& j, const std::string& path) {
  const json* at = &j;
  std::stringstream parts(path);
  for (std::string key; std::getline(parts, key, '.');) {
    if (!at->is_object() || !at->contains(key)) return false;
    at = &(*at)[key];
  }
  return true;
}

// /healthz of a service whose database refuses writes and whose checkpoints fail: the fields a
// healthy daemon leaves out (storage.error, storage.checkpoint_error).
json failing_storage_healthz(const testing::TempDir& dir) {
  auto store = open_sqlite_store(dir.file("failing.db"));
  EXPECT_TRUE(store.ok());
  auto faulty = std::make_unique<testing::FaultyStore>(std::move(*store));
  faulty->fail_writes = true;
  faulty->checkpoint_error = "disk I/O error";
  ServiceOptions options;
  Service service(testing::history_model(), std::move(faulty), std::move(options));
  const Reply refused = service.complete(
      testing::completion_json("1", "u", "#!/bin/sh\necho", 1'700'000'000, 1'700'000'100, 1 << 30, 1 << 20).dump());
  EXPECT_EQ(refused.status, 503) << refused.body;
  return json::parse(service.healthz().body);
}

TEST_F(Readme, EverySeriesAndHealthzFieldItNamesIsOneTheDaemonGives) {
  testing::ServedDaemon daemon;
  ASSERT_TRUE(daemon.start()) << daemon.log_text();
  httplib::Client c = testing::unix_client(daemon.sock);
  const auto metrics = c.Get("/metrics");
  const auto health = c.Get("/healthz");
  ASSERT_TRUE(metrics && metrics->status == 200);
  ASSERT_TRUE(health && health->status == 200);
  const std::set<std::string> series = exported_series(metrics->body);
  const json healthz = json::parse(health->body);
  const json failing = failing_storage_healthz(daemon.dir);

  size_t metric_names = 0, fields = 0;
  for (const char* title : {"Commands", "Installing on a Slurm cluster"}) {
    const std::vector<testing::Block> blocks = readme_blocks(title);
    for (const std::string& name : testing::metric_mentions(blocks)) {
      ++metric_names;
      EXPECT_TRUE(series.count(name)) << "README (" << title << ") names " << name
                                      << ", which peakcastd's /metrics does not have";
    }
    for (const std::string& field : testing::healthz_field_mentions(blocks)) {
      ++fields;
      EXPECT_TRUE(has_field(healthz, field) || has_field(failing, field))
          << "README (" << title << ") names /healthz " << field << ", which peakcastd does not answer with:\n"
          << healthz.dump(1);
    }
  }
  EXPECT_GE(metric_names, 10u);
  EXPECT_GE(fields, 6u);
}

}  // namespace
}  // namespace peakcast::serve
