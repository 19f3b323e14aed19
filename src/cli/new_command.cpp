// kloop cli: `kloop new --from-fla OP [--repo DIR] [--output FILE] [--target PATH] [--python PY]
// [--registry FILE] [--force]` — write a black-box op.toml for an op of an FLA-style registry, so
// an FLA maintainer starts a loop without writing a spec or a bench adapter (docs/fla.md).
#include "cli/new_command.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fmt/format.h>
#include <ostream>

#include "backend/fla_op_template.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"
#include "spec/spec_loader.hpp"

namespace kloop::cli {

namespace {

namespace fs = std::filesystem;

class new_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("--from-fla", m_op, "The op's name in the repository's FLA-style registry, e.g. chunk_gla")->required();
        sub.add_option("--repo", m_repo, "The repository's root (default: the current directory)");
        sub.add_option("--output", m_output, "Where op.toml goes (default: <repo>/kloop/<op>/op.toml)");
        sub.add_option("--target", m_target,
                       "The file the loop edits, relative to the repository (default: the op's package's chunk.py)");
        sub.add_option("--python", m_python, "The interpreter of the gate and the bench (default: python)");
        sub.add_option("--registry", m_registry, "The registry file, relative to the repository (default: "
                                                 "benchmarks/ops/registry.py)");
        sub.add_flag("--force", m_force, "Overwrite an existing op.toml");
    }

    int do_execute(const invocation& inv) override {
        const fs::path repo = fs::absolute(m_repo.empty() ? fs::current_path() : fs::path(m_repo)).lexically_normal();
        if (!fs::is_directory(repo)) throw usage_error("option --repo: '" + repo.string() + "' is not a directory");
        const fs::path output =
            fs::absolute(m_output.empty() ? repo / "kloop" / m_op / "op.toml" : fs::path(m_output)).lexically_normal();
        if (fs::exists(output) && !m_force)
            throw usage_error("option --output: '" + output.string() + "' exists; pass --force to overwrite it");

        platform::posix_command_runner runner;
        const auto facts = backend::blackbox::describe_fla_op(repo, m_op, m_registry, m_python, runner);
        backend::blackbox::fla_op_choices choices;
        choices.repo = repo;
        choices.spec_dir = output.parent_path();
        choices.registry_file = m_registry;
        choices.python = m_python;
        choices.target = m_target;
        const std::string text = backend::blackbox::fla_op_toml(facts, choices);
        // What is written must load: a spec error here is kloop's bug, and nothing is left behind.
        (void)spec::parse_op_spec(text, output, output.parent_path());
        platform::write_file_atomic(output, text);

        const fs::path spec_dir = fs::relative(output.parent_path(), fs::current_path());
        inv.out << fmt::format("wrote {} ({} from {}: gate {}, {} shapes in {})\n", output.string(), facts.name,
                               facts.import_path, facts.test_file, facts.shapes.size() * facts.modes.size(),
                               fmt::join(facts.modes, ", "));
        inv.out << fmt::format("next: kloop verify {0} --candidate <file>   # gate + registry bench of a candidate\n"
                               "      kloop init {0}                         # start the loop on the current target\n",
                               spec_dir.string());
        return 0;
    }

private:
    std::string m_op;
    std::string m_repo;
    std::string m_output;
    std::string m_target;
    std::string m_python = "python";
    std::string m_registry = "benchmarks/ops/registry.py";
    bool m_force = false;
};

}  // namespace

std::unique_ptr<command_base> make_new_command() { return std::make_unique<new_command>(); }

}  // namespace kloop::cli
