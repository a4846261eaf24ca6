// Redaction rule 6 (docs/redaction.md): values under a secret name. Shell assignments and flags,
// JSON/YAML keys, Perl's/PHP's/Ruby's fat comma and sigil assignments, XML elements, a secret's
// ${NAME:-WORD} default, and after those `aws configure set`, csh's `setenv` and netrc entries.
#include <algorithm>
#include <cctype>
#include <string>

#include "ingest/redact_internal.h"

namespace peakcast::ingest::redact_detail {
namespace {

// aws configure set [--profile P] NAME VALUE: the AWS CLI storing a setting; NAME may be
// `default.NAME` or `profile.P.NAME`. Group 1: NAME (the value is read by read_value(), and
// taken only under a secret name: aws_secret_access_key, aws_session_token, not region).
const Pattern& aws_configure_set() {
  static const Pattern p(
      "\\baws(?:[ \\t]+--[A-Za-z][A-Za-z-]*+(?:=[^\\s]*+|[ \\t]+[^\\s-][^\\s]*+)?){0,4}"
      "[ \\t]+configure[ \\t]+set(?:[ \\t]+--[A-Za-z][A-Za-z-]*+(?:=[^\\s]*+|[ \\t]+[^\\s-][^\\s]*+)?){0,4}"
      "[ \\t]+(?:[A-Za-z0-9_-]++\\.){0,2}+([A-Za-z0-9_]++)[ \\t]+");
  return p;
}

// csh/tcsh `setenv NAME VALUE` (no `=`: the assignment rule does not read it). Group 1: NAME
// (the value is read by read_value(), and taken only under a secret name).
const Pattern& csh_setenv() {
  static const Pattern p("(?<![A-Za-z0-9_-])setenv[ \\t]++([A-Za-z_][A-Za-z0-9_]*+)[ \\t]++");
  return p;
}

// A netrc entry the script writes (a heredoc, or echo/printf into ~/.netrc): `machine H` (or
// `default`), any number of `login U` / `account A`, then `password P`, on one line or over
// several, the pieces apart by blanks, newlines or a written `\n`; up to the password's value.
// `default` needs a login or account after it ("the default password" is prose).
const Pattern& netrc_password() {
  static const Pattern p(
      "(?<![A-Za-z0-9_-])(?:machine(?:[ \\t\\n]|\\\\n)++[^\\s\\\\]++"
      "(?:(?:[ \\t\\n]|\\\\n)++(?:login|account)(?:[ \\t\\n]|\\\\n)++[^\\s\\\\]++)*+|"
      "default(?:(?:[ \\t\\n]|\\\\n)++(?:login|account)(?:[ \\t\\n]|\\\\n)++[^\\s\\\\]++)++)"
      "(?:[ \\t\\n]|\\\\n)++password[ \\t]+");
  return p;
}

// NAME=VALUE, NAME: VALUE, --NAME=VALUE, --NAME VALUE, "NAME": "VALUE", env["NAME"] = VALUE, and
// Perl's, PHP's or Ruby's fat comma NAME => VALUE (the caller takes only a quoted VALUE): the
// part up to the value. Group 1: dashes, 2: quote around the name, 3: name, 4: separator. The
// value is read by read_value(), and only after a secret name: a pattern that matched the value too
// read a whole `a:b:c:...` run for every name in it, quadratic in the length of such a run.
const Pattern& assignments() {
  static const Pattern p(
      "(?<![A-Za-z0-9_$./>-])(?<!\\$\\{)(-{0,2})([\"']?)([A-Za-z_][A-Za-z0-9_.-]*+)\\2\\]?"
      "([ \\t]*=>[ \\t]*|[ \\t]*[=:][ \\t]*|[ \\t]+)");
  return p;
}

// The replacement of the text from `from` to the end of the secret value `v`, read at `at`: the
// value's quotes kept around <SECRET>; with `whole_word`, a bare value glued to more of its shell
// word goes whole (shell_word_end), as one bare <SECRET>.
Decision secret_value(std::string_view s, size_t from, size_t at, const Value& v, bool whole_word) {
  std::string out(s.substr(from, at - from));
  if (whole_word && v.open.empty()) {
    if (const size_t end = shell_word_end(s, at, v.end); end > v.end) {
      out += "<SECRET>";
      return {std::move(out), 0, end};
    }
  }
  out += v.open;
  out += "<SECRET>";
  out += v.close;
  return {std::move(out), 0, v.end};
}

// `${NAME:-WORD}`, `${NAME-WORD}`, `${NAME:=WORD}`, `${NAME=WORD}`: a reference, but WORD is a
// literal the script holds. Where that literal lies: inside the quotes when WORD is one quoted
// string, else all of WORD, to the line's end when the expansion is not closed there (as for an
// unclosed quoted value).
struct DefaultWord {
  size_t begin = 0, end = 0;  // the literal
  size_t expansion_end = 0;   // after the closing '}', or the line's end
  std::string_view literal(std::string_view s) const { return s.substr(begin, end - begin); }
};

// The default of the expansion at `pos` ("${"); nullopt when none starts there.
std::optional<DefaultWord> default_word(std::string_view s, size_t pos) {
  auto name_byte = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (s.substr(pos, 2) != "${") return std::nullopt;
  size_t i = pos + 2;
  const size_t name = i;
  while (i < s.size() && name_byte(s[i])) ++i;
  if (i == name || std::isdigit(static_cast<unsigned char>(s[name]))) return std::nullopt;
  if (i < s.size() && s[i] == ':') ++i;
  if (i >= s.size() || (s[i] != '-' && s[i] != '=')) return std::nullopt;
  const size_t word = ++i;
  const bool ansi = word + 1 < s.size() && s[word] == '$' && (s[word + 1] == '\'' || s[word + 1] == '"');
  // A word that starts as a reference (`${T:-$OTHER}`, `${T:-${U:-x}}`) has no literal at its
  // start, and one inside it is read at its own `${`. Not scanned: a nest of them would be read
  // once per level.
  if (word < s.size() && s[word] == '$' && !ansi) return DefaultWord{word, word, word};
  const size_t open = ansi ? 2 : (word < s.size() && (s[word] == '"' || s[word] == '\'')) ? 1 : 0;
  int depth = 0;
  char quote = 0;
  bool quote_escapes = false;                   // "…" and $'…' read backslashes, '…' does not
  size_t first_close = std::string_view::npos;  // where the first quoted string in WORD ends
  for (; i < s.size() && s[i] != '\n'; ++i) {
    const char c = s[i];
    const bool escapes_next = c == '\\' && i + 1 < s.size() && s[i + 1] != '\n';
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
        if (first_close == std::string_view::npos) first_close = i;
      } else if (escapes_next && quote_escapes) {
        ++i;
      }
      continue;
    }
    if (escapes_next) {
      ++i;
    } else if (c == '\'' || c == '"') {
      quote = c;
      quote_escapes = c == '"' || (i > 0 && s[i - 1] == '$');
    } else if (c == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      ++depth;
      ++i;
    } else if (c == '}') {
      if (depth == 0) break;
      --depth;
    }
  }
  DefaultWord d{word, i, i};
  if (i < s.size() && s[i] == '}') {
    d.expansion_end = i + 1;
    if (open > 0 && first_close + 1 == i) {  // one quoted string: its inside
      d.begin = word + open;
      d.end = i - 1;
    }
  }
  return d;
}

