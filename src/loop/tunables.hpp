// kloop loop: tunables — the compile-time values a candidate declares for `kloop tune`, and the
// variant source with chosen values.
//
// Responsibility: read, from a candidate's source text, every line that declares one value and
// carries a marker comment with its value set, and write a variant of that text with chosen
// values substituted on exactly those lines (every other byte as it was). Declaration forms
// (docs/loop.md, "kloop tune"):
//   C, C++, CUDA   #define NAME value // kloop:tune v1 v2 v3
//                  [static|inline] constexpr|const TYPE NAME = value; // kloop:tune v1 v2 v3
//   Python         NAME = value  # kloop:tune v1 v2 v3          (module level, no indentation)
// The language is the file's: `.py` is Python, every other suffix C-like. A marker is the
// comment opener followed by `kloop:tune` (prose that mentions the word elsewhere in a comment
// is not one). Values are numeric literals (with C suffixes: 256u, 0.5f) or booleans, separated
// by spaces or commas; the declared value must be one of them, so the start is a point of the
// space. Usage errors name the file and the line: a malformed marker (no values, a value that is
// not a literal, a value listed twice, the declared value missing from the set), a name declared
// twice, a marker on a line that declares nothing (or, in Python, not at module level).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kloop::loop {

struct tunable {
    std::string name;
    std::string value;                // the declared value, as written
    std::vector<std::string> values;  // the marker's value set, in its order
    int line = 0;                     // 1-based
    std::size_t value_offset = 0;     // where the declared value's text starts in the source
    std::size_t value_length = 0;
};

// One value per tunable, in declaration order.
using tune_config = std::vector<std::string>;

// Every tunable of `text`, in line order; `file` names the source in errors (and picks the
// language by its suffix). Throws kloop::usage_error as described above.
[[nodiscard]] std::vector<tunable> parse_tunables(const std::string& text, const std::filesystem::path& file);

// The declared values: the start of a search.
[[nodiscard]] tune_config declared_config(const std::vector<tunable>& tunables);

// `text` with each tunable's declared value replaced by config's; every other byte unchanged.
[[nodiscard]] std::string write_variant(const std::string& text, const std::vector<tunable>& tunables,
                                        const tune_config& config);

// "BLOCK=256, WARPS=4".
[[nodiscard]] std::string describe_config(const std::vector<tunable>& tunables, const tune_config& config);
// {"BLOCK": "256", "WARPS": "4"} as compact JSON text.
[[nodiscard]] std::string config_json(const std::vector<tunable>& tunables, const tune_config& config);

}  // namespace kloop::loop
