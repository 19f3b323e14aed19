// kloop cli: `kloop best [--workspace DIR] [--json]` — rank the eligible versions (median, then
// mean, then earliest) and say why the others are not eligible.
#include "cli/best_command.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <ostream>

#include "cli/loop_options.hpp"
#include "report/detail/markdown.hpp"
#include "loop/loop_session.hpp"
#include "loop/ranking.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

using nlohmann::json;

class best_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_flag("--json", m_json, "Print a JSON object instead of text");
        sub.add_flag("--allow-unprofiled", m_allow_unprofiled,
                     "Rank CUDA versions without a full Nsight Compute profile too (where ncu cannot run); `kloop "
                     "report --allow-unprofiled` states it in the final summary");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        const auto s = loop::open_session(resolve_workspace(m_workspace, runner), loop::access::read, {inv.argv, {}});
        const auto policy = loop::promotion_policy(m_allow_unprofiled);
        const auto ranked = loop::rank_versions(s.records, policy);
        if (m_json) {
            json r = json::array(), excluded = json::array();
            for (std::size_t i = 0; i < ranked.size(); ++i) {
                const auto& rec = s.records[static_cast<std::size_t>(ranked[i].number)];
                r.push_back({{"rank", i + 1}, {"version", ranked[i].number}, {"label", loop::version_label(ranked[i].number)},
                             {"geomean_median_ms", ranked[i].geomean_median_s * 1e3},
                             {"geomean_mean_ms", ranked[i].geomean_mean_s * 1e3},
                             {"candidate", (s.ws.iteration_dir(rec.number) / rec.candidate_file).string()},
                             {"sha256", rec.candidate_sha256}, {"profile", rec.profile_status}});
            }
            for (const auto& rec : s.records)
                if (auto why = loop::ineligibility(rec, policy); !why.empty())
                    excluded.push_back({{"version", rec.number}, {"why", why}});
            json j = loop::record_header("kloop.best", s.origin);
            j.update({{"best", ranked.empty() ? json(nullptr) : json(ranked.front().number)},
                      {"rule", loop::eligibility_rule_text(policy)},
                      {"ranking", r},
                      {"not_eligible", excluded}});
            inv.out << j.dump(2) << "\n";
            return 0;
        }
        inv.out << "rule: " << loop::eligibility_rule_text(policy) << "\n\n";
        inv.out << "rank  version  geomean median ms  geomean mean ms  profile  file\n";
        for (std::size_t i = 0; i < ranked.size(); ++i) {
            const auto& rec = s.records[static_cast<std::size_t>(ranked[i].number)];
            inv.out << fmt::format("{:>4}  {:>7}  {:>17}  {:>15}  {:>7}  {}\n", i + 1, loop::version_label(ranked[i].number),
                                   report::detail::ms(ranked[i].geomean_median_s), report::detail::ms(ranked[i].geomean_mean_s),
                                   rec.profile_status, (s.ws.iteration_dir(rec.number) / rec.candidate_file).string());
        }
        for (const auto& rec : s.records)
            if (auto why = loop::ineligibility(rec, policy); !why.empty())
                inv.out << fmt::format("not eligible: {} — {}\n", loop::version_label(rec.number), why);
        if (!ranked.empty()) inv.out << "best: " << loop::version_label(ranked.front().number) << "\n";
        else inv.out << "best: none eligible under this rule\n";
        return 0;
    }

private:
    std::string m_workspace;
    bool m_json = false;
    bool m_allow_unprofiled = false;
};

}  // namespace

std::unique_ptr<command_base> make_best_command() { return std::make_unique<best_command>(); }

}  // namespace kloop::cli