// `${NAME:-WORD}` and its kin under a secret NAME, anywhere (its own assignment, a flag's value,
// a heredoc): WORD, a literal, becomes <SECRET>. Group 1: NAME.
const Pattern& expansion_defaults() {
  static const Pattern p("\\$\\{([A-Za-z_][A-Za-z0-9_]*+):?[-=]");
  return p;
}

// The text from `from` to `to` with the default's literal replaced.
std::string with_secret_default(std::string_view s, size_t from, const DefaultWord& d, size_t to) {
  std::string out(s.substr(from, d.begin - from));
  out += "<SECRET>";
  out += s.substr(d.end, to - d.end);
  return out;
}

std::string redact_expansion_defaults(std::string_view s, int& count) {
  return replace_all(expansion_defaults(), s, [&](const Match& m) -> Decision {
    if (!secret_name(m.group(1))) return {};
    const std::optional<DefaultWord> d = default_word(m.subject, m.begin());
    if (!d || harmless_value(d->literal(m.subject))) return {};
    ++count;
    return {with_secret_default(m.subject, m.begin(), *d, d->expansion_end), 0, d->expansion_end};
  });
}

// openssl's pass-phrase arguments that say where the phrase is (openssl-passphrase-options(1)):
// `env:VAR`, `file:PATH`, `fd:N`, `stdin`. Not `pass:PHRASE`.
bool openssl_passphrase_source(std::string_view v) {
  for (std::string_view source : {"env:", "file:", "fd:"}) {
    if (v.size() > source.size() && v.starts_with(source)) return true;
  }
  return v == "stdin";
}

