// `peakcast report` end to end, drawn by a real browser: Debian's headless Chromium loads the
// page from a file (no network), the test fails on any console error or uncaught exception and
// on any plot that drew nothing (its SVG must hold marks), and keeps a screenshot in the build
// folder (build/report-screenshot.png, the README's picture). Skipped when Chromium or the
// binary is missing (scripts/install-deps.sh installs Chromium).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/report/report.h"
#include "report_test_util.h"

namespace {

namespace fs = std::filesystem;
using report_test::run;
using report_test::slurp;

const std::string& kPeakcast = peakcast::test_support::kPeakcastBinary;

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/snap/bin/"}) {
      const std::string p = std::string(dir) + name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  }
  return {};
}

// What Chromium saw: the DOM after the page's scripts ran, and its log.
struct Rendered {
  int exit_code = -1;
  std::string dom;
  std::string log;
};

std::string chromium_flags(const fs::path& profile) {
  return "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
         "--disable-background-networking --disable-component-update --disable-sync "
         "--disable-default-apps --mute-audio --enable-logging=stderr --v=0 "
         "--virtual-time-budget=30000 --user-data-dir=" + profile.string();
}

Rendered render(const std::string& chromium, const fs::path& page, const fs::path& work) {
  const fs::path profile = work / ("profile-dom-" + page.stem().string());
  fs::create_directories(profile);
  const fs::path log = work / (page.stem().string() + ".chromium.log");
  Rendered r;
  auto res = run(chromium + " " + chromium_flags(profile) + " --dump-dom file://" + page.string(),
                 log.string());
  r.exit_code = res.exit_code;
  r.dom = res.out;
  r.log = slurp(log);
  return r;
}

// Console lines Chromium logs for the page (console.error, uncaught exceptions, failed loads).
std::vector<std::string> console_errors(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const bool console = line.find("CONSOLE") != std::string::npos;
    const bool bad = line.find(":ERROR:CONSOLE") != std::string::npos ||
                     line.find("\"WARN ") != std::string::npos ||  // Vega's own warnings
                     line.find("\"ERROR ") != std::string::npos ||
                     line.find("Uncaught") != std::string::npos ||
                     line.find("Failed to load") != std::string::npos ||
                     line.find("net::ERR_") != std::string::npos;
    if (console && bad) out.push_back(line);
  }
  return out;
}

// Every plot container holds an SVG with drawn data marks: Vega labels each drawn item
// role="graphics-symbol" with its kind; axes, legends and titles do not count.
void expect_every_plot_drew(const std::string& dom, size_t expected_plots) {
  // vega-embed adds its own classes to the container: class="plot vega-embed ...".
  const std::regex plot_div("<div class=\"plot[^\"]*\" id=\"plot-([a-z0-9-]+)\"");
  const std::regex item("role=\"graphics-symbol\" aria-roledescription=\"([^\"]*)\"");
  std::vector<std::pair<size_t, std::string>> plots;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), plot_div); it != std::sregex_iterator(); ++it) {
    plots.emplace_back(static_cast<size_t>(it->position()), (*it)[1]);
  }
  EXPECT_EQ(plots.size(), expected_plots);
  // Each container is labelled with its plot's description, not Vega's "Vega visualization".
  EXPECT_EQ(dom.find("aria-label=\"Vega visualization\""), std::string::npos);
  for (size_t i = 0; i < plots.size(); ++i) {
    const size_t start = plots[i].first;
    const size_t end = i + 1 < plots.size() ? plots[i + 1].first : dom.find("</section>", start);
    const std::string body = dom.substr(start, end - start);
    const std::string& id = plots[i].second;
    EXPECT_NE(body.find("<svg"), std::string::npos) << "plot " << id << " has no SVG";
    size_t marks = 0;
    for (auto m = std::sregex_iterator(body.begin(), body.end(), item); m != std::sregex_iterator(); ++m) {
      const std::string kind = (*m)[1];
      if (kind != "axis" && kind != "legend" && kind != "title") ++marks;
    }
    EXPECT_GT(marks, 0u) << "plot " << id << " drew no data marks";
    // A drawn plot gives up the placeholder's 260px: a short chart leaves no blank below it.
    const std::string tag = body.substr(0, body.find('>'));
    EXPECT_NE(tag.find("min-height: 0px"), std::string::npos) << "plot " << id << " keeps its placeholder height: " << tag;
  }
}

