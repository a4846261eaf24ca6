// Redaction rules 7-9 (docs/redaction.md): what names a person. E-mail addresses, scheduler mail
// directives, and the user and group components of paths (/home/<user>, /work/<group>/<user>,
// ~user).
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/redact_internal.h"

namespace peakcast::ingest::redact_detail {
namespace {

// ---------------------------------------------------------------- rule 7: e-mail

// An address whose local part may hold shell variables (${USER}@site.edu) or a documentation
// placeholder (<NetID>@site.edu). Not after ':' or '/' (URLs with credentials are rule 5's,
// redact_credentials.cpp) except right after "mailto:". The local part is taken whole (no '@' can be in it, so
// giving some back never helps) in at most 64 pieces, the domain in at most 127 labels (RFC
// 1035's limit): a repeated group that could run over a whole script exhausted the JIT's stack.
const Pattern& emails() {
  static const Pattern p(
      "(?:(?<=mailto:)|(?<![A-Za-z0-9_.%+/:$}>-]))"
      "((?:[A-Za-z0-9._%+-]++|\\$\\{?[A-Za-z_][A-Za-z0-9_]*+\\}?|<[A-Za-z0-9_ -]{1,40}>){1,64}+)"
      "@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?){0,126}"
      "\\.[A-Za-z]{2,}(?![A-Za-z0-9])");
  return p;
}

// ---------------------------------------------------------------- rule 8: mail directives

// Scheduler notification directives: the value is an address (or a user name) whatever it looks
// like. Slurm --mail-user, PBS/UGE -M, LSF -u, PJM --mail-list, Cobalt --notify. The first such
// option on the line (until 2026-12-06 the last -M or -u: one inside a value that a command's
// password flag later took left a second pass to read an earlier one). The value is a word: a
// `<…>` placeholder, a quoted string or bare bytes, with what is glued after it (`'j'doe`,
// `<EMAIL>,jdoe`); until 2026-12-06 a placeholder or quoted string ended it and the rest stayed.
const Pattern& mail_directives() {
  static const Pattern p(
      "^([ \\t]*#(?:SBATCH[ \\t][^\\n]*?--mail-user|PBS(?:[ \\t][^\\n]*?)??[ \\t]-M|"
      "\\$(?:[ \\t][^\\n]*?)??[ \\t]-M|BSUB(?:[ \\t][^\\n]*?)??[ \\t]-u|PJM[ \\t][^\\n]*?--mail-list|"
      "COBALT[ \\t][^\\n]*?--notify)(?:[ \\t]*=[ \\t]*|[ \\t]+))"
      "((?:<[^>\\n]*>|\"[^\"\\n]*\"|'[^'\\n]*')[^\\s#]*|[^\\s#]+)",
      PCRE2_MULTILINE);
  return p;
}

// A value already redacted: one placeholder, quoted or not, or a list of them (`a@x.org,b@y.org`
// after rule 7). Anything glued to a placeholder otherwise (`<EMAIL>,jdoe`) is a value to redact.
bool redacted_value(std::string_view v) {
  if (v == "\"<EMAIL>\"" || v == "'<EMAIL>'") return true;
  constexpr std::string_view kPlaceholder = "<EMAIL>";
  while (v.starts_with(kPlaceholder)) {
    v.remove_prefix(kPlaceholder.size());
    if (v.empty()) return true;
    if (v.front() != ',') return false;
    v.remove_prefix(1);
  }
  return false;
}

// The text as the mail-directive rule reads it: a line that starts with '#' (after blanks) and
// ends in a backslash is joined with the next line, backslash and newline removed, as qsub joins
// a directive (OpenPBS qsub.c get_script), and again while the joined line ends in one; a next
// line that starts with '#' is a directive (or comment) of its own and is not joined. sbatch does
// not join #SBATCH lines, but what stands on the next line names the same person, so it is read
// as the directive's too. `joins` holds, in order, each removed pair's offset in the view.
struct DirectiveView {
  std::string text;
  std::vector<size_t> joins;

