// kloop cli: `kloop nogo [--workspace DIR] [--bound TEXT] [--json]` — check the no-go bar and
// list what is missing.
#include "cli/nogo_command.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fmt/format.h>
#include <ostream>

#include "cli/loop_options.hpp"
#include "loop/loop_session.hpp"
#include "loop/nogo.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

using nlohmann::json;

class nogo_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_option("--bound", m_bound,
                       "The named active bound or blocker with its number, e.g. 'DRAM bandwidth: 41 of 45 GB/s' (kept in "
                       "nogo.json)");
        sub.add_flag("--json", m_json, "Print a JSON object instead of text");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        const auto s = loop::open_session(resolve_workspace(m_workspace, runner), loop::access::write, {inv.argv, {}});
        std::string bound = m_bound;
        if (bound.empty() && std::filesystem::exists(s.ws.nogo_file()))
            bound = loop::read_record(s.ws.nogo_file(), "kloop.nogo").value("bound", "");
        const auto a = loop::assess_nogo(s.records, bound);
        json items = json::array();
        for (const auto& i : a.items) items.push_back({{"name", i.name}, {"met", i.met}, {"evidence", i.evidence}});
        json body = {{"bound", bound}, {"cleared", a.cleared}, {"items", items},
                     {"positive_version", a.positive ? json(*a.positive) : json(nullptr)}};
        loop::write_record(s.ws.nogo_file(), "kloop.nogo", body, s.origin);
        if (m_json) {
            json j = loop::record_header("kloop.nogo", s.origin);
            j.update(body);
            inv.out << j.dump(2) << "\n";
            return 0;
        }
        for (const auto& i : a.items) inv.out << fmt::format("[{}] {}: {}\n", i.met ? "x" : " ", i.name, i.evidence);
        if (a.positive)
            inv.out << fmt::format("note: {} was positive — there is a win to promote; run `kloop report` rather than "
                                   "concluding a no-go\n",
                                   loop::version_label(*a.positive));
        inv.out << (a.cleared ? "no-go bar: CLEARED — the no-go verdict is supported by evidence\n"
                              : "no-go bar: NOT CLEARED — this is an unfinished loop, not a no-go\n");
        return 0;
    }

private:
    std::string m_workspace;
    std::string m_bound;
    bool m_json = false;
};

}  // namespace

std::unique_ptr<command_base> make_nogo_command() { return std::make_unique<nogo_command>(); }

}  // namespace kloop::cli
