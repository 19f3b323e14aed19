// kloop backend/blackbox: one command in fresh copies of the repository (see copy_runner.hpp).
#include "backend/blackbox/copy_runner.hpp"

#include <algorithm>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/blackbox/repo_copy.hpp"
#include "core/error.hpp"
#include "platform/sha256.hpp"

namespace kloop::backend::blackbox {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t log_tail_bytes = 4u << 20;   // parsed: pytest's summary is at the end
constexpr std::size_t record_tail_bytes = 4096;       // kept in the record

std::string read_tail(const fs::path& p, std::uintmax_t max_bytes) {
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    if (ec) return {};
    std::ifstream in(p, std::ios::binary);
    if (!in) return {};
    const std::uintmax_t skip = size > max_bytes ? size - max_bytes : 0;
    in.seekg(static_cast<std::streamoff>(skip));
    std::string out(static_cast<std::size_t>(size - skip), '\0');
    in.read(out.data(), static_cast<std::streamsize>(out.size()));
    out.resize(static_cast<std::size_t>(in.gcount()));
    return out;
}

std::string tail_of(const std::string& s, std::size_t n) { return s.size() > n ? "…" + s.substr(s.size() - n) : s; }

std::string env_value(const clean_env& env, const std::string& name) {
    for (const auto& [k, v] : env.vars)
        if (k == name) return v;
    return "unset";
}

}  // namespace

copy_runner::copy_runner(const spec::op_spec& spec, platform::command_runner_base& commands, fs::path scratch,
                         const fs::path& state_dir, const std::vector<fs::path>& leave_out)
    : m_spec(spec), m_bb(*spec.blackbox), m_commands(commands), m_scratch(std::move(scratch)),
      m_copies(state_dir.empty() ? fs::path() : state_dir / "copies") {
    m_refused = spec::builtin_refused_env();
    m_refused.insert(m_refused.end(), m_bb.refuse_env.begin(), m_bb.refuse_env.end());
    m_exclude = m_bb.exclude;
    for (const auto& f : spec.frozen) {
        const fs::path r = f.lexically_relative(m_bb.root);
        if (!r.empty() && *r.begin() != "..") m_frozen_rel.push_back(r);
    }
    auto inside = [&](const fs::path& p) {
        std::error_code ec;
        const fs::path rel = fs::weakly_canonical(p, ec).lexically_relative(m_bb.root);
        return !ec && !rel.empty() && rel != "." && *rel.begin() != ".." ? rel : fs::path();
    };
    // A scratch directory (--keep ./dir) or the workspace inside the repository is never copied.
    for (const fs::path& own : {m_scratch, state_dir.empty() ? fs::path() : state_dir.parent_path()})
        if (const fs::path rel = own.empty() ? fs::path() : inside(own); !rel.empty()) m_exclude.push_back(rel);
    // Nor a file the caller leaves out, unless the gate depends on it: the target and the frozen
    // files are always copied, whatever path a proposal is given.
    for (const fs::path& f : leave_out) {
        const fs::path rel = inside(f);
        if (rel.empty() || rel == m_bb.target.lexically_normal() ||
            std::find(m_frozen_rel.begin(), m_frozen_rel.end(), rel) != m_frozen_rel.end())
            continue;
        m_exclude.push_back(rel);
    }
}

clean_env copy_runner::environment_for(const spec::blackbox_command& cmd, const env_list& kloop_set) const {
    env_sources src;
    src.kloop_env = current_environment();
    src.refused = m_refused;
    src.pass_env = cmd.pass_env;
    src.spec_env = cmd.env;
    src.kloop_set = kloop_set;
    return make_clean_env(src, m_spec.spec_file.string());
}

std::string copy_runner::tree_digest(const fs::path& candidate) const {
    return blackbox::tree_digest(m_bb.root, m_exclude, m_bb.target, candidate);
}

fs::path copy_runner::copy_path(const fs::path& candidate, const std::string& label) const {
    if (m_copies.empty()) return m_scratch / ("repo-" + label);
    return m_copies / ("repo-" + platform::sha256_file(candidate).substr(0, 16));
}

copy_runner::prepared_copy copy_runner::prepare(const fs::path& candidate, const fs::path& copy) {
    prepared_copy c;
    c.root = copy;
    std::error_code ec;
    fs::remove_all(copy, ec);  // fresh every time: nothing a previous run wrote survives
    c.files = copy_repository(m_bb.root, copy, m_exclude).files;
    place_candidate(candidate, copy, m_bb.target);
    for (const auto& f : m_frozen_rel)
        if (fs::is_regular_file(copy / f)) c.frozen_sha.emplace_back(f, platform::sha256_file(copy / f));
    return c;
}

void copy_runner::collect_frozen_changes(const prepared_copy& c, std::vector<std::string>& changed) const {
    for (const auto& [f, sha] : c.frozen_sha) {
        std::error_code fe;
        if (!fs::is_regular_file(c.root / f, fe) || platform::sha256_file(c.root / f) != sha)
            if (std::find(changed.begin(), changed.end(), f.string()) == changed.end()) changed.push_back(f.string());
    }
}

