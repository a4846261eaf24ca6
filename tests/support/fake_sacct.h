// A stand-in for sacct 22.05 as slurm-sync runs it, for the serve and CLI tests: a bash script
// that logs its arguments, and
// - for `-B -j ID,ID,...` prints, for each id, "Batch Script for ID", a dash rule and the script
//   kept for it (NONE where there is none), as sacct does, or fails when the list names
//   `refuse_script_of`;
// - else prints a listing: the header and the rows whose End lies in [-S, -E] (ISO times compared
//   as text; `-E now` is `now_iso`), delimited as --delimiter says ('|' by default);
// - where the window is wider than `too_big_over_s` (> 0), prints `too_big_bytes` of filler
//   instead, as a cluster with more jobs than a window can hold would.
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>

namespace peakcast::test_support {

struct FakeSacct {
  std::string listing;                         // '|'-delimited, header first; '|' in no field
  std::map<std::string, std::string> scripts;  // job id -> its batch script
  std::string now_iso;                         // what `-E now` means
  long too_big_over_s = 0;
  long too_big_bytes = 0;
  std::string refuse_script_of;  // `-B -j` naming this id fails (exit 1), as for an id sacct refuses
  bool scripts_hang = false;     // `-B` never answers (a slurmdbd that stopped answering)
};

// Writes the stand-in as `dir`/sacct (its call log `dir`/calls.log) and returns its path.
inline std::string write_fake_sacct(const std::string& dir, const FakeSacct& f) {
  {
    std::ofstream l(dir + "/listing.txt");
    l << f.listing;
  }
  const std::string scripts = dir + "/scripts";
  ::mkdir(scripts.c_str(), 0755);
  for (const auto& [id, text] : f.scripts) {
    std::ofstream s(scripts + "/" + id);
    s << text;
  }
  const std::string path = dir + "/sacct";
  std::ofstream o(path);
  o << "#!/bin/bash\n"
       "echo \"$*\" >> '" << dir << "/calls.log'\n"
       "d='|'; S=''; E=''; B=0; J=''\n"
       "while [ $# -gt 0 ]; do\n"
       "  case \"$1\" in\n"
       "    --delimiter=*) d=\"${1#--delimiter=}\" ;;\n"
       "    -S) S=\"$2\"; shift ;;\n"
       "    -E) E=\"$2\"; shift ;;\n"
       "    -B) B=1 ;;\n"
       "    -j) J=\"$2\"; shift ;;\n"
       "  esac\n"
       "  shift\n"
       "done\n"
       "if [ $B = 1 ]; then\n"
       "  " << (f.scripts_hang ? "sleep 3600" : ":") << "\n"
       "  IFS=, read -ra ids <<< \"$J\"\n"
       "  for id in \"${ids[@]}\"; do\n"
       "    [ -n '" << f.refuse_script_of << "' ] && [ \"$id\" = '" << f.refuse_script_of << "' ] && "
       "{ echo \"sacct: error: Invalid job id: $id\" >&2; exit 1; }\n"
       "  done\n"
       "  for id in \"${ids[@]}\"; do\n"
       "    printf 'Batch Script for %s\\n%s\\n' \"$id\" '--------------------------------'\n"
       "    if [ -f '" << scripts << "'/\"$id\" ]; then cat '" << scripts << "'/\"$id\"; else echo NONE; fi\n"
       "    echo\n"
       "  done\n"
       "  exit 0\n"
       "fi\n"
       "[ \"$E\" = now ] && E='" << f.now_iso << "'\n"
       "if [ " << f.too_big_over_s << " -gt 0 ] && "
       "[ $(( $(date -u -d \"$E\" +%s) - $(date -u -d \"$S\" +%s) )) -gt " << f.too_big_over_s << " ]; then\n"
       "  head -c " << f.too_big_bytes << " /dev/zero | tr '\\0' x; exit 0\n"
       "fi\n"
       "awk -F'|' -v OFS=\"$d\" -v S=\"$S\" -v E=\"$E\" "
       "'NR == 1 { for (i = 1; i <= NF; i++) if ($i == \"End\") c = i; $1 = $1; print; next } "
       "$c >= S && $c <= E { $1 = $1; print }' '" << dir << "/listing.txt'\n";
  o.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace peakcast::test_support
