// The page: the plotting library and every spec inline (nothing is fetched: the page opens
// offline), one section per kind of question, sortable tables, and a render status the page
// test reads (#render-status: plots drawn, errors caught).
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "report_internal.h"

namespace peakcast::report {
namespace {

using nlohmann::json;

constexpr const char* kStyle = R"css(
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px 48px;color:#222}
header{border-bottom:1px solid #ddd;margin-bottom:8px}
h1{margin:16px 0 4px}h2{margin-top:32px;border-bottom:1px solid #eee}
.meta{color:#555;font-size:14px}.notes li{color:#8a5a00}
nav a{margin-right:12px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px}
.plot{min-height:260px;width:100%}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4;cursor:pointer;user-select:none}
th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}
td:first-child,td:nth-child(2){text-align:left}
.explain{color:#444;font-size:14px;max-width:900px}
)css";

// Collects errors before anything else runs, so the page test sees every one.
constexpr const char* kErrorHook = R"js(
window.peakcastErrors=[];
window.addEventListener('error',function(e){window.peakcastErrors.push(String(e.message||e));});
window.addEventListener('unhandledrejection',function(e){window.peakcastErrors.push(String(e.reason));});
(function(){var ce=console.error;console.error=function(){window.peakcastErrors.push(Array.prototype.map.call(arguments,String).join(' '));return ce.apply(console,arguments);};})();
)js";

constexpr const char* kApp = R"js(
(function(){
  function drew(el){var svg=el.querySelector('svg');if(!svg)return false;
    return svg.querySelectorAll('[role="graphics-symbol"],path.background~g path').length>0;}
  async function draw(){
    var plots=JSON.parse(document.getElementById('peakcast-plots').textContent);
    var status={plots:plots.length,drawn:0,empty:[],errors:window.peakcastErrors};
    for(var i=0;i<plots.length;i++){var p=plots[i];var el=document.getElementById('plot-'+p.id);
      try{await vegaEmbed(el,p.spec,{mode:'vega-lite',renderer:'svg',actions:false});}
      catch(e){console.error('plot '+p.id+': '+e);}
      // The placeholder's height keeps the page from jumping while plots draw; a drawn plot
      // (a routing chart of three bars is a third of it) takes its own height.
      if(drew(el)){status.drawn++;el.style.minHeight='0';}else status.empty.push(p.id);}
    var s=document.getElementById('render-status');s.textContent=JSON.stringify(status);
    s.setAttribute('data-done','1');}
  // Text by numeric collation: node9 before node10, job_2 before job_10.
  var collate=new Intl.Collator(undefined,{numeric:true}).compare;
  function sortable(table){var ths=table.tHead.rows[0].cells;
    for(var c=0;c<ths.length;c++)(function(col){
      ths[col].tabIndex=0;
      ths[col].addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();ths[col].click();}});
      ths[col].addEventListener('click',function(){
      var asc=!ths[col].classList.contains('asc');for(var k=0;k<ths.length;k++){ths[k].classList.remove('asc','desc');ths[k].removeAttribute('aria-sort');}
      ths[col].classList.add(asc?'asc':'desc');ths[col].setAttribute('aria-sort',asc?'ascending':'descending');
      var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
      function key(r){var td=r.cells[col];var v=td.getAttribute('data-sort');if(v===null)v=td.textContent;
        var n=parseFloat(v);return isNaN(n)||!/^[-+\d.]/.test(String(v).trim())?String(v):n;}
      rows.sort(function(a,b){var x=key(a),y=key(b);var d=(typeof x==='number'&&typeof y==='number')?x-y:collate(String(x),String(y));return asc?d:-d;});
      rows.forEach(function(r){body.appendChild(r);});});})(c);}
  document.querySelectorAll('table.sortable').forEach(sortable);
  draw();
})();
)js";

struct Section {
  const char* id;
  const char* title;
  const char* explain;
};