nlohmann::json render_status(const std::string& dom) {
  const std::regex status("<pre id=\"render-status\"[^>]*>([^<]*)</pre>");
  std::smatch m;
  if (!std::regex_search(dom, m, status)) return nullptr;
  std::string text = m[1];
  for (auto [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p)) text.replace(p, from.size(), to);
  }
  return nlohmann::json::parse(text, nullptr, false);
}

void check_page(const std::string& chromium, const fs::path& page, const fs::path& work) {
  SCOPED_TRACE(page.string());
  const Rendered r = render(chromium, page, work);
  ASSERT_EQ(r.exit_code, 0) << r.log.substr(0, 4000);
  const std::vector<std::string> errors = console_errors(r.log);
  EXPECT_TRUE(errors.empty()) << errors.size() << " console error(s), first: " << errors.front();
  const nlohmann::json status = render_status(r.dom);
  ASSERT_TRUE(status.is_object()) << "the page's script did not finish (no render status)";
  EXPECT_TRUE(status.at("errors").empty()) << status.dump();
  EXPECT_TRUE(status.at("empty").empty()) << status.dump();
  EXPECT_GT(status.at("plots").get<int>(), 0);
  EXPECT_EQ(status.at("drawn"), status.at("plots")) << status.dump();
  expect_every_plot_drew(r.dom, status.at("plots").get<size_t>());
}

const char* kSim = R"({"results": [
  {"policy": "requested", "waste_gbh": 5120.0, "failures": 0, "retries": 0, "jobs": 300, "failed_jobs": 0},
  {"policy": "cascade upper bound", "waste_gbh": 1830.5, "failures": 4, "retries": 4, "jobs": 300, "failed_jobs": 3},
  {"policy": "cascade point", "waste_gbh": 610.0, "failures": 41, "retries": 52, "jobs": 300, "failed_jobs": 30}],
  "notes": ["hand-built for the page test: the schema of docs/report.md"]})";

class ReportPage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kPeakcast)) GTEST_SKIP() << kPeakcast << " not built";
    chromium_ = find_chromium();
    if (chromium_.empty()) GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
    work_ = fs::temp_directory_path() / ("peakcast_report_page_" + std::to_string(::getpid()));
    fs::create_directories(work_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!work_.empty()) fs::remove_all(work_, ec);
  }
  // Loads `harness` (a page that frames PAGE and writes what it saw to <pre id="out"> as JSON)
  // with `page` framed; null when Chromium failed or wrote nothing (the failure says why).
  nlohmann::json drive(const std::string& harness, const fs::path& page) {
    std::string text = harness;
    text.replace(text.find("PAGE"), 4, page.filename().string());
    const fs::path harness_path = work_ / (page.stem().string() + "-harness.html");
    std::ofstream(harness_path) << text;
    const fs::path profile = work_ / ("profile-" + page.stem().string());
    fs::create_directories(profile);
    const auto r = run(chromium_ + " " + chromium_flags(profile) +
                           " --allow-file-access-from-files --dump-dom file://" + harness_path.string(),
                       (work_ / (page.stem().string() + "-harness.log")).string());
    EXPECT_EQ(r.exit_code, 0);
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("<pre id=\"out\">([^<]*)</pre>"))) {
      ADD_FAILURE() << "no output from the harness: " << r.out.substr(0, 2000);
      return nullptr;
    }
    std::string out = m[1];
    for (size_t p = out.find("&quot;"); p != std::string::npos; p = out.find("&quot;")) out.replace(p, 6, "\"");
    nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    if (!j.is_object()) {
      ADD_FAILURE() << "not JSON: " << out;
      return nullptr;
    }
    return j;
  }
  std::string chromium_;
  fs::path work_;
};

