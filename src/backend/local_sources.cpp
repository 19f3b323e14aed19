// kloop backend: the files a candidate is made of (see local_sources.hpp).
#include "backend/local_sources.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/sha256.hpp"

namespace kloop::backend {

namespace fs = std::filesystem;

namespace {

bool is_under(const fs::path& p, const fs::path& dir) {
    const auto rel = p.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
}

std::vector<std::string> lines_of(const fs::path& file) {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

fs::path normal(const fs::path& p) { return fs::absolute(p).lexically_normal(); }

// A quoted include's file, looked up as the compiler does; empty when none exists.
fs::path resolve_include(const std::string& name, const fs::path& includer, const fs::path& root,
                         const std::vector<fs::path>& allowed_dirs) {
    std::error_code ec;
    for (const fs::path& dir : {includer.parent_path(), root})
        if (const auto p = normal(dir / name); fs::is_regular_file(p, ec)) return p;
    for (const auto& dir : allowed_dirs)
        if (const auto p = normal(dir / name); fs::is_regular_file(p, ec)) return p;
    return {};
}

void scan_native(const fs::path& file, const fs::path& root, const std::vector<fs::path>& allowed,
                 std::set<fs::path>& found) {
    static const std::regex include_re(R"(^\s*#\s*include\s*"([^"]+)\")");
    static const std::regex angle_re(R"(^\s*#\s*include\s*<([^>]+)>)");
    const auto lines = lines_of(file);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        std::smatch m;
        if (std::regex_search(lines[i], m, angle_re)) {
            // -I<candidate dir> comes before the system's directories: a file there wins.
            std::error_code ec;
            if (const auto p = normal(root / m[1].str()); is_under(p, root) && fs::is_regular_file(p, ec))
                if (found.insert(p).second) scan_native(p, root, allowed, found);
            continue;
        }
        if (!std::regex_search(lines[i], m, include_re)) continue;
        const fs::path p = resolve_include(m[1].str(), file, root, allowed);
        if (p.empty()) continue;  // the compiler reports it
        if (std::any_of(allowed.begin(), allowed.end(), [&](const fs::path& d) { return is_under(p, normal(d)); }))
            continue;
        if (!is_under(p, root))
            throw usage_error(fmt::format(
                "{}:{}: #include \"{}\" is '{}', outside the candidate's directory '{}' and the spec's include_dirs: "
                "a candidate is its directory's files (docs/loop.md, \"A candidate's files\"); move the header "
                "next to the candidate, or list its directory in [build] include_dirs",
                file.string(), i + 1, m[1].str(), p.string(), root.string()));
        if (found.insert(p).second) scan_native(p, root, allowed, found);
    }
}

// The files of module `dotted` (a.b.c) under `base`: each package's __init__.py on the way and
// the module itself (a .py file or a package); empty when it is not there.
std::vector<fs::path> module_files(const std::string& dotted, const fs::path& base) {
    std::vector<fs::path> files;
    std::error_code ec;
    fs::path dir = base;
    std::stringstream parts(dotted);
    std::vector<std::string> names;
    for (std::string part; std::getline(parts, part, '.');)
        if (!part.empty()) names.push_back(part);
    for (std::size_t k = 0; k < names.size(); ++k) {
        const bool last = k + 1 == names.size();
        if (last && fs::is_regular_file(dir / (names[k] + ".py"), ec)) {
            files.push_back(normal(dir / (names[k] + ".py")));
            return files;
        }
        dir /= names[k];
        if (!fs::is_regular_file(dir / "__init__.py", ec)) return {};
        files.push_back(normal(dir / "__init__.py"));
    }
    return files;
}

// One item of an import list without its `as` alias and blanks: "mod as m " -> "mod".
std::string imported_name(const std::string& item) {
    std::string name = item.substr(0, item.find(" as "));
    name.erase(std::remove_if(name.begin(), name.end(), [](unsigned char c) { return std::isspace(c) != 0; }), name.end());
    return name;
}

void scan_python(const fs::path& file, const fs::path& root, std::set<fs::path>& found) {
    static const std::regex from_re(R"(^\s*from\s+(\.*)([\w.]*)\s+import\s+\(?\s*([\w\s,.*]+))");
    static const std::regex import_re(R"(^\s*import\s+([\w\s,.]+))");
    auto add = [&](const std::vector<fs::path>& files) {
        for (const auto& p : files)
            if (is_under(p, root) && found.insert(p).second) scan_python(p, root, found);
    };
    for (const auto& line : lines_of(file)) {
        std::smatch m;
        if (std::regex_search(line, m, from_re)) {
            // `from .x import y` is relative to the importing file's package; plain ones to the root.
            fs::path base = m[1].length() > 0 ? file.parent_path() : root;
            for (std::size_t up = 1; up < static_cast<std::size_t>(m[1].length()); ++up) base = base.parent_path();
            const std::string module = m[2].str();
            if (!module.empty()) add(module_files(module, base));
            // `from pkg import mod`: mod may be a submodule.
            std::stringstream names(m[3].str());
            for (std::string item; std::getline(names, item, ',');) {
                const std::string name = imported_name(item);
                if (name.empty() || name == "*") continue;
                add(module_files(module.empty() ? name : module + "." + name, base));
            }
        } else if (std::regex_search(line, m, import_re)) {
            std::stringstream names(m[1].str());
            for (std::string item; std::getline(names, item, ',');)
                if (const std::string name = imported_name(item); !name.empty()) add(module_files(name, root));
        }
    }
}

// The files of one [candidate] files entry: the file, or every regular file under the directory
// (hidden names, __pycache__ and symbolic links skipped), sorted.
std::vector<fs::path> declared_files(const std::string& entry, const fs::path& root) {
    const fs::path p = normal(root / entry);
    std::error_code ec;
    const auto st = fs::symlink_status(p, ec);
    std::error_code canon_ec;  // a directory on the way that is a link out of the candidate's directory
    const bool inside = is_under(p, root) && is_under(fs::weakly_canonical(p, canon_ec), fs::weakly_canonical(root, canon_ec));
    if (!inside || canon_ec || ec || !(fs::is_regular_file(st) || fs::is_directory(st)))
        throw usage_error(fmt::format(
            "op.toml [candidate] files: '{}' is not a file or directory in the candidate's directory '{}' (looked for "
            "'{}'; symbolic links are not followed)",
            entry, root.string(), p.string()));
    if (fs::is_regular_file(st)) return {p};
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind('.', 0) == 0 || name == "__pycache__") {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (it->is_symlink(ec)) continue;
        if (it->is_regular_file(ec)) files.push_back(normal(it->path()));
    }
    if (ec)
        throw usage_error(fmt::format("op.toml [candidate] files: cannot list '{}': {}", p.string(), ec.message()));
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

local_sources find_local_sources(const fs::path& source, builder_kind builder, const std::vector<fs::path>& allowed_dirs,
                                 const std::vector<std::string>& declared) {
    local_sources s;
    const fs::path src = normal(source);
    s.root = src.parent_path();
    std::set<fs::path> found;
    const auto scan = [&](const fs::path& file) {
        if (builder == builder_kind::python) scan_python(file, s.root, found);
        else scan_native(file, s.root, allowed_dirs, found);
    };
    scan(src);
    for (const auto& entry : declared)
        for (const auto& p : declared_files(entry, s.root))
            if (found.insert(p).second) scan(p);
    found.erase(src);
    s.files.push_back(src.filename());
    for (const auto& p : found) s.files.push_back(p.lexically_relative(s.root));
    return s;
}

std::string local_sources_sha256(const local_sources& s) {
    platform::sha256_hasher h;
    for (const auto& f : s.files) {
        h.update_field(f.generic_string());
        h.update_field(platform::sha256_file(s.root / f));
    }
    return h.hex_digest();
}

void copy_local_sources(const local_sources& s, const fs::path& dest) {
    for (const auto& f : s.files) {
        fs::create_directories((dest / f).parent_path());
        fs::copy_file(s.root / f, dest / f, fs::copy_options::overwrite_existing);
    }
}

}  // namespace kloop::backend