// For a `pass:` match (NAME `pass`, separator `:`) that opens a quoted argument of openssl's
// `-pass`, `-passin` or `-passout` (`-passin "pass:a b c"`): where the phrase ends, at the closing
// quote or the line's end; nullopt otherwise.
std::optional<size_t> openssl_quoted_phrase_end(const Match& m) {
  const std::string_view s = m.subject;
  if (m.group(3) != "pass" || m.group(4) != ":" || !m.group(1).empty() || m.begin() == 0) return std::nullopt;
  const char quote = s[m.begin() - 1];
  if (quote != '"' && quote != '\'') return std::nullopt;
  std::string_view before = s.substr(0, m.begin() - 1);
  while (!before.empty() && (before.back() == ' ' || before.back() == '\t' || before.back() == '=')) {
    before.remove_suffix(1);
  }
  if (!(before.ends_with(" -pass") || before.ends_with(" -passin") || before.ends_with(" -passout"))) {
    return std::nullopt;
  }
  size_t end = m.end();
  while (end < s.size() && s[end] != quote && s[end] != '\n') {
    if (quote == '"' && s[end] == '\\' && end + 1 < s.size() && s[end + 1] != '\n') ++end;
    ++end;
  }
  return std::min(end, s.size());
}

// Whether a literal follows the references `word` starts with, read as the shell reads the word:
// its quotes and `\` dropped (`$X"abc"` and `$X\abc` are X's value then `abc`). As for
// literal_after_references(): not after `$(…)` or an expansion with an operator.
bool quoted_literal_after_references(std::string_view word) {
  size_t i = 0, last = 0;
  for (size_t n; i < word.size() && (n = reference_length(word.substr(i))) > 0;) last = i, i += n;
  if (i == 0 || i == word.size()) return false;
  if (word[last + 1] == '(') return false;
  if (word[last + 1] == '{') {
    size_t k = last + 2;
    while (k < i && (std::isalnum(static_cast<unsigned char>(word[k])) || word[k] == '_')) ++k;
    if (k != i - 1) return false;  // not `${NAME}`
  }
  std::string rest;
  for (size_t k = i; k < word.size(); ++k) {
    if (word[k] == '"' || word[k] == '\'') continue;
    if (word[k] == '\\' && k + 1 < word.size()) ++k;
    rest += word[k];
  }
  return !rest.empty() && std::isalnum(static_cast<unsigned char>(rest[0])) && !harmless_value(rest);
}