constexpr Section kSections[] = {
    {"accuracy", "Predicted vs actual",
     "Each point is a test job: the cascade's predicted utilization (peak / request) against what "
     "the job used. Points on the dashed line are exact; above it the job used more than predicted."},
    {"methods", "Error by method and by subgroup",
     "Mean absolute error of utilization on the test block, per method and resource, and split by "
     "the history the job had at submission (exact script, same user only, none)."},
    {"coverage", "Upper bound coverage",
     "The share of test jobs whose actual utilization was at or under the upper bound peakcastd "
     "would have served (its online bound, updated with every completion), against the coverage "
     "the bound states. Jobs without a bound (a new script before the bound has evidence) are "
     "left out; an OUT_OF_MEMORY job counts as a miss (it needed more than the limit it was "
     "killed at, and the bound never exceeds the request). The whiskers and the "
     "interval column resample the jobs' scripts (a script's jobs are missed together): where "
     "few scripts ran, a few points above or below nominal is chance."},
    {"routing", "Routing and latency",
     "How each method answered (route shares of scored test jobs) and, where it was timed "
     "(`--latency-jobs`, 0 = not timed), the batch-1 prediction latency per route."},
    {"usage", "Requested vs used memory",
     "Memory requested and peak used by the jobs ending each day, per user, account and "
     "partition (the 8 largest by request; the rest as other); with the requests peakcastd would "
     "have recommended for test jobs, summed over the same jobs (one without a recommendation at "
     "its own request). Click a legend entry to pick one group. The table lists the "
     "20 largest groups of each by requested memory, largest first, and the rest as one row. "
     "GB are 10⁹ bytes here and throughout the page: Slurm's --mem=24G, 24 GiB, is 25.8 GB."},
    {"recommendations", "What peakcastd's requests would have saved and cost",
     "Each test job run once at its user's request and once at the request peakcastd would have "
     "recommended (its own request where it had none), accounted as peakcast simulate accounts "
     "a policy: memory reserved but unused (GB·h) by the attempt that held, plus the whole "
     "allocation of each attempt that ran out of memory; after one, the job runs again at its "
     "user's request (doubled where that fails too). A job that used more than its own request "
     "fails in both rows. Jobs without a memory request or a recorded peak (an OUT_OF_MEMORY run's) "
     "are left out."},
    {"sizing", "What sizing would save and cost",
     "The sizing simulator's outcome per policy: memory reserved but unused (GB·h) and "
     "out-of-memory failures; a run over several seeds shows each policy's means over them, "
     "with the range of its waste in the table."},
};