TEST_F(ReportPage, TraceReportDrawsEveryPlotWithoutAConsoleError) {
  const std::string trace = (work_ / "trace.jsonl").string();
  ASSERT_EQ(run(kPeakcast + " synth --jobs 1500 --seed 5 --users 10 --days 20 -o " + trace).exit_code, 0);
  const std::string sim = (work_ / "sim.json").string();
  std::ofstream(sim) << kSim;
  const fs::path page = work_ / "report.html";
  const auto r = run(kPeakcast + " report " + trace + " -o " + page.string() + " --sim " + sim +
                     " --methods hier_last1,history_policy,cascade --threads 1 --bootstrap 50 "
                     "--latency-jobs 30 --code-option max_epochs=2 --code-option token_dim=8 "
                     "--code-option hash_buckets=4096 --code-option fused_dim=32");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string html = slurp(page);
  for (const char* section : {"id=\"accuracy\"", "id=\"methods\"", "id=\"coverage\"", "id=\"routing\"",
                              "id=\"usage\"", "id=\"recommendations\"", "id=\"sizing\""}) {
    EXPECT_NE(html.find(section), std::string::npos) << section;
  }
  // The page says what the daemon would have answered, per measured resource.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex("mem: (\\d+) of (\\d+) test jobs had a bound"))) << html.substr(0, 2000);
  EXPECT_GT(std::stoi(m[1]), 0);
  EXPECT_LE(std::stoi(m[1]), std::stoi(m[2]));
  EXPECT_TRUE(std::regex_search(html, std::regex("vram: \\d+ of \\d+ test jobs had a bound")));
  EXPECT_TRUE(std::regex_search(html, std::regex("; memory recommendations for [1-9]\\d* of the \\d+ test jobs")));
  // And what its recommendations would have saved against the users' own requests.
  EXPECT_TRUE(std::regex_search(html, std::regex("peakcastd&#39;s requests would have wasted [0-9.,]+ GB·h \\([0-9.,]+ reserved unused")))
      << html.substr(0, 3000);
  EXPECT_NE(r.out.find("report: peakcastd's requests would have wasted"), std::string::npos) << r.out;
  check_page(chromium_, page, work_);
  // The screenshot the README shows: kept in the build folder.
  const fs::path shot = fs::path(PEAKCAST_BINARY_DIR) / "report-screenshot.png";
  fs::remove(shot);
  const fs::path profile = work_ / "profile-shot";
  fs::create_directories(profile);
  const auto s = run(chromium_ + " " + chromium_flags(profile) + " --hide-scrollbars --window-size=1280,6000 "
                     "--screenshot=" + shot.string() + " file://" + page.string(),
                     (work_ / "shot.log").string());
  ASSERT_EQ(s.exit_code, 0);
  ASSERT_TRUE(fs::exists(shot));
  EXPECT_GT(fs::file_size(shot), 50'000u) << "a blank page compresses to far less";
}

// A young history's page (report_young_test.cpp): without the sections that need the cascade,
// what it has still draws.
TEST_F(ReportPage, AYoungHistorysPageDrawsWithoutAConsoleError) {
  const std::string trace = (work_ / "young.jsonl").string();
  ASSERT_TRUE(peakcast::synth::write_trace_jsonl(report_test::young_jobs(4.0, 1.0, 1.5), trace));
  const fs::path page = work_ / "young.html";
  const auto r = run(kPeakcast + " report " + trace + " -o " + page.string() +
                     " --methods hier_last1,history_policy,cascade --threads 1 --bootstrap 50 "
                     "--latency-jobs 30 --code-option max_epochs=2 --code-option token_dim=8 "
                     "--code-option hash_buckets=4096 --code-option fused_dim=32");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string html = slurp(page);
  EXPECT_NE(html.find("id=\"usage\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"accuracy\""), std::string::npos);
  check_page(chromium_, page, work_);
}

TEST_F(ReportPage, FromJsonReportDrawsToo) {
  const std::string trace = (work_ / "trace.jsonl").string();
  ASSERT_EQ(run(kPeakcast + " synth --jobs 600 --seed 6 --users 6 --days 12 -o " + trace).exit_code, 0);
  const std::string eval = (work_ / "eval.json").string();
  ASSERT_EQ(run(kPeakcast + " evaluate " + trace + " --methods hier_last1,hier_median3,history_policy "
                "--bootstrap 50 --latency-jobs 20 --json " + eval).exit_code, 0);
  const std::string sim = (work_ / "sim.json").string();
  std::ofstream(sim) << kSim;
  const fs::path page = work_ / "from-json.html";
  const auto r = run(kPeakcast + " report --from-json " + eval + " " + sim + " -o " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string html = slurp(page);
  EXPECT_NE(html.find("id=\"sizing\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"accuracy\""), std::string::npos) << "no per-job data in EVAL.json";
  check_page(chromium_, page, work_);
}

// Names any cluster user chooses (job names, job ids from a hand-made trace) or an administrator
// sets (accounts, partitions), and that reach the page from a trace or the daemon's store: markup,
// both quotes, backticks and template syntax, an HTML comment that opens a script, the line and
// paragraph separators that end a JavaScript string literal, and one very long name. Each one
// that ran would mark <html data-pwned=...>; one parsed as markup would make <b id="pwned">.
std::vector<std::string> hostile_names() {
  return {
      "<script>document.documentElement.setAttribute('data-pwned','script')</script>",
      "\"><img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">",
      "'><svg onload='document.documentElement.setAttribute(`data-pwned`,`svg`)'>",
      "${document.documentElement.setAttribute('data-pwned','template')}`x`",
      "<!--<script>",
      "</style></title><b id=pwned>&amp; &lt; & <",
      "line\xE2\x80\xA8sep\xE2\x80\xA9para \\u2028 \\\" \\'",
      "</script><script>document.documentElement.setAttribute('data-pwned','close')</script>",
      std::string(4000, 'x') + "</script><b id=pwned>",
  };
}

// The synthetic trace with every user, account, partition, job name and job id replaced by one
// of the hostile names (a user keeps one name, so the history still predicts).
void write_hostile_trace(const std::string& from, const std::string& to) {
  const std::vector<std::string> names = hostile_names();
  std::map<std::string, size_t> user_index;
  std::ifstream in(from);
  std::ofstream out(to);
  size_t line_no = 0;
  for (std::string line; std::getline(in, line); ++line_no) {
    nlohmann::json j = nlohmann::json::parse(line);
    const size_t u = user_index.emplace(j.at("user").get<std::string>(), user_index.size()).first->second;
    j["user"] = names[u % names.size()];
    j["account"] = names[(u + 1) % names.size()];
    j["partition"] = names[(u + 2) % names.size()];
    j["job_name"] = names[line_no % names.size()];
    j["job_id"] = names[line_no % names.size()] + "#" + std::to_string(line_no);
    out << j.dump() << "\n";
  }
}

// The text of a page's element as HTML escapes it (&, <, >, " and ').
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

TEST_F(ReportPage, HostileNamesAreShownAsTextAndNeverRun) {
  const std::string synth = (work_ / "synth.jsonl").string();
  ASSERT_EQ(run(kPeakcast + " synth --jobs 800 --seed 7 --users 9 --days 12 -o " + synth).exit_code, 0);
  const std::string trace = (work_ / "hostile.jsonl").string();
  write_hostile_trace(synth, trace);
  const fs::path page = work_ / "hostile.html";
  const auto r = run(kPeakcast + " report " + trace + " -o " + page.string() +
                     " --methods hier_last1,history_policy --threads 1 --bootstrap 20 --latency-jobs 10");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string html = slurp(page);
  // The tables show the names as text, whole.
  for (const std::string& name : hostile_names()) {
    EXPECT_NE(html.find("<td>" + escaped(name) + "</td>"), std::string::npos) << name.substr(0, 80);
  }
  check_page(chromium_, page, work_);
  const Rendered dom = render(chromium_, page, work_);
  const size_t html_tag = dom.dom.find("<html");
  ASSERT_NE(html_tag, std::string::npos);
  EXPECT_EQ(dom.dom.substr(html_tag, dom.dom.find('>', html_tag) - html_tag).find("data-pwned"),
            std::string::npos)
      << "a name ran as script: " << dom.dom.substr(html_tag, 200);
  EXPECT_EQ(dom.dom.find("<b id=\"pwned\""), std::string::npos) << "a name was parsed as markup";
  // The legends draw the names (SVG text), escaped: the plots carry them.
  EXPECT_NE(dom.dom.find("&lt;!--&lt;script&gt;"), std::string::npos);
}

// Drives a page's tables from a page that frames it (Chromium lets file pages reach each other
// with --allow-file-access-from-files): clicks the methods table's MAE header twice, then presses
// Enter and Space on its first header, and reports what each did.
const char* kSortHarness = R"html(<!doctype html>
<html><body><iframe id="f" src="PAGE" width="1200" height="800"></iframe><pre id="out">pending</pre>
<script>
document.getElementById('f').addEventListener('load', function () {
  var out = {};
  try {
    var t = this.contentDocument.querySelector('#methods table.sortable');
    var ths = t.tHead.rows[0].cells;
    function col(c) { return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[c].textContent; }); }
    function sorted(v, asc) { for (var i = 1; i < v.length; i++) { var d = parseFloat(v[i]) - parseFloat(v[i - 1]); if (asc ? d < 0 : d > 0) return false; } return true; }
    function ariaSorts() { return Array.prototype.map.call(ths, function (h) { return h.getAttribute('aria-sort'); }); }
    out.rows = t.tBodies[0].rows.length;
    out.focusable = Array.prototype.every.call(ths, function (h) { return h.tabIndex === 0; });
    ths[3].click();
    out.click_asc = sorted(col(3), true);
    out.aria_asc = ariaSorts();
    ths[3].click();
    out.click_desc = sorted(col(3), false);
    out.aria_desc = ariaSorts();
    ths[0].dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
    out.enter_class = ths[0].className;
    ths[0].dispatchEvent(new KeyboardEvent('keydown', {key: ' ', bubbles: true}));
    out.space_class = ths[0].className;
  } catch (e) { out.error = String(e); }
  document.getElementById('out').textContent = JSON.stringify(out);
});
</script></body></html>
)html";

