// kloop report: the prose documents `kloop init` writes — docs/draft.md, TRAPS.md, dispatch.md.
//
// Responsibility: the task contract in words (docs/draft.md: op and entry points, target
// shapes and speedup, allowed languages, validation and benchmark commands, promotion
// criteria, frozen scope), filled from the spec and the contract; TRAPS.md seeded with the
// known traps in Fact / Why / How to apply form; the empty dispatch.md table. They are the
// user's after init: kloop writes them once and never overwrites them.
#pragma once

#include <filesystem>
#include <string>

#include "loop/record/contract.hpp"
#include "spec/op_spec.hpp"

namespace kloop::report {

struct draft_inputs {
    const loop::contract& c;
    const spec::op_spec& spec;
    std::filesystem::path workspace;
};

[[nodiscard]] std::string draft_md(const draft_inputs& in);
[[nodiscard]] std::string traps_md();

}  // namespace kloop::report