// JSON inside a <script> element: every '<' written as \u003c. JSON has '<' only inside
// strings, where the escape parses back to the same character; with none left, no name in the
// data ("</script", or "<!--" then "<script", which sends HTML's tokenizer into the script's
// double-escaped state where the element's own end tag no longer ends it) can end the element
// or swallow the page's script after it.
std::string json_in_script(std::string_view dump) {
  std::string out;
  out.reserve(dump.size());
  for (char c : dump) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string section_tables(const std::string& id, const ReportInput& in) {
  if (id == "methods" && in.eval) return methods_table(*in.eval) + subgroups_table(*in.eval);
  if (id == "coverage" && !in.predictions.empty()) return coverage_table(in.predictions);
  if (id == "usage" && !in.usage.empty()) return usage_table(in.usage);
  if (id == "recommendations" && in.recommendations) {
    return sim_table(in.recommendations->totals) + partition_table(in.recommendations->partitions);
  }
  if (id == "sizing" && in.sim) return sim_table(*in.sim);
  return {};
}

// The text lines of `key` of `o`, where it is a list (others ignored: the page only shows them).
std::vector<std::string> text_lines(const json& o, const char* key) {
  std::vector<std::string> out;
  auto it = o.find(key);
  if (it == o.end() || !it->is_array()) return out;
  for (const json& n : *it) {
    if (n.is_string()) out.push_back(n.get<std::string>());
  }
  return out;
}

std::string header(const ReportInput& in, const std::vector<Plot>& plots) {
  std::string h = "<header><h1>" + html_escape(in.title) + "</h1><p class=\"meta\">" +
                  html_escape(in.source) + " · made " + now_utc() + " by peakcast report</p>";
  std::vector<std::string> notes = in.notes;
  // What the trace's reader and the evaluation said (a user taken from a file name, a test block
  // of one submit day whose intervals say little): EVAL.json carries them, the page showed none.
  if (in.eval && in.eval->is_object()) {
    if (auto r = in.eval->find("reader"); r != in.eval->end() && r->is_object()) {
      for (const std::string& n : text_lines(*r, "notes")) notes.push_back("trace: " + n);
    }
    for (const std::string& n : text_lines(*in.eval, "notes")) notes.push_back("evaluation: " + n);
  }
  if (in.recommendations) {
    for (const std::string& n : in.recommendations->totals.notes) notes.push_back("recommendations: " + n);
  }
  if (in.sim) {
    for (const std::string& n : in.sim->notes) notes.push_back("SIM: " + n);
  }
  if (!notes.empty()) {
    h += "<ul class=\"notes\">";
    for (const std::string& n : notes) h += "<li>" + html_escape(n) + "</li>";
    h += "</ul>";
  }
  h += "<nav>";
  for (const Section& s : kSections) {
    for (const Plot& p : plots) {
      if (p.section == s.id) {
        h += fmt::format("<a href=\"#{}\">{}</a>", s.id, s.title);
        break;
      }
    }
  }
  return h + "</nav></header>\n";
}

}  // namespace

Result<std::string> render_html(const ReportInput& in) {
  if (!have_plotting_library()) {
    return Status::internal("this peakcast was built without the report's plotting library (npm "
                            "was not available at configure time: docs/report.md)");
  }
  const std::vector<Plot> plots = make_plots(in);
  std::string page = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                     "<title>" + html_escape(in.title) + "</title>\n<script>" + kErrorHook +
                     "</script>\n<style>" + kStyle + "</style>\n";
  for (const Asset& a : plotting_library()) {
    page += "<script>/* " + a.name + " (BSD-3-Clause) */\n" + script_safe(a.text) + "\n</script>\n";
  }
  page += "</head><body>\n" + header(in, plots);
  json spec_list = json::array();
  for (const Section& s : kSections) {
    std::string divs;
    for (const Plot& p : plots) {
      if (p.section != s.id) continue;
      // The id carries EVAL.json's resource names (subgroups-RESOURCE): escaped like any name.
      divs += fmt::format("<div class=\"plot\" id=\"plot-{}\" data-title=\"{}\"></div>\n",
                          html_escape(p.id), html_escape(p.title));
      spec_list.push_back({{"id", p.id}, {"spec", p.spec}});
    }
    if (divs.empty()) continue;
    page += fmt::format("<section id=\"{}\"><h2>{}</h2><p class=\"explain\">{}</p>"
                        "<div class=\"grid\">\n{}</div>\n{}</section>\n",
                        s.id, s.title, html_escape(s.explain), divs, section_tables(s.id, in));
  }
  // The plotting library's licences ask that their notices travel with every copy.
  page += "<footer><details id=\"licences\"><summary>Licences of the plotting library this page "
          "carries</summary><pre>" + html_escape(plotting_library_notices()) + "</pre></details></footer>\n";
  page += "<pre id=\"render-status\" hidden></pre>\n"
          "<script type=\"application/json\" id=\"peakcast-plots\">" +
          json_in_script(spec_list.dump(-1, ' ', false, json::error_handler_t::replace)) +
          "</script>\n<script>" + kApp + "</script>\n</body></html>\n";
  return page;
}

}  // namespace peakcast::report