// Sorting by a header works by mouse and by keyboard (a header takes the focus; Enter or Space
// sorts), and the sorted column says so to a screen reader (aria-sort).
TEST_F(ReportPage, TablesSortByMouseAndKeyboardAndSayHow) {
  const std::string trace = (work_ / "trace.jsonl").string();
  ASSERT_EQ(run(kPeakcast + " synth --jobs 600 --seed 6 --users 6 --days 12 -o " + trace).exit_code, 0);
  const std::string eval = (work_ / "eval.json").string();
  ASSERT_EQ(run(kPeakcast + " evaluate " + trace + " --methods hier_last1,hier_median3,history_policy "
                "--bootstrap 0 --latency-jobs 0 --json " + eval).exit_code, 0);
  const fs::path page = work_ / "sort.html";
  ASSERT_EQ(run(kPeakcast + " report --from-json " + eval + " -o " + page.string()).exit_code, 0);
  const nlohmann::json out = drive(kSortHarness, page);
  ASSERT_TRUE(out.is_object());
  ASSERT_FALSE(out.contains("error")) << out.dump();
  EXPECT_GE(out.at("rows").get<int>(), 6) << "3 methods x 2 resources";
  EXPECT_TRUE(out.at("click_asc").get<bool>()) << out.dump();
  EXPECT_TRUE(out.at("click_desc").get<bool>()) << out.dump();
  EXPECT_TRUE(out.at("focusable").get<bool>()) << "a header a keyboard cannot reach cannot sort";
  const nlohmann::json asc = {nullptr, nullptr, nullptr, "ascending", nullptr, nullptr, nullptr, nullptr};
  const nlohmann::json desc = {nullptr, nullptr, nullptr, "descending", nullptr, nullptr, nullptr, nullptr};
  EXPECT_EQ(out.at("aria_asc"), asc);
  EXPECT_EQ(out.at("aria_desc"), desc);
  EXPECT_EQ(out.at("enter_class"), "asc") << "Enter sorts";
  EXPECT_EQ(out.at("space_class"), "desc") << "Space sorts the other way";
}

