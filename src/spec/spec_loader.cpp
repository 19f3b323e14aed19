// kloop spec: op.toml → op_spec, with every rule of docs/spec.md checked.
//
// The only translation unit that includes toml++. Each section of the file has one reader
// method; each reader first rejects unknown keys (with a near-miss suggestion), then reads and
// checks its fields. Cross-section rules (a gate shape exists, every tensor has positive sizes
// in every shape) run last. Every problem becomes a kloop::spec_error carrying the line of the
// offending node — or of the enclosing table when the node is missing — and its dotted field.
#include "spec/spec_loader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "spec/env_patterns.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "spec/held_out.hpp"
#include "spec/spellcheck.hpp"

namespace kloop::spec {

namespace fs = std::filesystem;

namespace {

constexpr double max_exact_integer = 9007199254740992.0;  // 2^53

int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }
int line_of(const toml::key& k) { return static_cast<int>(k.source().begin.line); }

std::string type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a float";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::array: return "an array";
        case toml::node_type::table: return "a table";
        case toml::node_type::date:
        case toml::node_type::time:
        case toml::node_type::date_time: return "a date/time";
        case toml::node_type::none: break;
    }
    return "nothing";
}

std::string format_number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string join(const std::string& where, std::string_view key) {
    return where.empty() ? std::string(key) : where + "." + std::string(key);
}

std::string index(const std::string& where, std::size_t i) {
    return where + "[" + std::to_string(i) + "]";
}

std::string list(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
    return out;
}

bool is_c_identifier(std::string_view s) {
    if (s.empty()) return false;
    auto start = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    if (!start(s.front())) return false;
    return std::all_of(s.begin(), s.end(),
                       [&](char c) { return start(c) || (c >= '0' && c <= '9'); });
}

// Names that end up in file names and reports: [A-Za-z0-9_-]+.
bool is_plain_name(std::string_view s) {
    if (s.empty()) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    });
}

// toml++ keeps a table's entries sorted by key; users expect the order they wrote (modes,
// params), so entries are re-sorted by their position in the file.
std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& t) {
    std::vector<std::pair<const toml::key*, const toml::node*>> out;
    for (auto&& [k, v] : t) out.emplace_back(&k, &v);
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        const auto& pa = a.first->source().begin;
        const auto& pb = b.first->source().begin;
        return std::pair(pa.line, pa.column) < std::pair(pb.line, pb.column);
    });
    return out;
}

fs::path absolute_path(const fs::path& p) {
    std::error_code ec;
    fs::path abs = fs::absolute(p, ec);
    if (ec) abs = p;
    fs::path canon = fs::weakly_canonical(abs, ec);
    return ec ? abs.lexically_normal() : canon;
}

// Whether `path` lies inside `dir` (or is it); both already absolute with links resolved.
bool lies_within(const fs::path& path, const fs::path& dir) {
    const fs::path rel = path.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
}

class loader {
public:
    loader(std::string file, fs::path op_dir, fs::path spec_file)
        : m_file(std::move(file)), m_op_dir(std::move(op_dir)), m_spec_file(std::move(spec_file)) {}

    op_spec load(const toml::table& root) {
        m_spec.op_dir = m_op_dir;
        m_spec.spec_file = m_spec_file;
        check_keys(root, "", {"op", "build", "dims", "shapes", "modes", "repo", "gate", "bench", "python", "candidate"});
        read_op(root);
        if (m_spec.blackbox) {  // black-box mode: docs/blackbox.md
            if (const toml::node* c = find(root, "candidate"))
                fail(line_of(*c), "candidate",
                     "not used in black-box mode: the candidate is the repository's files ([repo] candidate)");
            read_blackbox(root);
            return std::move(m_spec);
        }
        read_build(root);
        read_python(root);
        read_candidate(root);
        read_dims(root);
        read_shapes(root);
        read_modes(root);
        check_sizes();
        check_domains();
        return std::move(m_spec);
    }

private:
    std::string m_file;
    fs::path m_op_dir;
    fs::path m_spec_file;
    op_spec m_spec;
    int m_shapes_line = 0;

    [[noreturn]] void fail(int line, const std::string& field, const std::string& why) const {
        throw spec_error(m_file, line, field, why);
    }

    // ---- generic field access -----------------------------------------------------------

    void check_keys(const toml::table& t, const std::string& where,
                    std::initializer_list<const char*> allowed) const {
        std::vector<std::string> names(allowed.begin(), allowed.end());
        for (auto&& [k, v] : t) {
            (void)v;
            const std::string key(k.str());
            if (std::find(names.begin(), names.end(), key) != names.end()) continue;
            const std::string in = where.empty() ? "at top level" : "in " + where;
            std::string why = "unknown field '" + key + "' " + in;
            if (auto near = closest_match(key, names))
                why += "; did you mean '" + *near + "'?";
            else
                why += "; expected one of: " + list(names);
            fail(line_of(k), join(where, key), why);
        }
    }

    const toml::node* find(const toml::table& t, std::string_view key) const {
        return t.get(key);
    }

    const toml::table& require_table(const toml::table& parent, int parent_line,
                                     const std::string& where, std::string_view key,
                                     const std::string& what) const {
        const toml::node* n = find(parent, key);
        if (n == nullptr) fail(parent_line, join(where, key), "missing required " + what);
        if (!n->is_table())
            fail(line_of(*n), join(where, key), "must be a table, got " + type_name(*n));
        return *n->as_table();
    }

    std::string read_string(const toml::node& n, const std::string& field) const {
        if (!n.is_string()) fail(line_of(n), field, "must be a string, got " + type_name(n));
        return n.as_string()->get();
    }

    std::string require_string(const toml::table& t, const std::string& where,
                               std::string_view key) const {
        const toml::node* n = find(t, key);
        if (n == nullptr) fail(line_of(t), join(where, key), "missing required field '" + std::string(key) + "'");
        return read_string(*n, join(where, key));
    }

    std::optional<std::string> optional_string(const toml::table& t, const std::string& where,
                                               std::string_view key) const {
        const toml::node* n = find(t, key);
        if (n == nullptr) return std::nullopt;
        return read_string(*n, join(where, key));
    }

    double read_number(const toml::node& n, const std::string& field) const {
        if (n.is_integer()) return static_cast<double>(n.as_integer()->get());
        if (n.is_floating_point()) {
            const double v = n.as_floating_point()->get();
            if (!std::isfinite(v)) fail(line_of(n), field, "must be a finite number");
            return v;
        }
        fail(line_of(n), field, "must be a number, got " + type_name(n));
    }

    const toml::array& read_array(const toml::node& n, const std::string& field) const {
        if (!n.is_array()) fail(line_of(n), field, "must be an array, got " + type_name(n));
        return *n.as_array();
    }

    std::vector<std::pair<std::string, int>> read_string_list(const toml::node& n,
                                                              const std::string& field) const {
        std::vector<std::pair<std::string, int>> out;
        const toml::array& arr = read_array(n, field);
        for (std::size_t i = 0; i < arr.size(); ++i)
            out.emplace_back(read_string(*arr.get(i), index(field, i)), line_of(*arr.get(i)));
        return out;
    }

    // An array whose every element is a table: [[x]] or [ {..}, {..} ].
    const toml::array& read_table_array(const toml::node& n, const std::string& field,
                                        const std::string& hint) const {
        if (!n.is_array())
            fail(line_of(n), field, "must be an array of tables (" + hint + "), got " + type_name(n));
        const toml::array& arr = *n.as_array();
        for (std::size_t i = 0; i < arr.size(); ++i)
            if (!arr.get(i)->is_table())
                fail(line_of(*arr.get(i)), index(field, i),
                     "must be a table (" + hint + "), got " + type_name(*arr.get(i)));
        return arr;
    }

    // A path relative to the op directory that must name an existing regular file or folder.
    // `inside_op_dir`: the file must resolve (links followed) inside the op directory — the
    // reference and the frozen files, which the contract guards.
    fs::path read_relative_path(const std::string& text, int line, const std::string& field,
                                bool want_directory, bool inside_op_dir = false) const {
        if (text.empty()) fail(line, field, "must not be empty");
        const fs::path rel(text);
        if (rel.is_absolute())
            fail(line, field, "'" + text + "' must be a path relative to the op directory");
        const fs::path abs = absolute_path(m_op_dir / rel);
        std::error_code ec;
        const fs::file_status st = fs::status(abs, ec);
        if (ec || !fs::exists(st))
            fail(line, field, "'" + text + "' does not exist (looked for '" + abs.string() + "')");
        if (want_directory && !fs::is_directory(st))
            fail(line, field, "'" + text + "' is not a directory");
        if (!want_directory && !fs::is_regular_file(st))
            fail(line, field, "'" + text + "' is not a regular file");
        if (inside_op_dir && !lies_within(abs, m_op_dir))
            fail(line, field, "'" + text + "' resolves to '" + abs.string() + "', outside the op directory '" +
                                  m_op_dir.string() + "' (links followed): the reference and frozen files must lie inside it");
        return abs;
    }