  // The offset in the original text of view offset `v`: as a value's begin (after a removed pair
  // at `v`) or as its end (before one).
  size_t begin_of(size_t v) const {
    return v + 2 * static_cast<size_t>(std::upper_bound(joins.begin(), joins.end(), v) - joins.begin());
  }
  size_t end_of(size_t v) const {
    return v + 2 * static_cast<size_t>(std::lower_bound(joins.begin(), joins.end(), v) - joins.begin());
  }
};

bool starts_with_hash(std::string_view s, size_t line_start) {
  size_t i = line_start;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i < s.size() && s[i] == '#';
}

DirectiveView directive_view(std::string_view s) {
  DirectiveView view;
  view.text.reserve(s.size());
  bool in_directive = false;
  size_t line_start = 0;
  while (line_start <= s.size()) {
    size_t nl = s.find('\n', line_start);
    size_t line_end = nl == std::string_view::npos ? s.size() : nl;
    if (!in_directive) in_directive = starts_with_hash(s, line_start);
    std::string_view line = s.substr(line_start, line_end - line_start);
    if (nl != std::string_view::npos && in_directive && line.ends_with('\\') &&
        !starts_with_hash(s, nl + 1)) {
      view.text.append(line.substr(0, line.size() - 1));
      view.joins.push_back(view.text.size());
    } else {
      view.text.append(line);
      if (nl != std::string_view::npos) view.text.push_back('\n');
      in_directive = false;
    }
    if (nl == std::string_view::npos) break;
    line_start = nl + 1;
  }
  return view;
}

// ---------------------------------------------------------------- rule 9: user paths

bool path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
         c == '/' || c == '<' || c == '>';  // <USER>/<GROUP> placeholders are path components
}

// True when the match at `pos` (a '/') lies in the first `max_components` components of an
// absolute path: not relative, not after $VAR / ${VAR} / ~, not a URL path.
bool leading_absolute_component(std::string_view s, size_t pos, int max_components) {
  size_t b = pos;
  int components = 0;
  while (b > 0 && path_char(s[b - 1])) {
    // Stop as soon as the path is too deep: scanning a long path back to its start for every
    // match in it was quadratic.
    if (s[--b] == '/' && ++components >= max_components) return false;
  }
  std::string_view prefix = s.substr(b, pos - b);
  if (!prefix.empty() && prefix[0] != '/') return false;  // relative, or $HOME/...
  if (prefix.substr(0, 2) == "//") return false;          // URL authority
  if (b > 0) {
    char before = s[b - 1];
    if (before == '$' || before == '}' || before == '~' || before == ')') return false;
  }
  return true;
}

const Pattern& home_paths() {
  // Group 1/2: the directory word, 3: the user component.
  static const Pattern p(
      "/(?:(home|Users|users|scratch)/|(homes)/(?:[a-z]/)?)(?!\\.{1,2}(?:/|$))"
      "([A-Za-z0-9_.][A-Za-z0-9_.-]*+)");
  return p;
}

const Pattern& work_paths() {
  static const Pattern p(
      "/work/(?!\\.{1,2}(?:/|$))([A-Za-z0-9_.][A-Za-z0-9_.-]*+)"
      "(?:/(?!\\.{1,2}(?:/|$))([A-Za-z0-9_.][A-Za-z0-9_.-]*+))?");
  return p;
}

const Pattern& tilde_users() {
  static const Pattern p("(?<![A-Za-z0-9_$~/.>-])~([A-Za-z_][A-Za-z0-9_.-]*+)");
  return p;
}

// Rule 8 over the directive view: each directive's first mail option, its value redacted in the
// original text. A value on one line is replaced as it stands; one that goes on over continuation
// lines keeps its backslash-newlines (so every line stays where it was) and the placeholder
// stands on its last line, so that the view a second pass reads holds the placeholder alone.
std::string redact_mail_directives(std::string s, int& count) {
  if (s.find("\\\n") == std::string::npos) {  // no continuation: the text is its own view
    return replace_all(mail_directives(), s, [&](const Match& m) -> Decision {
      if (redacted_value(m.group(2))) return {};
      ++count;
      return {std::string(m.group(1)) + "<EMAIL>"};
    });
  }
  const DirectiveView view = directive_view(s);
  struct Edit {
    size_t begin, end;
    std::string text;
  };
  std::vector<Edit> edits;
  replace_all(mail_directives(), view.text, [&](const Match& m) -> Decision {
    if (redacted_value(m.group(2))) return {};
    ++count;
    Edit e{view.begin_of(m.begin(2)), view.end_of(m.end(2)), {}};
    for (size_t i = e.begin; i + 1 < e.end; ++i) {
      if (s[i] == '\\' && s[i + 1] == '\n') e.text += "\\\n";
    }
    e.text += "<EMAIL>";
    edits.push_back(std::move(e));
    return {std::string()};
  });
  if (edits.empty()) return s;
  std::string out;
  out.reserve(s.size());
  size_t copied = 0;
  for (const Edit& e : edits) {
    out.append(s, copied, e.begin - copied);
    out += e.text;
    copied = e.end;
  }
  out.append(s, copied);
  return out;
}

}  // namespace

std::string redact_emails(std::string s, int& count) {
  s = replace_all(emails(), s, [&](const Match& m) -> Decision {
    // git@github.com:org/repo is an SSH login, not a person; s@a.b@c@ is a sed substitution.
    // Only those two forms: git@example.com and s@example.com alone are addresses.
    const char next = m.end() < m.subject.size() ? m.subject[m.end()] : '\0';
    if ((m.group(1) == "git" && next == ':') || (m.group(1) == "s" && next == '@')) return {};
    // a@x.org@y.org leaves "<EMAIL>@y.org": the placeholder does not start a new local part, or a
    // second pass would change the text again.
    if (m.group(1).starts_with("<EMAIL>")) return {};
    ++count;
    return {std::string("<EMAIL>")};
  });
  return redact_mail_directives(std::move(s), count);
}

std::string redact_paths(std::string_view s, int& count) {
  std::string out = replace_all(home_paths(), s, [&](const Match& m) -> Decision {
    if (!leading_absolute_component(m.subject, m.begin(), 3)) return {};
    ++count;
    std::string dir(m.has(1) ? m.group(1) : m.group(2));
    return {"/" + dir + "/<USER>"};
  });
  out = replace_all(work_paths(), out, [&](const Match& m) -> Decision {
    if (!leading_absolute_component(m.subject, m.begin(), 2)) return {};
    ++count;
    return {m.has(2) ? std::string("/work/<GROUP>/<USER>") : std::string("/work/<GROUP>")};
  });
  out = replace_all(tilde_users(), out, [&](const Match& m) -> Decision {
    // `~HF_TOKEN=…` is a secret's assignment, which the assignment rule has read (and, a value
    // such as `${X}@…` being harmless, skipped whole): as `~<USER>=` a second pass would read
    // the value's inside instead.
    size_t after = m.end();
    while (after < m.subject.size() && (m.subject[after] == ' ' || m.subject[after] == '\t')) ++after;
    if (after < m.subject.size() && (m.subject[after] == '=' || m.subject[after] == ':') && secret_name(m.group(1))) {
      return {};
    }
    ++count;
    return {std::string("~<USER>")};
  });
  return out;
}

}  // namespace peakcast::ingest::redact_detail