std::string redact_assignments(std::string_view s, int& count) {
  return replace_all(assignments(), s, [&](const Match& m) -> Decision {
    Decision keep{std::nullopt, m.end(3)};
    std::string_view dashes = m.group(1), name = m.group(3), sep = m.group(4);
    bool spaced = sep.find_first_of("=:") == std::string_view::npos;
    if (spaced && dashes.empty()) return keep;  // "export NAME" is not NAME=value
    // A docker config.json's credentials sit under JSON keys that are no secret words elsewhere
    // ("auth" is also a scheme's or a switch's name): read only as "KEY": "VALUE".
    const bool docker_key = m.group(2) == "\"" && sep.find(':') != std::string_view::npos &&
                            (name == "auth" || name == "identitytoken" || name == "registrytoken");
    if (!docker_key && !secret_name(name)) return keep;
    const std::optional<Value> v = read_value(m.subject, m.end());
    if (!v || (docker_key && v->open != "\"")) return keep;
    // A fat comma's bare value is code (`token => sub {…}`); a JSON or YAML object or list that
    // starts after the name is no value: its own names are read (`"credentials": {"token": …}`).
    if (v->open.empty() && (sep.find("=>") != std::string_view::npos || v->literal == "{" ||
                            v->literal == "[" || v->literal == "{}")) {
      return v->literal.front() == '{' || v->literal.front() == '[' ? Decision{std::nullopt, v->end} : keep;
    }
    // openssl's pass-phrase argument other than `pass:PHRASE` says where the phrase is.
    if (dashes == "-" && name == "pass" && openssl_passphrase_source(v->literal)) {
      return v->unclosed() ? keep : Decision{std::nullopt, v->end};
    }
    // openssl's `"pass:PHRASE"` in quotes: the phrase runs to the closing quote, blanks and all.
    if (const std::optional<size_t> close = openssl_quoted_phrase_end(m)) {
      if (harmless_value(m.subject.substr(m.end(), *close - m.end()))) return {std::nullopt, std::max(*close, m.end())};
      ++count;
      return {std::string(m.subject.substr(m.begin(), m.end() - m.begin())) + "<SECRET>", 0, *close};
    }
    // NAME=${OTHER:-WORD} (bare or in double quotes): a reference whose default, a literal, is
    // NAME's value while OTHER is unset. (Under a secret OTHER, redact_expansion_defaults() has
    // taken it already.)
    if (const size_t at = m.end() + v->open.size(); v->open.empty() || v->open == "\"") {
      if (const std::optional<DefaultWord> d = default_word(m.subject, at);
          d && !harmless_value(d->literal(m.subject))) {
        ++count;
        // A literal glued after the expansion (`${X:-abc}def`, `"${X:-a b}${Y}def"`): the whole
        // value goes, as a second pass (reading `${X:-<SECRET>}def`) would take it.
        const size_t after = d->expansion_end;
        const size_t limit = v->open.empty() ? bare_word_end(m.subject, after).value_or(after)
                                             : std::max(after, v->end - v->close.size());
        if (after < limit && literal_after_references(m.subject.substr(after, limit - after))) {
          const size_t end = std::max({v->end, limit, after});
          std::string out(m.subject.substr(m.begin(), m.end() - m.begin()));
          out += v->open;
          out += "<SECRET>";
          out += v->close;
          return {std::move(out), 0, end};
        }
        const size_t end = std::max(v->end, d->expansion_end);
        return {with_secret_default(m.subject, m.begin(), *d, end), 0, end};
      }
    }
    if (harmless_value(v->literal)) {
      // A reference the shell glues a literal to (`$X"abc"`, `$X\abc`): the whole word goes.
      // (The word is read to its end only when a letter or digit follows the references, past
      // quotes and `\`: a word with more names in it is then a secret and goes whole, so no
      // stretch of text is read once per name.)
      if (v->open.empty()) {
        size_t refs = 0;
        for (size_t n; refs < v->literal.size() && (n = reference_length(v->literal.substr(refs))) > 0;) refs += n;
        size_t next = m.end() + refs;
        while (next < m.subject.size() && (m.subject[next] == '"' || m.subject[next] == '\'' || m.subject[next] == '\\')) {
          ++next;
        }
        if (refs > 0 && next < m.subject.size() && std::isalnum(static_cast<unsigned char>(m.subject[next]))) {
          const size_t end = shell_word_end(m.subject, m.end(), v->end);
          if (quoted_literal_after_references(m.subject.substr(m.end(), end - m.end()))) {
            ++count;
            return {std::string(m.subject.substr(m.begin(), m.end() - m.begin())) + "<SECRET>", 0, end};
          }
        }
      }
      // Skip the whole value; past an unclosed one only the name, as before such values were read.
      return v->unclosed() ? keep : Decision{std::nullopt, v->end};
    }
    if (v->open.empty() && v->end < m.subject.size() &&
        (m.subject[v->end] == '(' || m.subject[v->end] == '[')) {
      return keep;  // a function call or subscript: code, not a literal
    }
    ++count;
    return secret_value(m.subject, m.begin(), m.end(), *v, true);
  });
}

// Perl and PHP assign with the sigil, which the assignment pattern never reads a name after (in a
// shell `$NAME` is a reference): `my $password = "…";`, `$this->password = '…';`. Up to a quoted
// value, which the caller takes only before a `;`; not `==`, `=~`, `=>`. Group 1: NAME.
const Pattern& sigil_assignments() {
  static const Pattern p(
      "(?:(?<![A-Za-z0-9_$\\\\])\\$|->)([A-Za-z_][A-Za-z0-9_]*+)[ \\t]*+=(?![=~>])[ \\t]*+(?=[\"'])");
  return p;
}