    dim_expr read_dim_expr(const toml::node& n, const std::string& field) const {
        std::string text;
        if (n.is_integer())
            text = std::to_string(n.as_integer()->get());
        else if (n.is_string())
            text = n.as_string()->get();
        else
            fail(line_of(n), field, "must be a dim expression (a string such as \"N*D\") or an integer, got " +
                                        type_name(n));
        dim_expr e;
        try {
            e = dim_expr::parse(text);
        } catch (const std::invalid_argument& ex) {
            fail(line_of(n), field, ex.what());
        }
        check_declared(e, line_of(n), field);
        return e;
    }

    void check_declared(const dim_expr& e, int line, const std::string& field) const {
        for (const std::string& name : e.get_names()) {
            if (std::find(m_spec.dims.begin(), m_spec.dims.end(), name) != m_spec.dims.end())
                continue;
            fail(line, field, "undeclared dim '" + name + "' in '" + e.get_text() + "'" +
                                  did_you_mean(name, m_spec.dims) + "; declared dims: " +
                                  list(m_spec.dims));
        }
    }

    // ---- [op] ---------------------------------------------------------------------------

    void read_op(const toml::table& root) {
        const toml::table& op = require_table(root, 0, "", "op", "table [op]");
        check_keys(op, "op", {"name", "description", "backend", "reference", "frozen", "seeds", "mode"});

        m_spec.name = require_string(op, "op", "name");
        if (!is_plain_name(m_spec.name))
            fail(line_of(*find(op, "name")), "op.name",
                 "'" + m_spec.name + "' may only contain letters, digits, '_' and '-'");

        m_spec.description = optional_string(op, "op", "description").value_or("");

        if (auto b = optional_string(op, "op", "backend")) {
            auto kind = backend_from_string(*b);
            if (!kind)
                fail(line_of(*find(op, "backend")), "op.backend",
                     "unknown backend '" + *b + "'" + did_you_mean(*b, {"cpu", "cuda", "python"}) +
                         "; expected one of: cpu, cuda, python");
            m_spec.backend = *kind;
        }

        if (read_op_mode(op)) return;  // black-box: read_blackbox reads frozen; no reference, no seeds
        reject_blackbox_tables(root);

        const std::string ref = require_string(op, "op", "reference");
        m_spec.reference = read_relative_path(ref, line_of(*find(op, "reference")), "op.reference", false, true);

        // op.toml and the reference are always frozen; listed files follow, without repeats.
        m_spec.frozen = {m_spec_file};
        if (m_spec.reference != m_spec_file) m_spec.frozen.push_back(m_spec.reference);
        if (const toml::node* fr = find(op, "frozen")) {
            const auto files = read_string_list(*fr, "op.frozen");
            for (std::size_t i = 0; i < files.size(); ++i) {
                const fs::path p = read_relative_path(files[i].first, files[i].second,
                                                      index("op.frozen", i), false, true);
                if (std::find(m_spec.frozen.begin(), m_spec.frozen.end(), p) == m_spec.frozen.end())
                    m_spec.frozen.push_back(p);
            }
        }

        if (const toml::node* seeds = find(op, "seeds")) {
            const toml::array& arr = read_array(*seeds, "op.seeds");
            if (arr.size() != 2)
                fail(line_of(*seeds), "op.seeds",
                     "must list exactly 2 seeds (gate trials 0 and 1), got " + std::to_string(arr.size()));
            for (std::size_t i = 0; i < 2; ++i) {
                const toml::node& s = *arr.get(i);
                if (!s.is_integer() || s.as_integer()->get() < 0)
                    fail(line_of(s), index("op.seeds", i), "must be a non-negative integer");
                m_spec.fixed_seeds[i] = static_cast<std::uint64_t>(s.as_integer()->get());
            }
            if (m_spec.fixed_seeds[0] == m_spec.fixed_seeds[1])
                fail(line_of(*seeds), "op.seeds", "the two seeds must differ");
        }
    }

    // ---- black-box mode: [op] mode, [repo], [gate], [bench] ------------------------------

    // Reads [op] mode; true (and m_spec.blackbox set) for "blackbox".
    bool read_op_mode(const toml::table& op) {
        const auto mode = optional_string(op, "op", "mode");
        if (!mode || *mode == "native") return false;
        if (*mode != "blackbox")
            fail(line_of(*find(op, "mode")), "op.mode",
                 "unknown mode '" + *mode + "'" + did_you_mean(*mode, {"native", "blackbox"}) +
                     "; expected \"native\" (kloop builds and runs the candidate) or \"blackbox\" (a repository's "
                     "own test and bench commands)");
        m_spec.blackbox.emplace();
        return true;
    }

    void reject_blackbox_tables(const toml::table& root) const {
        for (const char* key : {"repo", "gate", "bench"})
            if (const toml::node* n = find(root, key))
                fail(line_of(*n), key,
                     "[" + std::string(key) + "] is only used in black-box mode; add mode = \"blackbox\" to [op] "
                     "(docs/blackbox.md) or remove it");
    }

    // A path relative to the repository root that stays inside it. kind: 'f' an existing regular
    // file, 'd' an existing directory, '?' need not exist.
    fs::path read_repo_path(const std::string& text, int line, const std::string& field, const fs::path& root,
                            char kind) const {
        if (text.empty()) fail(line, field, "must not be empty");
        const fs::path rel(text);
        if (rel.is_absolute())
            fail(line, field, "'" + text + "' must be a path relative to the repository root ([repo] root)");
        const fs::path norm = rel.lexically_normal();
        if (!norm.empty() && *norm.begin() == "..")
            fail(line, field, "'" + text + "' leaves the repository root '" + root.string() + "'");
        const fs::path abs = absolute_path(root / norm);
        if (!lies_within(abs, absolute_path(root)))
            fail(line, field, "'" + text + "' resolves to '" + abs.string() + "', outside the repository root '" +
                                  root.string() + "' (links followed)");
        if (kind == '?') return norm;
        std::error_code ec;
        const fs::file_status st = fs::status(abs, ec);
        if (ec || !fs::exists(st))
            fail(line, field, "'" + text + "' does not exist (looked for '" + abs.string() + "')");
        if (kind == 'd' && !fs::is_directory(st)) fail(line, field, "'" + text + "' is not a directory");
        if (kind == 'f' && !fs::is_regular_file(st)) fail(line, field, "'" + text + "' is not a regular file");
        return norm;
    }