// Clicks the methods table's column headers in the order CLICKS lists (a JS array of column
// indices) and reports, after each click, the clicked column's text in the order it came.
const char* kClickColumnsHarness = R"html(<!doctype html>
<html><body><iframe id="f" src="PAGE" width="1200" height="800"></iframe><pre id="out">pending</pre>
<script>
document.getElementById('f').addEventListener('load', function () {
  var out = {after: []};
  try {
    var t = this.contentDocument.querySelector('#methods table.sortable');
    var ths = t.tHead.rows[0].cells;
    function col(c) { return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[c].textContent; }); }
    CLICKS.forEach(function (c) { ths[c].click(); out.after.push(col(c)); });
  } catch (e) { out.error = String(e); }
  document.getElementById('out').textContent = JSON.stringify(out);
});
</script></body></html>
)html";

std::string click_columns(const std::string& clicks) {
  std::string harness = kClickColumnsHarness;
  harness.replace(harness.find("CLICKS"), 6, clicks);
  return harness;
}

// Names with numbers in them (nodes, job names, users) sort as a person counts: node9 before
// node10, job_2 before job_10; number columns still sort as numbers (9 before 10 before 100).
TEST_F(ReportPage, TextColumnsSortWithNumericCollation) {
  nlohmann::json results = nlohmann::json::array();
  const std::vector<std::pair<std::string, double>> methods = {
      {"node10", 10.0}, {"job_10", 100.0}, {"node9", 9.0}, {"node1", 0.5}, {"job_2", 20.0}};
  for (const auto& [method, mae] : methods) results.push_back({{"method", method}, {"resource", "mem"}, {"mae", mae}});
  const fs::path eval = work_ / "collate-eval.json";
  std::ofstream(eval) << nlohmann::json{{"results", results}}.dump();
  const fs::path page = work_ / "collate.html";
  const auto r = run(kPeakcast + " report --from-json " + eval.string() + " -o " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json out = drive(click_columns("[0, 3]"), page);  // by method, then by MAE
  ASSERT_TRUE(out.is_object());
  ASSERT_FALSE(out.contains("error")) << out.dump();
  ASSERT_EQ(out.at("after").size(), 2u) << out.dump();
  EXPECT_EQ(out.at("after")[0], nlohmann::json({"job_2", "job_10", "node1", "node9", "node10"})) << out.dump();
  EXPECT_EQ(out.at("after")[1], nlohmann::json({"0.5000", "9.0000", "10.0000", "20.0000", "100.0000"})) << out.dump();
}

// Counts of 1,000 and more are shown with separators, and still sort as numbers: the page's sort
// reads a cell through parseFloat, which reads "12,120" as 12.
TEST_F(ReportPage, SeparatedCountsSortAsNumbers) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& [method, n] : std::vector<std::pair<std::string, int>>{{"a", 12120}, {"b", 999}, {"c", 1000}}) {
    results.push_back({{"method", method}, {"resource", "mem"}, {"mae", 0.1}, {"n", n}});
  }
  const fs::path eval = work_ / "counts-eval.json";
  std::ofstream(eval) << nlohmann::json{{"results", results}}.dump();
  const fs::path page = work_ / "counts.html";
  const auto r = run(kPeakcast + " report --from-json " + eval.string() + " -o " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json out = drive(click_columns("[2, 2]"), page);  // the scored jobs, both ways
  ASSERT_TRUE(out.is_object());
  ASSERT_FALSE(out.contains("error")) << out.dump();
  ASSERT_EQ(out.at("after").size(), 2u) << out.dump();
  EXPECT_EQ(out.at("after")[0], nlohmann::json({"999", "1,000", "12,120"})) << out.dump();
  EXPECT_EQ(out.at("after")[1], nlohmann::json({"12,120", "1,000", "999"})) << out.dump();
}

