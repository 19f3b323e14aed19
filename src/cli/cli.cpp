// kloop cli: application assembly, parsing and the single top-level catch.
#include "cli/cli.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/command.hpp"
#include "cli/completion.hpp"
#include "cli/man_page.hpp"
#include "core/error.hpp"
#include "kloop/version.hpp"
#include "platform/stale_scratch.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

constexpr const char* exit_codes_text =
    "Exit codes:\n"
    "  0    success (gate green)\n"
    "  1    internal error (a bug in kloop)\n"
    "  2    usage or spec error (bad option, malformed op.toml)\n"
    "  3    gate red (wrong result, crash, hang, non-zero return, failed timed check)\n"
    "  4    build failed (candidate or reference did not compile)\n"
    "  5    contract violated (a frozen file changed)\n"
    "  6    profile unavailable (kloop profile: ncu missing, no counter permission, ncu failed)\n"
    "  7    proposer failed (kloop run: --max-failures failed or refused attempts in a row)\n"
    "  130  interrupted\n";

// "cannot use '/x/keep': Not a directory (cannot create directories)": the path, the OS's reason,
// and what kloop was doing, from a std::filesystem error.
std::string describe_filesystem_error(const std::filesystem::filesystem_error& e) {
    std::string what = e.what();  // libstdc++: "filesystem error: <operation>: <reason> [p1] [p2]"
    std::string operation;
    if (const auto a = what.find(": "); a != std::string::npos)
        if (const auto b = what.find(": ", a + 2); b != std::string::npos) operation = what.substr(a + 2, b - a - 2);
    std::string text = "cannot use '" + e.path1().string() + "'";
    if (!e.path2().empty()) text += " and '" + e.path2().string() + "'";
    text += ": " + e.code().message();
    if (!operation.empty()) text += " (" + operation + ")";
    return text;
}

struct app_bundle {
    CLI::App app;
    std::vector<std::pair<CLI::App*, std::unique_ptr<command_base>>> verbs;
    bool version = false;

    app_bundle() : app("kloop: the disciplined optimisation loop for one kernel", "kloop") {
        app.footer(exit_codes_text);
        app.require_subcommand(0, 1);
        app.add_flag("--version", version, "Print kloop's version and exit");
        for (const auto& entry : command_table()) {
            auto* sub = app.add_subcommand(entry.name, entry.description);
            auto cmd = entry.make();
            cmd->declare(*sub);
            sub->footer(exit_codes_text);
            if (entry.hidden) sub->group("");  // CLI11: a subcommand in no group is not listed
            verbs.emplace_back(sub, std::move(cmd));
        }
    }
};

}  // namespace

std::string help_text() {
    app_bundle b;
    return b.app.help();
}

cli_model describe_command_line() {
    app_bundle b;
    return describe(b.app);
}

namespace {

// What the build runs to write the shell completions and the man page: `--generate-completion
// bash|zsh` and `--generate-man`, each the whole command line. Handled before CLI11's parse, so
// --help neither lists them nor changes shape for them. Returns the exit code, or nothing when
// args are not one of these.
std::optional<int> run_generator(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    if (args.empty()) return std::nullopt;
    if (args[0] == "--generate-man" && args.size() == 1) {
        out << man_page(describe_command_line(), build_info::version);
        return 0;
    }
    if (args[0] != "--generate-completion") return std::nullopt;
    const std::string shell = args.size() == 2 ? args[1] : std::string();
    if (shell == "bash" || shell == "zsh") {
        const cli_model m = describe_command_line();
        out << (shell == "bash" ? bash_completion(m) : zsh_completion(m));
        return 0;
    }
    err << "kloop: error: --generate-completion takes one shell, bash or zsh"
        << (args.size() == 2 ? ", not '" + shell + "'" : std::string()) << "\n";
    return static_cast<int>(exit_code::usage_error);
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    if (auto generated = run_generator(args, out, err)) return *generated;
    app_bundle b;
    std::vector<std::string> argv_for_record{"kloop"};
    argv_for_record.insert(argv_for_record.end(), args.begin(), args.end());
    try {
        std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 wants them reversed
        b.app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        // Help for the subcommand that asked, if any.
        for (auto& [sub, cmd] : b.verbs)
            if (sub->parsed()) {
                out << sub->help();
                return 0;
            }
        out << b.app.help();
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        out << b.app.help("", CLI::AppFormatMode::All);
        return 0;
    } catch (const CLI::ParseError& e) {
        err << "kloop: error: " << e.what() << "\nRun with --help for usage.\n";
        return static_cast<int>(exit_code::usage_error);
    }
    if (b.version) {
        out << "kloop " << build_info::version << " (" << build_info::git_commit << (build_info::git_dirty ? ", dirty" : "")
            << ")\n";
        return 0;
    }
    for (auto& [sub, cmd] : b.verbs) {
        if (!sub->parsed()) continue;
        try {
            platform::install_interrupt_handler();
            // What a kloop that died left in the temp directory (platform/stale_scratch.hpp).
            platform::sweep_stale_scratch_dirs();
            return cmd->execute(invocation{argv_for_record, out, err});
        } catch (const kloop::error& e) {
            err << "kloop: error: " << e.what() << "\n";
            return static_cast<int>(e.get_code());
        } catch (const std::filesystem::filesystem_error& e) {
            // A path the user gave (or the environment holds) that the OS refused: a symlink
            // loop, a name too long, a file where a directory must be, a place under /proc.
            err << "kloop: error: " << describe_filesystem_error(e) << "\n";
            return static_cast<int>(exit_code::usage_error);
        } catch (const std::exception& e) {
            err << "kloop: internal error: " << e.what() << "\n";
            return static_cast<int>(exit_code::internal_error);
        }
    }
    out << b.app.help();
    return static_cast<int>(exit_code::usage_error);
}

}  // namespace kloop::cli
