// One declaration per option. A configuration struct lists its options once, as a table of
// OptionSpec rows (JSON name, the member, bounds, help); its JSON form, its validation and its
// --help text all read that table, so adding an option is one line and the three cannot disagree.
// Used by CascadeConfig, GbdtParams (its JSON form lives with the cascade) and CodeModelConfig.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "peakcast/core/status.h"

namespace peakcast::options {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// One end of a numeric range; closed = the value itself is allowed.
struct Bound {
  double value;
  bool closed = true;
};
inline constexpr Bound open(double v) { return {v, false}; }

// An option whose JSON form is not a plain number or string (an enum, a nested configuration):
// get writes it, set reads it (type errors), check validates it (ok when null).
template <typename C>
struct Custom {
  nlohmann::json (*get)(const C&);
  Status (*set)(C&, const nlohmann::json&);
  Status (*check)(const C&) = nullptr;
};

template <typename C>
struct OptionSpec {
  using Field = std::variant<int C::*, int64_t C::*, uint64_t C::*, double C::*, bool C::*,
                             std::string C::*, std::vector<double> C::*, Custom<C>>;
  const char* name;
  Field field;
  Bound lo{-kInf};  // numbers, and every value of a grid (std::vector<double>)
  Bound hi{kInf};
  const char* help = "";
  const char* choices = nullptr;  // text options: the allowed values "a|b|c" (nullptr: any text)
};

// "[1, 32]", "(0, 0.5]", "[0, inf)".
inline std::string bounds_text(Bound lo, Bound hi) {
  return fmt::format("{}{}, {}{}", lo.closed && std::isfinite(lo.value) ? "[" : "(", lo.value, hi.value,
                     hi.closed && std::isfinite(hi.value) ? "]" : ")");
}

namespace detail {

template <typename C>
Status check_number(const OptionSpec<C>& s, double v) {
  const bool above = s.lo.closed ? v >= s.lo.value : v > s.lo.value;
  const bool below = s.hi.closed ? v <= s.hi.value : v < s.hi.value;
  if (std::isnan(v) || !above || !below) {
    return Status::invalid(fmt::format("{}: {} is outside {}", s.name, v, bounds_text(s.lo, s.hi)));
  }
  return Status::ok();
}

inline bool one_of(const char* choices, const std::string& v) {
  return ("|" + std::string(choices) + "|").find("|" + v + "|") != std::string::npos;
}

}  // namespace detail

// Checks one option of c against its bounds and choices; the error names the option.
template <typename C>
Status check(const OptionSpec<C>& s, const C& c) {
  return std::visit(
      [&](auto field) -> Status {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, Custom<C>>) {
          return field.check ? field.check(c) : Status::ok();
        } else if constexpr (std::is_same_v<F, std::string C::*>) {
          if (s.choices && !detail::one_of(s.choices, c.*field)) {
            return Status::invalid(fmt::format("{}: '{}' is not one of {}", s.name, c.*field, s.choices));
          }
          return Status::ok();
        } else if constexpr (std::is_same_v<F, bool C::*>) {
          return Status::ok();
        } else if constexpr (std::is_same_v<F, std::vector<double> C::*>) {
          if ((c.*field).empty()) return Status::invalid(std::string(s.name) + ": needs at least one value");
          for (double v : c.*field) {
            if (Status e = detail::check_number(s, v); !e) return e;
          }
          return Status::ok();
        } else {
          return detail::check_number(s, static_cast<double>(c.*field));
        }
      },
      s.field);
}

// Checks every option of c; the first failure names the option.
template <typename C>
Status validate(const std::vector<OptionSpec<C>>& specs, const C& c) {
  for (const OptionSpec<C>& s : specs) {
    if (Status st = check(s, c); !st) return st;
  }
  return Status::ok();
}

// The JSON object of every option (keys = option names).
template <typename C>
nlohmann::json to_json(const std::vector<OptionSpec<C>>& specs, const C& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const OptionSpec<C>& s : specs) {
    std::visit(
        [&](auto field) {
          if constexpr (std::is_same_v<decltype(field), Custom<C>>) {
            j[s.name] = field.get(c);
          } else {
            j[s.name] = c.*field;
          }
        },
        s.field);
  }
  return j;
}

// Reads one option's JSON value into c, checking its type (not its bounds: validate() does).
template <typename C>
Status set_from_json(const OptionSpec<C>& s, C& c, const nlohmann::json& v) {
  return std::visit(
      [&](auto field) -> Status {
        using F = decltype(field);
        const std::string key = s.name;
        if constexpr (std::is_same_v<F, Custom<C>>) {
          return field.set(c, v);
        } else if constexpr (std::is_same_v<F, std::string C::*>) {
          if (!v.is_string()) return Status::invalid(key + ": expected a string");
          c.*field = v.get<std::string>();
        } else if constexpr (std::is_same_v<F, bool C::*>) {
          if (!v.is_boolean()) return Status::invalid(key + ": expected true or false");
          c.*field = v.get<bool>();
        } else if constexpr (std::is_same_v<F, std::vector<double> C::*>) {
          if (!v.is_array()) return Status::invalid(key + ": expected an array of numbers");
          std::vector<double> out;
          for (const auto& x : v) {
            if (!x.is_number()) return Status::invalid(key + ": expected an array of numbers");
            out.push_back(x.get<double>());
          }
          c.*field = std::move(out);
        } else {
          using T = std::remove_reference_t<decltype(c.*field)>;
          if (!v.is_number()) return Status::invalid(key + ": expected a number");
          if constexpr (std::is_integral_v<T>) {
            if (!v.is_number_integer()) return Status::invalid(key + ": expected an integer");
            if (std::is_unsigned_v<T> && v.is_number_integer() && !v.is_number_unsigned() &&
                v.get<int64_t>() < 0) {
              return Status::invalid(key + ": expected a non-negative integer");
            }
          }
          c.*field = v.get<T>();
        }
        return Status::ok();
      },
      s.field);
}

template <typename C>
const OptionSpec<C>* find(const std::vector<OptionSpec<C>>& specs, std::string_view name) {
  for (const OptionSpec<C>& s : specs) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

// "a, b, c": the option names, for "unknown key" messages.
template <typename C>
std::string names(const std::vector<OptionSpec<C>>& specs) {
  std::string out;
  for (const OptionSpec<C>& s : specs) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

// Reads a JSON object over the defaults in c: missing keys keep their value, an unknown key is
// an error naming it and the valid ones (`what` says whose), and the result is validated.
template <typename C>
Status from_json(const std::vector<OptionSpec<C>>& specs, const nlohmann::json& j, C& c,
                 std::string_view what) {
  if (!j.is_object()) return Status::invalid(fmt::format("{}: expected a JSON object", what));
  for (auto it = j.begin(); it != j.end(); ++it) {
    const OptionSpec<C>* s = find(specs, it.key());
    if (!s) {
      return Status::invalid(
          fmt::format("{}: unknown {} key (valid: {})", it.key(), what, names(specs)));
    }
    if (Status st = set_from_json(*s, c, *it); !st) return st;
  }
  return validate(specs, c);
}

}  // namespace peakcast::options
