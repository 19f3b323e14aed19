// kloop spec: read and validate op.toml into an op_spec.
//
// Responsibility: parsing (toml++) and every validation rule in docs/spec.md. Any problem throws
// kloop::spec_error naming the file, the line and the dotted field ("modes.fwd.inputs[1].init").
// The line is that of the offending value, or of the enclosing table when a required value is
// missing, or 0 when the problem is the file as a whole (unreadable, a top-level table absent).
// TOML syntax errors use the field "<syntax>"; an unreadable file the field "op.toml".
#pragma once

#include <filesystem>
#include <string>

#include "spec/op_spec.hpp"

namespace kloop::spec {

// `path` is an op directory (op.toml inside it) or the op.toml file itself. Every path in the
// result is absolute (weakly canonical).
[[nodiscard]] op_spec load_op_spec(const std::filesystem::path& path);

// Parse from text; `file` and `op_dir` are used for messages and to resolve relative paths.
[[nodiscard]] op_spec parse_op_spec(const std::string& text, const std::filesystem::path& file,
                                    const std::filesystem::path& op_dir);

}  // namespace kloop::spec