copy_runner::outcome copy_runner::execute(const spec::blackbox_command& cmd, const std::vector<std::string>& argv,
                                          const clean_env& env, const fs::path& cwd, double timeout_s,
                                          const std::string& what, const std::string& label) {
    outcome o;
    eval::command_run& r = o.run;
    r.argv = argv;
    r.cwd = cmd.cwd.empty() ? "." : cmd.cwd.string();
    r.env = env.vars;
    r.env_line = env.describe();
    r.timeout_s = timeout_s;
    r.log_stem = (m_scratch / label).string();

    platform::process_request req;
    req.argv = argv_with_env(env, argv);
    if (fs::exists("/usr/bin/env")) req.argv[0] = "/usr/bin/env";
    req.cwd = cwd;
    req.timeout_s = timeout_s;
    req.stdout_file = r.log_stem + ".stdout";
    req.stderr_file = r.log_stem + ".stderr";
    const auto res = m_commands.run(req);
    o.stdout_text = read_tail(req.stdout_file, log_tail_bytes);
    o.stderr_text = read_tail(req.stderr_file, log_tail_bytes);
    if (!res.started && !res.interrupted)
        throw usage_error(fmt::format("the {} command could not start: {}", what, res.spawn_error));
    r.started = res.started;
    r.exit_code = res.exit_code;
    r.term_signal = res.term_signal;
    r.timed_out = res.timed_out;
    r.wall_s = res.wall_s;
    r.ended = res.describe();
    r.stdout_tail = tail_of(o.stdout_text, record_tail_bytes);
    r.stderr_tail = tail_of(o.stderr_text, record_tail_bytes);
    if (res.interrupted) throw error(exit_code::interrupted, "interrupted");
    // `env -i` could not find or run the program: the spec's or the machine's problem.
    if (res.exit_code == 127 || res.exit_code == 126)
        if (o.stderr_text.rfind("env:", 0) == 0 || o.stderr_text.find("\nenv:") != std::string::npos ||
            o.stderr_text.find("/usr/bin/env:") != std::string::npos)
            throw usage_error(fmt::format("the {} command '{}' could not start on the command's PATH ({}): {}", what,
                                          argv.empty() ? std::string() : argv[0], env_value(env, "PATH"),
                                          o.stderr_text.substr(0, o.stderr_text.find('\n'))));
    return o;
}

copy_runner::outcome copy_runner::run(const spec::blackbox_command& cmd, const std::vector<std::string>& argv,
                                      const clean_env& env, const fs::path& candidate, double timeout_s,
                                      const std::string& what) {
    const std::string label = fmt::format("{:02d}-{}", m_counter++, what);
    const prepared_copy copy = prepare(candidate, copy_path(candidate, label));
    struct remover {
        fs::path p;
        ~remover() {
            std::error_code ec;
            fs::remove_all(p, ec);
        }
    } cleanup{copy.root};
    outcome o = execute(cmd, argv, env, copy.root / cmd.cwd, timeout_s, what, label);
    o.copied_files = copy.files;
    collect_frozen_changes(copy, o.frozen_changed);
    return o;
}

copy_runner::outcome copy_runner::run_sides(const spec::blackbox_command& cmd, const std::vector<std::string>& argv,
                                            const clean_env& env,
                                            const std::vector<std::pair<std::string, fs::path>>& sides,
                                            double timeout_s, const std::string& what) {
    const std::string label = fmt::format("{:02d}-{}", m_counter++, what);
    std::vector<prepared_copy> copies;
    struct remover {
        std::vector<fs::path> paths;
        ~remover() {
            std::error_code ec;
            for (const auto& p : paths) fs::remove_all(p, ec);
        }
    } cleanup;
    nlohmann::json listed = nlohmann::json::array();
    for (const auto& [name, candidate] : sides) {
        const fs::path path = copy_path(candidate, label + "-" + name);
        // The same bytes on both sides (an A/A run) share one copy: each side still imports its own modules.
        const auto same = std::find_if(copies.begin(), copies.end(), [&](const prepared_copy& c) { return c.root == path; });
        if (same == copies.end()) {
            copies.push_back(prepare(candidate, path));
            cleanup.paths.push_back(path);
        }
        listed.push_back({{"name", name}, {"root", path.string()}});
    }
    // Run from an empty directory: nothing is imported from a working directory by accident.
    const fs::path cwd = m_scratch / (label + "-cwd");
    fs::create_directories(cwd);
    cleanup.paths.push_back(cwd);
    clean_env with_sides = env;
    with_sides.vars.emplace_back("KLOOP_BENCH_SIDES", listed.dump());
    std::sort(with_sides.vars.begin(), with_sides.vars.end());
    with_sides.from_kloop.push_back("KLOOP_BENCH_SIDES");
    outcome o = execute(cmd, argv, with_sides, cwd, timeout_s, what, label);
    o.run.cwd = "(an empty directory; the sides' copies are named in KLOOP_BENCH_SIDES)";
    for (const auto& c : copies) {
        o.copied_files = c.files;
        collect_frozen_changes(c, o.frozen_changed);
    }
    return o;
}

}  // namespace kloop::backend::blackbox