// <NAME attributes>VALUE</NAME> on one line (Maven settings.xml, Ivy, Hadoop configuration): the
// caller takes VALUE under a secret NAME. Group 1: NAME, 2: VALUE (no `<`: the placeholder left
// in it ends a second pass's match). Each `<` reads at most to the next `<` or newline.
const Pattern& xml_elements() {
  static const Pattern p("<([A-Za-z_][A-Za-z0-9_.:-]*+)(?:[ \\t][^<>\\n]*+)?>([^<\\n]++)</\\1>");
  return p;
}

}  // namespace

std::string redact_secret_assignments(std::string s, int& count) {
  s = redact_expansion_defaults(s, count);
  s = redact_assignments(s, count);
  s = replace_all(sigil_assignments(), s, [&](const Match& m) -> Decision {
    if (!secret_name(m.group(1))) return {};
    const std::optional<Value> v = read_value(m.subject, m.end());
    if (!v || harmless_value(v->literal)) return v && !v->unclosed() ? Decision{std::nullopt, v->end} : Decision{};
    // A statement: `;` after the string (in a shell, `[ $TOKEN = "x" ]` or `echo $TOKEN = 'x'` is
    // none, and stays).
    size_t after = v->end;
    while (after < m.subject.size() && (m.subject[after] == ' ' || m.subject[after] == '\t')) ++after;
    if (v->unclosed() || after >= m.subject.size() || m.subject[after] != ';') return {std::nullopt, v->end};
    ++count;
    std::string out(m.subject.substr(m.begin(), m.end() - m.begin()));
    out += v->open;
    out += "<SECRET>";
    out += v->close;
    return {std::move(out), 0, v->end};
  });
  s = replace_all(xml_elements(), s, [&](const Match& m) -> Decision {
    if (!secret_name(m.group(1)) || harmless_value(m.group(2))) return {};
    ++count;
    std::string out(m.subject.substr(m.begin(), m.begin(2) - m.begin()));
    out += "<SECRET>";
    out += m.subject.substr(m.end(2), m.end() - m.end(2));
    return {std::move(out)};
  });
  // A secret stored by `aws configure set`, set by csh's `setenv`, or a netrc entry's password:
  // VALUE -> <SECRET>. In a netrc entry a written `\n` (echo -e, printf) ends a bare value. After
  // the assignments: what they redact may be the text these patterns read before the value (a
  // host, an option's value), and a second pass must find it as the first did.
  auto secret_value_after = [&](const Match& m, bool netrc) -> Decision {
    std::optional<Value> v = read_value(m.subject, m.end());
    if (v && netrc && v->open.empty()) {
      if (const size_t nl = v->literal.find("\\n"); nl != std::string_view::npos) {
        v->literal = v->literal.substr(0, nl);
        v->end = m.end() + nl;
      }
    }
    if (!v || harmless_value(v->literal)) return {};
    if (v->literal.starts_with('%')) return {};  // printf's "password %s": the secret is elsewhere
    if (v->literal.starts_with('-')) return {};  // an option: no key or password starts so
    ++count;
    return secret_value(m.subject, m.begin(), m.end(), *v, !netrc);  // a netrc value is inside a string
  };
  s = replace_all(aws_configure_set(), s, [&](const Match& m) -> Decision {
    // Kept: go on from the next byte, since the NAME read may be another `aws configure set`.
    Decision d = secret_name(m.group(1)) ? secret_value_after(m, false) : Decision{};
    if (!d.replacement) d.resume = m.begin() + 1;
    return d;
  });
  s = replace_all(csh_setenv(), s, [&](const Match& m) -> Decision {
    // Kept: go on from NAME, which may be another `setenv` (`/home/setenv setenv NAME VALUE`).
    Decision d = secret_name(m.group(1)) ? secret_value_after(m, false) : Decision{};
    if (!d.replacement) d.resume = m.begin(1);
    return d;
  });
  s = replace_all(netrc_password(), s, [&](const Match& m) { return secret_value_after(m, true); });
  return s;
}

}  // namespace peakcast::ingest::redact_detail