// The usage plots sum each UTC day, but their x axis was a local-time scale with hourly ticks:
// in a browser west of Greenwich a day's sum sat on the evening before ("Mon 24" then "06 PM"),
// and everywhere the hour ticks between two days read as if the sums were hourly. Drawn with the
// browser in Los Angeles' time zone, the axis shows the UTC days and no hours.
TEST_F(ReportPage, TheUsageAxisShowsUtcDaysWhateverTheBrowsersZone) {
  if (!peakcast::report::have_plotting_library()) GTEST_SKIP() << "built without the plotting library";
  peakcast::report::ReportInput in;
  const int64_t jun25 = 1719273600;  // 2024-06-25 00:00 UTC
  for (int day = 0; day < 3; ++day) {
    in.usage.push_back({"eager", "", "", jun25 + day * 86400 + 3600, 8.0 + day, 2.0, std::nullopt});
  }
  auto html = peakcast::report::render_html(in);
  ASSERT_TRUE(html.ok()) << html.status().message();
  const fs::path page = work_ / "days.html";
  std::ofstream(page) << *html;
  const fs::path profile = work_ / "profile-days";
  fs::create_directories(profile);
  const auto r = run("TZ=America/Los_Angeles " + chromium_ + " " + chromium_flags(profile) +
                         " --dump-dom file://" + page.string(),
                     (work_ / "days.log").string());
  ASSERT_EQ(r.exit_code, 0);
  const size_t at = r.out.find("id=\"plot-usage-user\"");
  ASSERT_NE(at, std::string::npos) << r.out.substr(0, 2000);
  const std::string plot = r.out.substr(at, r.out.find("</section>", at) - at);
  std::vector<std::string> labels;
  const std::regex text("<text[^>]*>([^<]+)</text>");
  for (auto it = std::sregex_iterator(plot.begin(), plot.end(), text); it != std::sregex_iterator(); ++it) {
    labels.push_back((*it)[1]);
  }
  const auto has = [&](const std::string& l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); };
  std::string all;
  for (const std::string& l : labels) all += "[" + l + "] ";
  for (const char* day : {"Jun 25, 2024", "Jun 26, 2024", "Jun 27, 2024"}) EXPECT_TRUE(has(day)) << day << ": " << all;
  for (const std::string& l : labels) {
    EXPECT_FALSE(std::regex_search(l, std::regex("\\d (AM|PM)$"))) << "an hour tick: " << l;
  }
  EXPECT_FALSE(has("Mon 24")) << all;
}