    std::vector<std::string> read_env_patterns(const toml::node& n, const std::string& field) const {
        std::vector<std::string> out;
        const auto names = read_string_list(n, field);
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (!is_env_pattern(names[i].first))
                fail(names[i].second, index(field, i),
                     "'" + names[i].first + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*, optionally ending in '*')");
            out.push_back(names[i].first);
        }
        return out;
    }

    void read_blackbox(const toml::table& root) {
        const toml::table& op = *find(root, "op")->as_table();
        for (const char* key : {"reference", "seeds"})
            if (const toml::node* n = find(op, key))
                fail(line_of(*n), join("op", key),
                     "not used in black-box mode: the repository's gate command holds the reference and its inputs; "
                     "list the reference file in op.frozen instead");
        for (const char* key : {"build", "dims", "shapes", "modes"})
            if (const toml::node* n = find(root, key))
                fail(line_of(*n), key,
                     "[" + std::string(key) + "] is not used in black-box mode: kloop builds nothing and the "
                     "repository's commands choose the shapes; name the timed shapes in [bench] shapes");
        blackbox_spec& bb = *m_spec.blackbox;

        // [repo]
        const toml::table& repo = require_table(root, 0, "", "repo", "table [repo] (root, target) in black-box mode");
        check_keys(repo, "repo", {"root", "target", "exclude"});
        const toml::node* rn = find(repo, "root");
        const std::string root_text = rn ? read_string(*rn, "repo.root") : std::string(".");
        bb.root = read_relative_path(root_text, rn ? line_of(*rn) : line_of(repo), "repo.root", true);
        const std::string target = require_string(repo, "repo", "target");
        bb.target = read_repo_path(target, line_of(*find(repo, "target")), "repo.target", bb.root, 'f');
        if (const toml::node* ex = find(repo, "exclude")) {
            const auto paths = read_string_list(*ex, "repo.exclude");
            for (std::size_t i = 0; i < paths.size(); ++i) {
                const fs::path p = read_repo_path(paths[i].first, paths[i].second, index("repo.exclude", i), bb.root, '?');
                if (p == bb.target || bb.target.string().rfind(p.string() + "/", 0) == 0 || p == ".")
                    fail(paths[i].second, index("repo.exclude", i),
                         "'" + paths[i].first + "' would leave the target '" + bb.target.string() + "' out of the copy");
                bb.exclude.push_back(p);
            }
        }

        // op.frozen: repository files, relative to the root. The gate's own files must be frozen.
        m_spec.frozen = {m_spec_file};
        const toml::node* fr = find(op, "frozen");
        if (fr == nullptr)
            fail(line_of(op), "op.frozen",
                 "missing required field 'frozen' in black-box mode: list the gate's files relative to the "
                 "repository root (the test file, the reference implementation)");
        const auto files = read_string_list(*fr, "op.frozen");
        if (files.empty())
            fail(line_of(*fr), "op.frozen",
                 "must list at least one file in black-box mode (the test file, the reference implementation)");
        for (std::size_t i = 0; i < files.size(); ++i) {
            const fs::path rel = read_repo_path(files[i].first, files[i].second, index("op.frozen", i), bb.root, 'f');
            if (rel == bb.target)
                fail(files[i].second, index("op.frozen", i),
                     "'" + files[i].first + "' is the [repo] target: the loop edits it, so it cannot be frozen");
            const fs::path p = absolute_path(bb.root / rel);
            if (std::find(m_spec.frozen.begin(), m_spec.frozen.end(), p) == m_spec.frozen.end()) m_spec.frozen.push_back(p);
        }

        // [gate]
        const toml::table& gate = require_table(root, 0, "", "gate", "table [gate] (command) in black-box mode");
        check_keys(gate, "gate", {"command", "cwd", "env", "pass_env", "timeout", "refuse_env"});
        if (const toml::node* r = find(gate, "refuse_env")) bb.refuse_env = read_env_patterns(*r, "gate.refuse_env");
        std::vector<std::string> refused = builtin_refused_env();
        refused.insert(refused.end(), bb.refuse_env.begin(), bb.refuse_env.end());
        bb.gate = read_command(gate, "gate", bb.root, refused);

        // [bench]
        const toml::table& bench = require_table(root, 0, "", "bench", "table [bench] (command, shapes) in black-box mode");
        check_keys(bench, "bench", {"command", "registry", "sides", "cwd", "env", "pass_env", "timeout", "shapes", "rounds",
                                            "round_time_s"});
        if (const toml::node* reg = find(bench, "registry")) {
            if (const toml::node* cmd = find(bench, "command"))
                fail(line_of(*cmd), "bench.command",
                     "give either 'command' or 'registry', not both: with a registry kloop runs its own bench module");
            bb.bench_registry = read_registry_bench(*reg, bb);
            bb.bench = read_command(bench, "bench", bb.root, refused, registry_argv(*bb.bench_registry));
            bb.bench_sides = true;
        } else {
            bb.bench = read_command(bench, "bench", bb.root, refused);
        }
        if (const toml::node* sides = find(bench, "sides")) {
            if (!sides->is_boolean()) fail(line_of(*sides), "bench.sides", "must be true or false, got " + type_name(*sides));
            bb.bench_sides = sides->as_boolean()->get();
        }
        const toml::node* sn = find(bench, "shapes");
        if (sn == nullptr)
            fail(line_of(bench), "bench.shapes",
                 "missing required field 'shapes': the names the bench command reports (\"name\" or \"mode/name\"), so "
                 "a shape that crashes cannot silently drop out");
        const auto shapes = read_string_list(*sn, "bench.shapes");
        if (shapes.empty()) fail(line_of(*sn), "bench.shapes", "must list at least one shape");
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            const auto& [text, line] = shapes[i];
            const std::string field = index("bench.shapes", i);
            blackbox_bench_shape bs;
            bs.line = line;
            const auto slash = text.find('/');
            bs.mode = slash == std::string::npos ? "bench" : text.substr(0, slash);
            bs.name = slash == std::string::npos ? text : text.substr(slash + 1);
            if (!is_plain_name(bs.mode) || !is_plain_name(bs.name))
                fail(line, field,
                     "'" + text + "' must be \"name\" or \"mode/name\", each [A-Za-z0-9_-]+");
            for (const auto& other : bb.bench_shapes)
                if (other.get_key() == bs.get_key())
                    fail(line, field, "shape '" + text + "' is listed twice (first at line " + std::to_string(other.line) + ")");
            bb.bench_shapes.push_back(bs);
            shape_spec mirror;  // the contract's shape list and the memory key's shape set
            mirror.name = bs.mode == "bench" ? bs.name : text;
            mirror.bench = true;
            mirror.line = line;
            m_spec.shapes.push_back(std::move(mirror));
        }
        if (const toml::node* r = find(bench, "rounds")) {
            if (!r->is_integer() || r->as_integer()->get() < 1 || r->as_integer()->get() > 100)
                fail(line_of(*r), "bench.rounds", "must be an integer from 1 to 100, got " +
                                                      (r->is_integer() ? std::to_string(r->as_integer()->get()) : type_name(*r)));
            bb.rounds = static_cast<int>(r->as_integer()->get());
        }
        if (const toml::node* r = find(bench, "round_time_s")) {
            const double v = read_number(*r, "bench.round_time_s");
            if (!(v > 0) || v > 86400)
                fail(line_of(*r), "bench.round_time_s",
                     "must be a positive number of seconds, at most 86400 (one bench run's time, shared out over its "
                     "shapes), got " + format_number(v));
            bb.round_time_s = v;
        }
    }

    // [bench] registry = { op = "chunk_gla", file = "benchmarks/ops/registry.py", modes = [...], python = "python3" }
    blackbox_registry_bench read_registry_bench(const toml::node& n, const blackbox_spec& bb) const {
        if (!n.is_table())
            fail(line_of(n), "bench.registry",
                 "must be a table such as { op = \"chunk_gla\" } (the op's name in benchmarks/ops/registry.py), got " +
                     type_name(n));
        const toml::table& t = *n.as_table();
        check_keys(t, "bench.registry", {"op", "file", "modes", "python"});
        blackbox_registry_bench r;
        r.line = line_of(t);
        r.op = require_string(t, "bench.registry", "op");
        if (!is_plain_name(r.op))
            fail(line_of(*find(t, "op")), "bench.registry.op", "'" + r.op + "' is not an op name ([A-Za-z0-9_-]+)");
        const toml::node* fn = find(t, "file");
        const std::string file = fn ? read_string(*fn, "bench.registry.file") : std::string("benchmarks/ops/registry.py");
        r.file = read_repo_path(file, fn ? line_of(*fn) : r.line, "bench.registry.file", bb.root, 'f');
        if (r.file == bb.target)
            fail(fn ? line_of(*fn) : r.line, "bench.registry.file",
                 "'" + file + "' is the [repo] target: the registry builds the bench's inputs, so the candidate cannot be it");
        const fs::path abs = absolute_path(bb.root / r.file);
        if (std::find(m_spec.frozen.begin(), m_spec.frozen.end(), abs) == m_spec.frozen.end())
            fail(fn ? line_of(*fn) : r.line, "bench.registry.file",
                 "'" + r.file.string() + "' builds the bench's inputs: list it in op.frozen, so no candidate can change it");
        if (const toml::node* m = find(t, "modes")) {
            const auto modes = read_string_list(*m, "bench.registry.modes");
            if (modes.empty()) fail(line_of(*m), "bench.registry.modes", "must list at least one of \"fwd\", \"fwdbwd\"");
            for (std::size_t i = 0; i < modes.size(); ++i) {
                if (modes[i].first != "fwd" && modes[i].first != "fwdbwd")
                    fail(modes[i].second, index("bench.registry.modes", i),
                         "unknown mode '" + modes[i].first + "'" + did_you_mean(modes[i].first, {"fwd", "fwdbwd"}) +
                             "; FLA's registry modes are \"fwd\" and \"fwdbwd\"");
                r.modes.push_back(modes[i].first);
            }
        }
        if (const toml::node* py = find(t, "python")) {
            r.python = read_string(*py, "bench.registry.python");
            if (r.python.empty()) fail(line_of(*py), "bench.registry.python", "must not be empty");
        }
        return r;
    }

    static std::vector<std::string> registry_argv(const blackbox_registry_bench& r) {
        std::vector<std::string> argv{r.python, "-m", "kloop_worker.fla_registry", "--op", r.op, "--registry", r.file.string()};
        if (!r.modes.empty()) {
            std::string modes;
            for (const auto& m : r.modes) modes += (modes.empty() ? "" : ",") + m;
            argv.push_back("--modes");
            argv.push_back(modes);
        }
        return argv;
    }

    // `generated`: the argv kloop made (a [bench] registry); the table then has no 'command'.
    blackbox_command read_command(const toml::table& t, const std::string& where, const fs::path& root,
                                  const std::vector<std::string>& refused, std::vector<std::string> generated = {}) const {
        blackbox_command c;
        c.line = line_of(t);
        const toml::node* cmd = find(t, "command");
        if (!generated.empty()) {
            c.argv = std::move(generated);
        } else if (cmd == nullptr) {
            fail(c.line, join(where, "command"),
                 "missing required field 'command' (an argv array such as [\"python\", \"-m\", \"pytest\", \"tests/test_op.py\", \"-q\"])");
        }
        if (c.argv.empty()) read_argv(*cmd, where, c);
        read_command_settings(t, where, root, refused, c);
        return c;
    }

    void read_argv(const toml::node& cmd_node, const std::string& where, blackbox_command& c) const {
        const toml::node* cmd = &cmd_node;
        if (cmd->is_string())
            fail(line_of(*cmd), join(where, "command"),
                 "must be an array of arguments, not a shell string: [\"python\", \"-m\", \"pytest\", ...]");
        const auto words = read_string_list(*cmd, join(where, "command"));
        if (words.empty()) fail(line_of(*cmd), join(where, "command"), "must name a program");
        for (std::size_t i = 0; i < words.size(); ++i)
            if (words[i].first.empty()) fail(words[i].second, index(join(where, "command"), i), "must not be empty");
        if (words[0].first.find('=') != std::string::npos)
            fail(words[0].second, index(join(where, "command"), 0), "the program name must not contain '='");
        for (const auto& w : words) c.argv.push_back(w.first);
    }

    void read_command_settings(const toml::table& t, const std::string& where, const fs::path& root,
                               const std::vector<std::string>& refused, blackbox_command& c) const {
        if (const toml::node* cwd = find(t, "cwd")) {
            const std::string text = read_string(*cwd, join(where, "cwd"));
            c.cwd = read_repo_path(text, line_of(*cwd), join(where, "cwd"), root, 'd');
            if (c.cwd == ".") c.cwd.clear();
        }
        if (const toml::node* env = find(t, "env")) {
            const std::string ew = join(where, "env");
            if (!env->is_table()) fail(line_of(*env), ew, "must be a table such as { OMP_NUM_THREADS = \"1\" }, got " + type_name(*env));
            for (auto [k, v] : in_file_order(*env->as_table())) {
                const std::string name(k->str());
                const std::string field = join(ew, name);
                if (!is_env_pattern(name) || name.back() == '*')
                    fail(line_of(*k), field, "'" + name + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
                if (const auto p = matching_pattern(refused, name); !p.empty())
                    fail(line_of(*k), field,
                         "'" + name + "' weakens the gate (refused pattern '" + p +
                             "'): kloop runs black-box gates only at full strength");
                if (!v->is_string())
                    fail(line_of(*v), field, "must be a string (environment values are text), got " + type_name(*v));
                c.env.emplace_back(name, v->as_string()->get());
            }
        }
        if (const toml::node* pe = find(t, "pass_env")) {
            const std::string pw = join(where, "pass_env");
            c.pass_env = read_env_patterns(*pe, pw);
            for (std::size_t i = 0; i < c.pass_env.size(); ++i)
                for (const auto& r : refused)
                    if (env_pattern_matches(r, c.pass_env[i]) || env_pattern_matches(c.pass_env[i], r))
                        fail(line_of(*pe->as_array()->get(i)), index(pw, i),
                             "'" + c.pass_env[i] + "' would pass the refused variable(s) '" + r + "' to the command");
        }
        if (const toml::node* to = find(t, "timeout")) {
            const double v = read_number(*to, join(where, "timeout"));
            // At most 1e6 s, as every time option of the command line: a longer deadline overflows.
            if (!(v > 0) || v > 1e6)
                fail(line_of(*to), join(where, "timeout"),
                     "must be a positive number of seconds, at most 1000000, got " + format_number(v));
            c.timeout_s = v;
        }
    }

    // ---- [build] ------------------------------------------------------------------------

    // ---- [python] (backend = "python"; docs/python.md) -----------------------------------

    void read_python(const toml::table& root) {
        const toml::node* n = find(root, "python");
        if (n == nullptr) return;
        if (!n->is_table()) fail(line_of(*n), "python", "must be a table, got " + type_name(*n));
        const toml::table& py = *n->as_table();
        m_spec.python.line = line_of(py);
        if (m_spec.backend != backend_kind::python)
            fail(line_of(*n), "python",
                 "[python] is only read with backend = \"python\" (this op's backend is '" + to_string(m_spec.backend) +
                     "'); remove it or set [op] backend = \"python\"");
        check_keys(py, "python", {"interpreter", "device", "allow_tf32", "aten_glue_share", "min_timeout"});
        if (auto interp = optional_string(py, "python", "interpreter")) {
            if (interp->empty()) fail(line_of(*find(py, "interpreter")), "python.interpreter", "must not be empty");
            m_spec.python.interpreter = *interp;
        }
        if (auto dev = optional_string(py, "python", "device")) {
            if (*dev != "auto" && *dev != "cpu" && *dev != "cuda")
                fail(line_of(*find(py, "device")), "python.device",
                     "unknown device '" + *dev + "'" + did_you_mean(*dev, {"auto", "cpu", "cuda"}) +
                         "; expected \"cpu\" (numpy arrays), \"cuda\" (torch tensors on the GPU) or \"auto\"");
            m_spec.python.device = *dev;
        }
        if (const toml::node* t = find(py, "allow_tf32")) {
            if (!t->is_boolean()) fail(line_of(*t), "python.allow_tf32", "must be true or false, got " + type_name(*t));
            m_spec.python.allow_tf32 = t->as_boolean()->get();
        }
        if (const toml::node* t = find(py, "aten_glue_share")) {
            const double v = read_number(*t, "python.aten_glue_share");
            if (!(v >= 0 && v <= 0.5))
                fail(line_of(*t), "python.aten_glue_share",
                     "must lie in [0, 0.5] (a share of the kernel time of a mode's heaviest call), got " + format_number(v));
            m_spec.python.aten_glue_share = v;
        }
        if (const toml::node* t = find(py, "min_timeout")) {
            const double v = read_number(*t, "python.min_timeout");
            if (!(v > 0) || v > 1e6)  // as every time option of the command line
                fail(line_of(*t), "python.min_timeout",
                     "must be a positive number of seconds, at most 1000000, got " + format_number(v));
            m_spec.python.min_timeout_s = v;
        }
    }

    // ---- [candidate] ----------------------------------------------------------------------

    // files = ["tiles.cuh", "config/"]: relative to the candidate's directory (wherever that
    // is), so only their form is checked here; backend/local_sources finds them.
    void read_candidate(const toml::table& root) {
        const toml::node* n = find(root, "candidate");
        if (n == nullptr) return;
        if (!n->is_table()) fail(line_of(*n), "candidate", "must be a table, got " + type_name(*n));
        const toml::table& cand = *n->as_table();
        m_spec.candidate.line = line_of(cand);
        check_keys(cand, "candidate", {"files"});
        const toml::node* f = find(cand, "files");
        if (f == nullptr) return;
        const auto files = read_string_list(*f, "candidate.files");
        for (std::size_t i = 0; i < files.size(); ++i) {
            const auto& [text, line] = files[i];
            const std::string field = index("candidate.files", i);
            if (text.empty()) fail(line, field, "must not be empty");
            const fs::path rel = fs::path(text).lexically_normal();
            if (rel.is_absolute() || rel.empty() || *rel.begin() == ".." || rel == ".")
                fail(line, field,
                     "'" + text + "' must be a file or directory inside the candidate's directory, relative to it "
                     "(no absolute path, no '..', not the directory itself)");
            m_spec.candidate.files.push_back(rel.generic_string());
        }
    }

    void read_build(const toml::table& root) {
        const toml::node* n = find(root, "build");
        if (n == nullptr) return;
        if (!n->is_table()) fail(line_of(*n), "build", "must be a table, got " + type_name(*n));
        const toml::table& build = *n->as_table();
        check_keys(build, "build", {"flags", "include_dirs", "arch_suffix"});
        if (auto suffix = optional_string(build, "build", "arch_suffix")) {
            if (*suffix != "" && *suffix != "a" && *suffix != "f")
                fail(line_of(*find(build, "arch_suffix")), "build.arch_suffix",
                     "must be \"\", \"a\" (sm_90a: wgmma, setmaxnreg) or \"f\", got '" + *suffix + "'");
            m_spec.build.arch_suffix = *suffix;
        }
        if (const toml::node* f = find(build, "flags"))
            for (auto& [flag, line] : read_string_list(*f, "build.flags")) {
                (void)line;
                m_spec.build.flags.push_back(flag);
            }
        if (const toml::node* d = find(build, "include_dirs")) {
            const toml::array& arr = read_array(*d, "build.include_dirs");
            for (std::size_t i = 0; i < arr.size(); ++i)
                m_spec.build.include_dirs.push_back(read_include_dir(*arr.get(i), index("build.include_dirs", i)));
        }
    }

    // "include" (relative to the op directory, must exist) or { python_package = "NAME", path =
    // "sub/dir" }: NAME a top-level package (found without importing it, so no dots), path
    // relative inside it; both are checked when a build needs them, by the op's interpreter.
    spec::include_dir read_include_dir(const toml::node& n, const std::string& field) const {
        spec::include_dir d;
        d.line = line_of(n);
        d.field = field;
        if (n.is_string()) {
            d.path = read_relative_path(n.as_string()->get(), d.line, field, true).string();
            return d;
        }
        if (!n.is_table())
            fail(d.line, field,
                 "must be a directory (a string relative to the op directory) or a table such as "
                 "{ python_package = \"cutlass_library\", path = \"source/include\" }, got " + type_name(n));
        const toml::table& t = *n.as_table();
        check_keys(t, field, {"python_package", "path"});
        const auto package = optional_string(t, field, "python_package");
        if (!package) fail(d.line, field + ".python_package", "missing required field 'python_package'");
        if (!is_c_identifier(*package))
            fail(d.line, field + ".python_package",
                 "'" + *package + "' is not a top-level package name ([A-Za-z_][A-Za-z0-9_]*; a dotted name "
                 "would import its parent to be found)");
        d.python_package = *package;
        const std::string rel = optional_string(t, field, "path").value_or("");
        const fs::path p = fs::path(rel).lexically_normal();
        if (fs::path(rel).is_absolute() || (!p.empty() && *p.begin() == ".."))
            fail(d.line, field + ".path", "'" + rel + "' must be a path inside the package's directory");
        std::string inside = p.generic_string();
        while (!inside.empty() && inside.back() == '/') inside.pop_back();
        d.path = inside == "." ? std::string() : inside;
        return d;
    }

    // ---- [dims] -------------------------------------------------------------------------

    void read_dims(const toml::table& root) {
        const toml::table& dims = require_table(root, 0, "", "dims", "table [dims]");
        check_keys(dims, "dims", {"names", "domain"});
        const toml::node* n = find(dims, "names");
        if (n == nullptr) fail(line_of(dims), "dims.names", "missing required field 'names'");
        const auto names = read_string_list(*n, "dims.names");
        if (names.empty()) fail(line_of(*n), "dims.names", "must declare at least one dim");
        for (std::size_t i = 0; i < names.size(); ++i) {
            const auto& [name, line] = names[i];
            if (!is_c_identifier(name))
                fail(line, index("dims.names", i),
                     "'" + name + "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
            if (std::find(m_spec.dims.begin(), m_spec.dims.end(), name) != m_spec.dims.end())
                fail(line, index("dims.names", i), "dim '" + name + "' is declared twice");
            m_spec.dims.push_back(name);
        }
        if (const toml::node* d = find(dims, "domain")) read_dim_domain(*d);
    }

    // [dims] domain = { N = { min = 1, max = 70000 }, D = { values = [777, 1024] } }: every
    // declared dim, each a set (`values`) or a range (`min`, `max`, optional `multiple_of`).
    void read_dim_domain(const toml::node& n) {
        const std::string where = "dims.domain";
        if (!n.is_table())
            fail(line_of(n), where, "must be a table such as { N = { min = 1, max = 4096 } }, got " + type_name(n));
        const toml::table& t = *n.as_table();
        m_spec.domain_line = line_of(n);
        for (auto [k, v] : in_file_order(t)) {
            const std::string name(k->str());
            const std::string field = join(where, name);
            if (std::find(m_spec.dims.begin(), m_spec.dims.end(), name) == m_spec.dims.end())
                fail(line_of(*k), field, "undeclared dim '" + name + "'" + did_you_mean(name, m_spec.dims) +
                                             "; declared dims: " + list(m_spec.dims));
            if (!v->is_table())
                fail(line_of(*v), field, "must be a table such as { min = 1, max = 4096 } or { values = [64, 128] }, got " +
                                             type_name(*v));
            m_spec.dim_domains[name] = read_one_dim_domain(*v->as_table(), field);
        }
        for (const std::string& d : m_spec.dims)
            if (m_spec.dim_domains.find(d) == m_spec.dim_domains.end())
                fail(line_of(n), join(where, d),
                     "the domain does not give dim '" + d + "' (a domain covers every declared dim; use { values = [...] } "
                     "to keep a dim to fixed values)");
    }

    std::int64_t read_positive_integer(const toml::node& n, const std::string& field) const {
        if (!n.is_integer()) fail(line_of(n), field, "must be a positive integer, got " + type_name(n));
        const std::int64_t v = n.as_integer()->get();
        if (v <= 0) fail(line_of(n), field, "must be a positive integer, got " + std::to_string(v));
        return v;
    }

    dim_domain read_one_dim_domain(const toml::table& t, const std::string& where) const {
        check_keys(t, where, {"min", "max", "multiple_of", "values"});
        dim_domain d;
        d.line = line_of(t);
        if (const toml::node* vals = find(t, "values")) {
            for (const char* key : {"min", "max", "multiple_of"})
                if (const toml::node* x = find(t, key))
                    fail(line_of(*x), join(where, key), "give either 'values' or a range (min, max, multiple_of), not both");
            const toml::array& arr = read_array(*vals, join(where, "values"));
            if (arr.empty()) fail(line_of(*vals), join(where, "values"), "must list at least one value");
            for (std::size_t i = 0; i < arr.size(); ++i) {
                const std::int64_t v = read_positive_integer(*arr.get(i), index(join(where, "values"), i));
                if (std::find(d.values.begin(), d.values.end(), v) != d.values.end())
                    fail(line_of(*arr.get(i)), index(join(where, "values"), i), std::to_string(v) + " is listed twice");
                d.values.push_back(v);
            }
            return d;
        }
        const toml::node* lo = find(t, "min");
        const toml::node* hi = find(t, "max");
        if (lo == nullptr) fail(d.line, join(where, "min"), "missing required field 'min' (or give 'values')");
        if (hi == nullptr) fail(d.line, join(where, "max"), "missing required field 'max' (or give 'values')");
        d.min = read_positive_integer(*lo, join(where, "min"));
        d.max = read_positive_integer(*hi, join(where, "max"));
        if (d.max < d.min)
            fail(line_of(*hi), join(where, "max"),
                 "max " + std::to_string(d.max) + " is smaller than min " + std::to_string(d.min));
        if (const toml::node* m = find(t, "multiple_of")) {
            d.multiple_of = read_positive_integer(*m, join(where, "multiple_of"));
            if ((d.min + d.multiple_of - 1) / d.multiple_of > d.max / d.multiple_of)
                fail(line_of(*m), join(where, "multiple_of"),
                     "no multiple of " + std::to_string(d.multiple_of) + " lies in [" + std::to_string(d.min) + ", " +
                         std::to_string(d.max) + "]");
        }
        return d;
    }

    // ---- [[shapes]] ---------------------------------------------------------------------

    void read_shapes(const toml::table& root) {
        const toml::node* n = find(root, "shapes");
        if (n == nullptr) fail(0, "shapes", "missing required [[shapes]]: list at least one shape");
        m_shapes_line = line_of(*n);
        const toml::array& arr = read_table_array(*n, "shapes", "write each shape as [[shapes]]");
        if (arr.empty()) fail(line_of(*n), "shapes", "must list at least one shape");
        for (std::size_t i = 0; i < arr.size(); ++i)
            m_spec.shapes.push_back(read_shape(*arr.get(i)->as_table(), index("shapes", i)));
        if (std::none_of(m_spec.shapes.begin(), m_spec.shapes.end(),
                         [](const shape_spec& s) { return s.gate; }))
            fail(m_shapes_line, "shapes",
                 "no shape is marked for the gate; add \"gate\" to the `use` of at least one shape");
    }

    shape_spec read_shape(const toml::table& t, const std::string& where) {
        check_keys(t, where, {"name", "dims", "use"});
        shape_spec s;
        s.line = line_of(t);
        s.name = require_string(t, where, "name");
        if (!is_plain_name(s.name))
            fail(line_of(*find(t, "name")), join(where, "name"),
                 "'" + s.name + "' may only contain letters, digits, '_' and '-'");
        if (s.name.rfind(held_out_prefix, 0) == 0)
            fail(line_of(*find(t, "name")), join(where, "name"),
                 "shape names starting with '" + std::string(held_out_prefix) +
                     "' are reserved for the held-out shapes the gate draws");
        if (const shape_spec* first = m_spec.find_shape(s.name))
            fail(line_of(*find(t, "name")), join(where, "name"),
                 "duplicate shape name '" + s.name + "' (first defined at line " +
                     std::to_string(first->line) + ")");

        const toml::table& dims = require_table(t, s.line, where, "dims", "field 'dims'");
        const std::string dims_where = join(where, "dims");
        for (auto [k, v] : in_file_order(dims)) {
            const std::string name(k->str());
            const std::string field = join(dims_where, name);
            if (std::find(m_spec.dims.begin(), m_spec.dims.end(), name) == m_spec.dims.end())
                fail(line_of(*k), field,
                     "undeclared dim '" + name + "'" + did_you_mean(name, m_spec.dims) +
                         "; declared dims: " + list(m_spec.dims));
            if (!v->is_integer())
                fail(line_of(*v), field, "must be a positive integer, got " + type_name(*v));
            const std::int64_t value = v->as_integer()->get();
            if (value <= 0)
                fail(line_of(*v), field, "must be a positive integer, got " + std::to_string(value));
            s.dims[name] = value;
        }
        for (const std::string& d : m_spec.dims)
            if (s.dims.find(d) == s.dims.end())
                fail(line_of(dims), join(dims_where, d),
                     "shape '" + s.name + "' does not give dim '" + d + "' (every declared dim is required)");

        const toml::node* use = find(t, "use");
        if (use == nullptr)
            fail(s.line, join(where, "use"),
                 "missing required field 'use' (\"gate\", \"bench\" or both)");
        const auto uses = read_string_list(*use, join(where, "use"));
        if (uses.empty())
            fail(line_of(*use), join(where, "use"), "must not be empty: use \"gate\", \"bench\" or both");
        for (std::size_t i = 0; i < uses.size(); ++i) {
            const auto& [word, line] = uses[i];
            const std::string field = index(join(where, "use"), i);
            bool& flag = word == "gate" ? s.gate : s.bench;
            if (word != "gate" && word != "bench")
                fail(line, field, "unknown use '" + word + "'" + did_you_mean(word, {"gate", "bench"}) +
                                      "; expected \"gate\" or \"bench\"");
            if (flag) fail(line, field, "'" + word + "' is listed twice");
            flag = true;
        }
        return s;
    }

    // ---- [modes.<name>] -----------------------------------------------------------------

    void read_modes(const toml::table& root) {
        const toml::table& modes = require_table(root, 0, "", "modes", "[modes.<name>] table (for example [modes.fwd])");
        if (modes.empty()) fail(line_of(modes), "modes", "must define at least one mode");
        for (auto [k, v] : in_file_order(modes)) {
            const std::string name(k->str());
            const std::string where = join("modes", name);
            if (!is_plain_name(name))
                fail(line_of(*k), where, "mode name '" + name + "' may only contain letters, digits, '_' and '-'");
            if (!v->is_table())
                fail(line_of(*v), where, "must be a table ([" + where + "]), got " + type_name(*v));
            m_spec.modes.push_back(read_mode(*v->as_table(), name, where));
        }
    }

    mode_spec read_mode(const toml::table& t, const std::string& name, const std::string& where) {
        check_keys(t, where, {"entry", "reference_entry", "params", "param_domain", "flops", "bytes", "inputs", "outputs"});
        mode_spec m;
        m.name = name;
        m.line = line_of(t);

        m.entry = require_string(t, where, "entry");
        if (!is_c_identifier(m.entry))
            fail(line_of(*find(t, "entry")), join(where, "entry"),
                 "'" + m.entry + "' is not a C identifier");
        m.reference_entry = optional_string(t, where, "reference_entry").value_or(m.entry);
        if (!is_c_identifier(m.reference_entry))
            fail(line_of(*find(t, "reference_entry")), join(where, "reference_entry"),
                 "'" + m.reference_entry + "' is not a C identifier");

        if (const toml::node* p = find(t, "params")) {
            const std::string pw = join(where, "params");
            if (!p->is_table())
                fail(line_of(*p), pw, "must be a table such as { eps = 1e-6 }, got " + type_name(*p));
            for (auto [k, v] : in_file_order(*p->as_table())) {
                param_spec ps;
                ps.name = std::string(k->str());
                const std::string field = join(pw, ps.name);
                if (!is_c_identifier(ps.name))
                    fail(line_of(*k), field, "'" + ps.name + "' is not a C identifier");
                ps.is_integer = v->is_integer();
                ps.value = read_number(*v, field);
                if (ps.is_integer && std::fabs(ps.value) > max_exact_integer)
                    fail(line_of(*v), field, "integer parameters must satisfy |v| <= 2^53");
                m.params.push_back(ps);
            }
        }
        if (const toml::node* pd = find(t, "param_domain")) read_param_domains(*pd, join(where, "param_domain"), m);
        if (const toml::node* f = find(t, "flops")) m.flops = read_dim_expr(*f, join(where, "flops"));
        if (const toml::node* b = find(t, "bytes")) m.bytes = read_dim_expr(*b, join(where, "bytes"));

        std::map<std::string, int, std::less<>> seen;  // tensor name -> line
        if (const toml::node* in = find(t, "inputs")) {
            const std::string iw = join(where, "inputs");
            const toml::array& arr = read_table_array(*in, iw, "{ name = ..., dtype = ..., shape = [...] }");
            for (std::size_t i = 0; i < arr.size(); ++i)
                m.inputs.push_back(read_tensor(*arr.get(i)->as_table(), index(iw, i), true, name, seen));
        }
        const toml::node* out = find(t, "outputs");
        const std::string ow = join(where, "outputs");
        if (out == nullptr) fail(m.line, ow, "missing required field 'outputs' (at least one output)");
        const toml::array& arr = read_table_array(*out, ow, "{ name = ..., dtype = ..., shape = [...], atol = ... }");
        if (arr.empty()) fail(line_of(*out), ow, "must list at least one output");
        for (std::size_t i = 0; i < arr.size(); ++i)
            m.outputs.push_back(read_tensor(*arr.get(i)->as_table(), index(ow, i), false, name, seen));
        return m;
    }

    // param_domain = { eps = { min = 1e-7, max = 1e-3, log = true }, k = { values = [1, 3, 5] } }:
    // each key a param of the mode; integer params take integer bounds and values.
    void read_param_domains(const toml::node& n, const std::string& where, mode_spec& m) const {
        if (!n.is_table())
            fail(line_of(n), where, "must be a table such as { eps = { min = 1e-7, max = 1e-3, log = true } }, got " +
                                        type_name(n));
        std::vector<std::string> names;
        for (const param_spec& p : m.params) names.push_back(p.name);
        for (auto [k, v] : in_file_order(*n.as_table())) {
            const std::string name(k->str());
            const std::string field = join(where, name);
            auto it = std::find_if(m.params.begin(), m.params.end(), [&](const param_spec& p) { return p.name == name; });
            if (it == m.params.end())
                fail(line_of(*k), field,
                     "'" + name + "' is not a param of this mode" + did_you_mean(name, names) +
                         (names.empty() ? std::string("; the mode has no params") : "; params: " + list(names)));
            if (!v->is_table())
                fail(line_of(*v), field, "must be a table such as { min = 1e-7, max = 1e-3 } or { values = [...] }, got " +
                                             type_name(*v));
            it->domain = read_one_param_domain(*v->as_table(), field, *it);
        }
    }

    double read_param_bound(const toml::node& n, const std::string& field, bool is_integer) const {
        if (is_integer) {
            if (!n.is_integer())
                fail(line_of(n), field, "must be an integer (the param is an integer), got " + type_name(n));
            const double v = static_cast<double>(n.as_integer()->get());
            if (std::fabs(v) > max_exact_integer) fail(line_of(n), field, "integer values must satisfy |v| <= 2^53");
            return v;
        }
        return read_number(n, field);
    }

    param_domain read_one_param_domain(const toml::table& t, const std::string& where, const param_spec& p) const {
        check_keys(t, where, {"min", "max", "log", "multiple_of", "values"});
        param_domain d;
        d.line = line_of(t);
        if (const toml::node* vals = find(t, "values")) {
            for (const char* key : {"min", "max", "log", "multiple_of"})
                if (const toml::node* x = find(t, key))
                    fail(line_of(*x), join(where, key), "give either 'values' or a range (min, max, log, multiple_of), not both");
            const toml::array& arr = read_array(*vals, join(where, "values"));
            if (arr.empty()) fail(line_of(*vals), join(where, "values"), "must list at least one value");
            for (std::size_t i = 0; i < arr.size(); ++i) {
                const double v = read_param_bound(*arr.get(i), index(join(where, "values"), i), p.is_integer);
                if (std::find(d.values.begin(), d.values.end(), v) != d.values.end())
                    fail(line_of(*arr.get(i)), index(join(where, "values"), i), format_number(v) + " is listed twice");
                d.values.push_back(v);
            }
        } else {
            const toml::node* lo = find(t, "min");
            const toml::node* hi = find(t, "max");
            if (lo == nullptr) fail(d.line, join(where, "min"), "missing required field 'min' (or give 'values')");
            if (hi == nullptr) fail(d.line, join(where, "max"), "missing required field 'max' (or give 'values')");
            d.min = read_param_bound(*lo, join(where, "min"), p.is_integer);
            d.max = read_param_bound(*hi, join(where, "max"), p.is_integer);
            if (!(d.max > d.min))
                fail(line_of(*hi), join(where, "max"),
                     "max " + format_number(d.max) + " must be greater than min " + format_number(d.min));
            if (const toml::node* l = find(t, "log")) {
                if (!l->is_boolean()) fail(line_of(*l), join(where, "log"), "must be true or false, got " + type_name(*l));
                d.log = l->as_boolean()->get();
                if (d.log && !(d.min > 0.0))
                    fail(line_of(*l), join(where, "log"), "a log-scaled range needs min > 0, got " + format_number(d.min));
            }
            if (const toml::node* mo = find(t, "multiple_of")) {
                if (!p.is_integer)
                    fail(line_of(*mo), join(where, "multiple_of"),
                         "multiple_of is for integer params; '" + p.name + "' is a float (written with a '.' or an exponent)");
                if (!mo->is_integer() || mo->as_integer()->get() <= 0)
                    fail(line_of(*mo), join(where, "multiple_of"), "must be a positive integer");
                d.multiple_of = mo->as_integer()->get();
                const auto m = static_cast<double>(d.multiple_of);
                if (std::ceil(d.min / m) > std::floor(d.max / m))
                    fail(line_of(*mo), join(where, "multiple_of"),
                         "no multiple of " + std::to_string(d.multiple_of) + " lies in [" + format_number(d.min) + ", " +
                             format_number(d.max) + "]");
            }
        }
        if (!d.contains(p.value, p.is_integer))
            fail(d.line, where,
                 "the param's own value " + format_number(p.value) + " lies outside its domain " + d.describe());
        return d;
    }

    tensor_spec read_tensor(const toml::table& t, const std::string& where, bool is_input,
                            const std::string& mode, std::map<std::string, int, std::less<>>& seen) {
        if (is_input)
            check_keys(t, where, {"name", "dtype", "shape", "init", "inout"});
        else
            check_keys(t, where, {"name", "dtype", "shape", "atol", "rtol", "rel_rms"});
        tensor_spec ts;
        ts.line = line_of(t);

        ts.name = require_string(t, where, "name");
        const int name_line = line_of(*find(t, "name"));
        if (!is_c_identifier(ts.name))
            fail(name_line, join(where, "name"), "'" + ts.name + "' is not a C identifier");
        if (auto it = seen.find(ts.name); it != seen.end())
            fail(name_line, join(where, "name"),
                 "duplicate tensor name '" + ts.name + "' in mode '" + mode + "' (first at line " +
                     std::to_string(it->second) + "; names are unique across inputs and outputs)");
        seen.emplace(ts.name, ts.line);

        const std::string dt = require_string(t, where, "dtype");
        auto type = dtype_from_string(dt);
        if (!type)
            fail(line_of(*find(t, "dtype")), join(where, "dtype"),
                 "unknown dtype '" + dt + "'" +
                     did_you_mean(dt, {"f32", "f16", "bf16", "f64", "i32", "i64"}) +
                     "; expected one of: f32, f16, bf16, f64, i32, i64");
        ts.type = *type;

        const toml::node* shape = find(t, "shape");
        if (shape == nullptr)
            fail(ts.line, join(where, "shape"), "missing required field 'shape' (use [] for a scalar)");
        const toml::array& dims = read_array(*shape, join(where, "shape"));
        for (std::size_t i = 0; i < dims.size(); ++i)
            ts.shape.push_back(read_dim_expr(*dims.get(i), index(join(where, "shape"), i)));

        if (is_input) {
            read_init(t, where, ts);
            if (const toml::node* io = find(t, "inout")) {
                if (!io->is_boolean())
                    fail(line_of(*io), join(where, "inout"), "must be true or false, got " + type_name(*io));
                ts.inout = io->as_boolean()->get();
            }
        } else {
            read_tolerance(t, where, ts);
        }
        return ts;
    }

    // `init` is one init string, or an array of them: the first is the bench's distribution,
    // the others are adversarial distributions the gate runs as further cases.
    void read_init(const toml::table& t, const std::string& where, tensor_spec& ts) const {
        const std::string field = join(where, "init");
        const toml::node* n = find(t, "init");
        if (n == nullptr) {
            ts.init = initializer::parse("normal(0, 1)");
            return;
        }
        if (n->is_array()) {
            const toml::array& arr = *n->as_array();
            if (arr.empty()) fail(line_of(*n), field, "must list at least one init form");
            for (std::size_t i = 0; i < arr.size(); ++i) {
                const std::string f = index(field, i);
                const toml::node& e = *arr.get(i);
                initializer init = parse_init(read_string(e, f), line_of(e), f, ts);
                if (i == 0) {
                    ts.init = std::move(init);
                    continue;
                }
                const auto same = [&](const initializer& o) { return o.text == init.text; };
                if (same(ts.init) || std::any_of(ts.adversarial.begin(), ts.adversarial.end(), same))
                    fail(line_of(e), f, "'" + init.text + "' is listed twice");
                ts.adversarial.push_back(std::move(init));
            }
            return;
        }
        if (!n->is_string())
            fail(line_of(*n), field, "must be an init string such as \"normal(0, 1)\" or an array of them, got " +
                                         type_name(*n));
        ts.init = parse_init(n->as_string()->get(), line_of(*n), field, ts);
    }

    initializer parse_init(const std::string& text, int line, const std::string& field, const tensor_spec& ts) const {
        initializer init;
        try {
            init = initializer::parse(text);
        } catch (const std::invalid_argument& e) {
            fail(line, field, e.what());
        }
        if (init.kind == init_kind::cu_seqlens) {
            if (is_floating(ts.type))
                fail(line, field, "cu_seqlens needs an integer dtype (i32 or i64), got " +
                                      std::string(to_string(ts.type)));
            if (ts.shape.size() != 1)
                fail(line, field, "cu_seqlens needs a 1-d shape (n+1 offsets), got " +
                                      std::to_string(ts.shape.size()) + " dims");
        }
        if (init.kind == init_kind::int_edges && is_floating(ts.type))
            fail(line, field, "int_edges is for integer dtypes (i32 or i64), got " + std::string(to_string(ts.type)) +
                                  "; for floats use const, uniform or normal with the magnitudes wanted");
        if (init.kind == init_kind::cu_seqlens || init.kind == init_kind::spike) check_declared(init.total, line, field);
        return init;
    }

    void read_tolerance(const toml::table& t, const std::string& where, tensor_spec& ts) const {
        auto read = [&](std::string_view key) -> std::optional<double> {
            const toml::node* n = find(t, key);
            if (n == nullptr) return std::nullopt;
            const std::string field = join(where, key);
            const double v = read_number(*n, field);
            if (v < 0.0) fail(line_of(*n), field, "must be >= 0, got " + format_number(v));
            return v;
        };
        ts.tol.atol = read("atol");
        ts.tol.rtol = read("rtol");
        ts.tol.rel_rms = read("rel_rms");
        if (!ts.tol.atol && !ts.tol.rtol && !ts.tol.rel_rms)
            fail(ts.line, where,
                 "output '" + ts.name + "' has no tolerance; give at least one of atol, rtol, rel_rms");
    }

    // ---- cross-section rules ------------------------------------------------------------

    // Every tensor of every mode must have positive sizes (and a representable byte count) in
    // every shape; cost formulas must evaluate to a non-negative int64.
    void check_sizes() const {
        for (const shape_spec& s : m_spec.shapes) {
            const std::string in_shape = "in shape '" + s.name + "' (line " + std::to_string(s.line) + ")";
            for (const mode_spec& m : m_spec.modes) {
                const std::string mw = join("modes", m.name);
                for (std::size_t i = 0; i < m.inputs.size(); ++i)
                    check_tensor(s, m.inputs[i], index(join(mw, "inputs"), i), in_shape);
                for (std::size_t i = 0; i < m.outputs.size(); ++i)
                    check_tensor(s, m.outputs[i], index(join(mw, "outputs"), i), in_shape);
                check_cost(s, m.flops, m.line, join(mw, "flops"), in_shape);
                check_cost(s, m.bytes, m.line, join(mw, "bytes"), in_shape);
            }
        }
    }

    std::int64_t eval_in(const shape_spec& s, const dim_expr& e, int line, const std::string& field,
                         const std::string& in_shape) const {
        try {
            return e.eval(s.dims);
        } catch (const std::exception& ex) {  // overflow_error, invalid_argument (division by 0)
            fail(line, field, in_shape + ": " + ex.what());
        }
    }

    void check_tensor(const shape_spec& s, const tensor_spec& ts, const std::string& where,
                      const std::string& in_shape) const {
        std::int64_t bytes = static_cast<std::int64_t>(size_bytes(ts.type));
        for (std::size_t d = 0; d < ts.shape.size(); ++d) {
            const std::string field = index(join(where, "shape"), d);
            const std::int64_t v = eval_in(s, ts.shape[d], ts.line, field, in_shape);
            if (v <= 0)
                fail(ts.line, field,
                     "tensor '" + ts.name + "' " + in_shape + ": dimension " + std::to_string(d) +
                         " '" + ts.shape[d].get_text() + "' evaluates to " + std::to_string(v) +
                         "; sizes must be positive");
            if (__builtin_mul_overflow(bytes, v, &bytes))
                fail(ts.line, join(where, "shape"),
                     "tensor '" + ts.name + "' " + in_shape + ": its size in bytes overflows int64");
        }
        std::vector<const initializer*> inits{&ts.init};
        for (const initializer& a : ts.adversarial) inits.push_back(&a);
        for (const initializer* init : inits) {
            const std::string field = join(where, "init");
            if (init->kind == init_kind::spike) {
                const std::int64_t row = eval_in(s, init->total, ts.line, field, in_shape);
                if (row < 1)
                    fail(ts.line, field,
                         "tensor '" + ts.name + "' " + in_shape + ": the spike row length '" + init->total.get_text() +
                             "' evaluates to " + std::to_string(row) + "; it must be >= 1");
            }
            if (init->kind != init_kind::cu_seqlens || ts.shape.size() != 1) continue;
            const std::int64_t len = ts.shape[0].eval(s.dims);
            const std::int64_t total = eval_in(s, init->total, ts.line, field, in_shape);
            if (len < 2)
                fail(ts.line, field,
                     "tensor '" + ts.name + "' " + in_shape +
                         ": cu_seqlens needs at least 2 offsets (one sequence), the shape gives " +
                         std::to_string(len));
            if (total < len - 1)
                fail(ts.line, field,
                     "tensor '" + ts.name + "' " + in_shape + ": total " + std::to_string(total) +
                         " is smaller than the number of sequences " + std::to_string(len - 1) +
                         " (every sequence needs at least one element)");
        }
    }

    // Listed shapes lie inside the declared dim domain; the domain leaves held-out shapes to
    // draw (the draw is tried once here with a fixed seed, so an impossible domain is a spec
    // error at load time rather than at check time).
    void check_domains() const {
        if (!m_spec.dim_domains.empty()) {
            for (const shape_spec& sh : m_spec.shapes)
                for (const auto& [dim, domain] : m_spec.dim_domains) {
                    const std::int64_t v = sh.dims.at(dim);
                    if (!domain.contains(v))
                        fail(domain.line, join("dims.domain", dim),
                             "shape '" + sh.name + "' (line " + std::to_string(sh.line) + ") has " + dim + " = " +
                                 std::to_string(v) + ", outside the domain " + domain.describe() +
                                 " (the domain must contain every listed shape)");
                }
        }
        if (m_spec.has_domain()) (void)draw_held_out(m_spec, 0, 2);
    }

    void check_cost(const shape_spec& s, const std::optional<dim_expr>& e, int line,
                    const std::string& field, const std::string& in_shape) const {
        if (!e) return;
        const std::int64_t v = eval_in(s, *e, line, field, in_shape);
        if (v < 0)
            fail(line, field, in_shape + ": '" + e->get_text() + "' evaluates to " +
                                  std::to_string(v) + "; costs must be >= 0");
    }
};

}  // namespace

