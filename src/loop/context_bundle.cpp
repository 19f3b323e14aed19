// kloop loop: what a proposer of `kloop run` is given before each attempt (see context_bundle.hpp).
#include "loop/context_bundle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loop/proposer.hpp"
#include "loop/status_document.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kloop::loop {

namespace {

void copy_if_present(const fs::path& from, const fs::path& to) {
    if (!fs::is_regular_file(from)) return;
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// The version's sources (its candidate file and local files), its summary and its profile.
void copy_version(const loop_session& s, int n, const fs::path& to) {
    const auto dir = s.ws.iteration_dir(n);
    const auto& r = s.records[static_cast<std::size_t>(n)];
    copy_if_present(dir / r.candidate_file, to / r.candidate_file);
    for (const auto& f : r.local_files) copy_if_present(dir / f, to / f);
    copy_if_present(dir / "iteration_summary.md", to / "iteration_summary.md");
    for (const char* f : {"profile_summary.md", "profile_summary.json"}) copy_if_present(dir / f, to / f);
}

}  // namespace

std::string context_readme(const context_inputs& in) {
    const auto& s = in.session;
    std::string best = in.status.best ? version_label(*in.status.best) : std::string("v0");
    std::string text = fmt::format(
        "# kloop run — attempt {}, for iteration {} of {}\n\n"
        "Op `{}` ({} backend). The current best is {}: its sources are in `best/`, and the kernel file\n"
        "`{}` holds them now.\n\n"
        "## What to do\n\n"
        "1. Make ONE change to the kernel file (and the local headers or modules it includes), in place.\n"
        "2. Write the proposal to `{}`:\n\n"
        "```markdown\n"
        "Direction: <the one change, in a sentence>\n"
        "Expected: <which shapes move, by how much, and why>\n"
        "Prediction: speedup 1.2-1.5\n\n"
        "## Strategy tags\n"
        "- <tag>\n"
        "```\n\n"
        "   Prediction lines are required and scored after the measurement: `speedup A-B` (the overall\n"
        "   geomean against the best), `MODE/SHAPE speedup A-B`, `no change`, `profile METRIC A-B`;\n"
        "   ranges also as `>=A` or `<=B`. docs/loop.md of kloop has the whole grammar.\n"
        "3. Exit 0. Exit {} when you have nothing more to propose: the run ends.\n\n"
        "## Rules\n\n"
        "- A change whose strategy tags are blocked in `strategies.json` is refused, unless the proposal\n"
        "  has a line `Blocked-override: <why this time differs>`.\n"
        "- A proposal without a Prediction line is refused; so is an unchanged kernel file.\n"
        "- Read anything; write only the kernel file, its local files and the proposal. Changing the\n"
        "  workspace `{}` or a frozen file (op.toml, the reference, the tests) ends the run (exit 5).\n"
        "- The time limit is {:.0f} s (KLOOP_DEADLINE); past it your process group is killed and the\n"
        "  attempt fails.\n\n"
        "## In this directory\n\n"
        "- `status.json`: iterations, the best, since the last improvement, the next step ({}).\n"
        "- `strategies.json`: blocked and preferred strategy fingerprints of this op on this machine.\n"
        "- `best/`: the best version's sources, summary and profile (when profiled).\n"
        "- `last/`: the last iteration's summary and verdict per shape.\n"
        "- `OPT_LOG.md`, `TRAPS.md`, `dispatch.md`, `draft.md`: the loop's log, traps, dispatch table, task.\n",
        in.attempt.number, in.attempt.iteration, s.c.max_iterations, s.c.op, s.c.backend, best, in.candidate.string(),
        in.proposal.string(), proposer_done_exit, s.ws.root().string(), in.timeout_s, to_string(in.status.next));
    if (in.lane > 0)
        text += fmt::format(
            "\n## A parallel round\n\n"
            "This attempt is lane {} of {}: its sibling proposers work at the same time, each in its own copy of\n"
            "the kernel's directory. The kernel file above is this lane's copy; edit it, not the original. Each\n"
            "sibling is raced against the same best, on a device of its own; of those that beat it, the one\n"
            "with the largest speedup becomes the best, and the others are recorded as positive but outpaced.\n"
            "Two siblings with the same sources: the later is refused.\n",
            in.lane, in.lanes);
    if (in.status.next == next_step::stall)
        text += "\n**The loop is stalled**: " + in.status.next_text + "\n";
    if (in.previous)
        text += fmt::format("\n**The previous attempt ({}) was {}**: see `previous_attempt.md`.\n", in.previous->number,
                            to_string(in.previous->phase));
    return text;
}

void write_context_bundle(const context_inputs& in, const fs::path& dir) {
    const auto& s = in.session;
    fs::create_directories(dir);
    platform::write_file_atomic(dir / "README.md", context_readme(in));
    platform::write_file_atomic(dir / "status.json", status_json(s, in.status, in.strategies).dump(2) + "\n");
    platform::write_file_atomic(dir / "strategies.json", strategies_json(in.strategies).dump(2) + "\n");
    copy_version(s, in.status.best.value_or(0), dir / "best");
    if (s.records.size() > 1) {
        const int last = static_cast<int>(s.records.size()) - 1;
        copy_if_present(s.ws.iteration_dir(last) / "iteration_summary.md", dir / "last" / "iteration_summary.md");
        copy_if_present(s.ws.iteration_dir(last) / "optimization_proposal.md", dir / "last" / "optimization_proposal.md");
        platform::write_file_atomic(dir / "last" / "verdict.json",
                                    to_json(s.records[static_cast<std::size_t>(last)]).dump(2) + "\n");
    }
    if (in.previous)
        platform::write_file_atomic(dir / "previous_attempt.md",
                                    fmt::format("# Attempt {}: {}\n\n{}\n\nThe proposer {}.\n", in.previous->number,
                                                to_string(in.previous->phase), in.previous->reason,
                                                in.previous->proposer.empty() ? "did not run" : in.previous->proposer));
    copy_if_present(s.ws.opt_log_file(), dir / "OPT_LOG.md");
    copy_if_present(s.ws.traps_file(), dir / "TRAPS.md");
    copy_if_present(s.ws.dispatch_file(), dir / "dispatch.md");
    copy_if_present(s.ws.draft_file(), dir / "draft.md");
}

}  // namespace kloop::loop