TEST(ReportCli, BadInputsAreUsageErrors) {
  if (!fs::exists(kPeakcast)) GTEST_SKIP() << kPeakcast << " not built";
  const fs::path dir = fs::temp_directory_path() / ("peakcast_report_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "r.html").string();
  EXPECT_EQ(run(kPeakcast + " report -o " + out).exit_code, 2) << "no input";
  std::ofstream(dir / "bad.json") << R"({"results": [{"method": "x"}]})";
  EXPECT_EQ(run(kPeakcast + " report --from-json " + (dir / "bad.json").string() + " -o " + out).exit_code, 2);
  std::ofstream(dir / "eval.json") << R"({"results": [{"method": "x", "resource": "mem", "mae": 0.1}]})";
  std::ofstream(dir / "sim.json") << R"({"results": [{"policy": "p"}]})";
  const auto r = run(kPeakcast + " report --from-json " + (dir / "eval.json").string() + " " +
                     (dir / "sim.json").string() + " -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("sim.json: results[0].waste_gbh"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out)) << "nothing written on an input error";
  EXPECT_EQ(run(kPeakcast + " report --db " + (dir / "missing.db").string() + " -o " + out).exit_code, 2);
  // peakcastd's recommendation settings: a bad field is named before any evaluation or training.
  std::ofstream(dir / "sizing.json") << R"({"default": {"granularity_bytes": "lots"}})";
  std::ofstream(dir / "t.jsonl") << R"({"job_id": "1", "user": "u", "submit_time": 1, "end_time": 2})" << "\n";
  const auto bad_cfg = run(kPeakcast + " report " + (dir / "t.jsonl").string() + " --sizing-config " +
                           (dir / "sizing.json").string() + " -o " + out);
  EXPECT_EQ(bad_cfg.exit_code, 2) << bad_cfg.out;
  EXPECT_NE(bad_cfg.out.find("sizing.json"), std::string::npos) << bad_cfg.out;
  EXPECT_NE(bad_cfg.out.find("granularity_bytes"), std::string::npos) << bad_cfg.out;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

}  // namespace