namespace {

// The line of the first character toml++ 3.3 (Debian 12) must not see, or 0: outside strings and
// comments, anything but ASCII letters, digits, `_+-.:`, blanks and TOML's structural characters;
// a quote, `[` or `{` where TOML cannot open one (a string: after `=`, `[`, `,` or a line break
// in a value, after a line's start, `[`, `{`, `,` or `.` in a key; an array or inline table only
// in a value, after `=`, `[`, `,` or a line break; a table header at a line's start); `=` where no
// key precedes it, `,` outside brackets, `]` or `}` closing nothing; a backslash before a
// non-ASCII character in a basic string (no escape is one), also with blanks and line breaks
// between them (a line-ending backslash); or an
// unterminated one-line string holding a non-ASCII byte. TOML allows non-ASCII text only in
// strings and comments, and toml++ reaches __builtin_unreachable on many non-ASCII characters
// where it looks for whitespace (`x = ö`), also when it reads a misplaced string as part of a
// bare value (`x = 0:i.'ö'`, `d = { N = -0Lpp['ﻻ'] }`): such text is refused before toml++ sees
// it (found by fuzz/spec_loader_fuzz).
int line_of_non_ascii_outside_strings(std::string_view t) {
    int line = 1;
    char last = '\n';    // the last character outside strings and comments that is not a blank
    bool in_key = true;  // a key may start here: a line's start, `{`, `,` in an inline table, a [header]
    std::string open;    // the brackets open on the value side: '[' arrays, '{' inline tables
    int header_depth = 0;  // the '[' of a table header ('[[' of an array of tables: 2) not yet closed
    for (std::size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        if (c == '\n') {
            ++line;
            last = c;
            if (open.empty()) in_key = true;
        } else if (c == ' ' || c == '\t' || c == '\r') {
        } else if (c == '#') {  // a comment, to the end of the line
            while (i + 1 < t.size() && t[i + 1] != '\n') ++i;
        } else if (c == '"' || c == '\'') {
            const std::string_view after = in_key ? "\n[{,." : "=[,\n";
            if (after.find(last) == std::string_view::npos) return line;
            last = c;
            const bool multi = t.substr(i, 3) == std::string(3, c);
            const std::string close = multi ? std::string(3, c) : std::string(1, c);
            const int start_line = line;
            bool high = false;
            i += close.size();
            for (; i < t.size(); ++i) {
                if (t[i] == '\n') {
                    ++line;
                    if (!multi) {
                        if (high) return start_line;  // unterminated, with a byte toml++ might trip on
                        --i;                          // toml++ reports the unterminated string
                        --line;
                        break;
                    }
                } else if (c == '"' && t[i] == '\\') {
                    // An escaped character: \" does not end the string. No escape is non-ASCII,
                    // and toml++ asks whether one is whitespace (a line-ending backslash); after
                    // a line-ending backslash it skips blanks and line breaks and asks the same
                    // of the first character that is neither.
                    if (i + 1 < t.size() && static_cast<unsigned char>(t[i + 1]) >= 0x80) return line;
                    std::size_t j = i + 1;
                    while (j < t.size() && std::string_view(" \t\r\n").find(t[j]) != std::string_view::npos) ++j;
                    if (j > i + 1 && j < t.size() && static_cast<unsigned char>(t[j]) >= 0x80) return line;
                    ++i;
                    if (i < t.size() && t[i] == '\n') ++line;
                } else if (t.compare(i, close.size(), close) == 0) {
                    i += close.size() - 1;
                    break;
                } else if (static_cast<unsigned char>(t[i]) >= 0x80) {
                    high = true;
                }
            }
            if (i >= t.size() && high) return start_line;  // unterminated at the end of the text
        } else if (static_cast<unsigned char>(c) >= 0x80 ||
                   !(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_+-.:=[]{},").find(c) != std::string_view::npos)) {
            return line;
        } else {
            const bool value_start = !in_key && std::string_view("=[,\n").find(last) != std::string_view::npos;
            if (c == '=') {
                if (!in_key) return line;  // `x = 4 = "…"`: toml++ reads on into the string
                in_key = false;
            } else if (c == '[') {
                const bool header = in_key && open.empty() && (last == '\n' || last == '[');
                if (!header && !value_start) return line;
                if (header) ++header_depth;  // a table header is not a value
                else open.push_back('[');
            } else if (c == '{') {
                if (!value_start) return line;
                open.push_back('{');
                in_key = true;
            } else if (c == ']' || c == '}') {
                if (!open.empty() && open.back() == (c == ']' ? '[' : '{')) open.pop_back();
                else if (c == ']' && open.empty() && header_depth > 0) --header_depth;
                else return line;  // closes nothing that is open
            } else if (c == ',') {
                if (open.empty()) return line;  // a comma outside an array or inline table
                in_key = open.back() == '{';
            }
            last = c;
        }
    }
    return 0;
}

}  // namespace

op_spec parse_op_spec(const std::string& text, const fs::path& file, const fs::path& op_dir) {
    const std::string file_name = file.string();
    if (const int line = line_of_non_ascii_outside_strings(text); line > 0)
        throw spec_error(file_name, line, "<syntax>",
                         "a non-ASCII character outside a string or a comment, a quote where no string can start, or an "
                         "unterminated string holding a non-ASCII character (keys and bare values are ASCII in TOML)");
    toml::table root;
    try {
        root = toml::parse(std::string_view(text), std::string_view(file_name));
    } catch (const toml::parse_error& e) {
        throw spec_error(file_name, static_cast<int>(e.source().begin.line), "<syntax>",
                         std::string(e.description()));
    }
    return loader(file_name, absolute_path(op_dir), absolute_path(file)).load(root);
}

namespace {
constexpr std::uintmax_t max_spec_bytes = 4u << 20;
}  // namespace

op_spec load_op_spec(const fs::path& path) {
    std::error_code ec;
    fs::path file = fs::is_directory(path, ec) ? path / "op.toml" : path;
    file = absolute_path(file);
    const std::string name = file.string();

    const auto too_large = [&] {
        return spec_error(name, 0, "op.toml",
                          "'" + name + "' is larger than " + std::to_string(max_spec_bytes >> 20) + " MiB: not an op spec");
    };
    // A huge file is refused before it is read; read_file refuses a FIFO or a device itself.
    if (const auto size = fs::file_size(file, ec); !ec && size > max_spec_bytes) throw too_large();
    std::string text;
    try {
        text = platform::read_file(file);
    } catch (const usage_error& e) {
        throw spec_error(name, 0, "op.toml", e.what());
    }
    if (text.size() > max_spec_bytes) throw too_large();  // it grew after the check
    return parse_op_spec(text, file, file.parent_path());
}

}  // namespace kloop::spec
