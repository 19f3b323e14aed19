// Unit under test: backend/python/python_package_dir — [build] include_dirs entries inside an
// installed Python package: found by the op's interpreter without running the package's code, the
// directory checked, and every failure a spec_error naming op.toml, the line and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "backend/backend.hpp"
#include "backend/python/python_package_dir.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "support/scoped_env.hpp"

namespace fs = std::filesystem;
namespace ks = kloop::spec;
using kloop::backend::python::resolve_include_dir;
using kloop::testing::scoped_env;

namespace {

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    kloop::platform::write_file_atomic(p, text);
}

ks::op_spec spec_in(const fs::path& dir) {
    ks::op_spec s;
    s.name = "op";
    s.backend = ks::backend_kind::cuda;
    s.op_dir = dir;
    s.spec_file = dir / "op.toml";
    return s;
}

ks::include_dir package_dir(const std::string& package, const std::string& path) {
    return ks::include_dir{path, package, 7, "build.include_dirs[1]"};
}

// A site directory with package `name` whose __init__.py, if it ever ran, would leave a marker.
fs::path make_site(const fs::path& root, const std::string& name) {
    const fs::path site = root / "site";
    write(site / name / "__init__.py", "open(" + std::string("'") + (root / "ran").string() + "', 'w').write('x')\n");
    write(site / name / "source" / "include" / "cute" / "tensor.hpp", "#pragma once\n");
    return site;
}

// An op directory and a site directory on PYTHONPATH holding package `name`; the default
// interpreter (no KLOOP_PYTHON).
struct installed_package {
    explicit installed_package(const std::string& name)
        : site(make_site(dir.path(), name)), path("PYTHONPATH", site.string()), py("KLOOP_PYTHON", std::nullopt),
          spec(spec_in(dir.path())) {}
    kloop::platform::scoped_temp_dir dir{"kloop-pkg-dir"};
    fs::path site;
    scoped_env path, py;
    ks::op_spec spec;
};

}  // namespace

TEST(PythonPackageDirTest, FindsTheDirectoryInsideThePackageWithoutRunningIt) {
    const installed_package pkg("kloop_pkg_found");
    const auto& dir = pkg.dir;
    const auto& site = pkg.site;
    const auto& spec = pkg.spec;
    EXPECT_EQ(fs::weakly_canonical(resolve_include_dir(spec, package_dir("kloop_pkg_found", "source/include"))),
              fs::weakly_canonical(site / "kloop_pkg_found" / "source" / "include"));
    EXPECT_EQ(fs::weakly_canonical(resolve_include_dir(spec, package_dir("kloop_pkg_found", ""))),
              fs::weakly_canonical(site / "kloop_pkg_found"));
    EXPECT_FALSE(fs::exists(dir.path() / "ran")) << "the package's __init__.py ran";
}

TEST(PythonPackageDirTest, APlainDirectoryIsTheOpDirectorysAndSpawnsNothing) {
    const auto spec = spec_in("/op");
    scoped_env py("KLOOP_PYTHON", "/nonexistent/python");  // would fail if it were asked
    EXPECT_EQ(resolve_include_dir(spec, ks::include_dir{"/op/include", "", 3, "build.include_dirs[0]"}),
              fs::path("/op/include"));
}

TEST(PythonPackageDirTest, OpIncludeDirsKeepTheSpecsOrder) {
    installed_package pkg("kloop_pkg_order");
    const auto& dir = pkg.dir;
    const auto& site = pkg.site;
    auto& spec = pkg.spec;
    spec.build.include_dirs = {ks::include_dir{(dir.path() / "a").string(), "", 3, "build.include_dirs[0]"},
                               package_dir("kloop_pkg_order", "source/include"),
                               ks::include_dir{(dir.path() / "b").string(), "", 3, "build.include_dirs[2]"}};
    const auto dirs = kloop::backend::op_include_dirs(spec);
    ASSERT_EQ(dirs.size(), 3u);
    EXPECT_EQ(dirs[0], dir.path() / "a");
    EXPECT_EQ(fs::weakly_canonical(dirs[1]), fs::weakly_canonical(site / "kloop_pkg_order" / "source" / "include"));
    EXPECT_EQ(dirs[2], dir.path() / "b");
}

TEST(PythonPackageDirTest, EveryFailureNamesTheEntry) {
    const installed_package pkg("kloop_pkg_errors");
    const auto& dir = pkg.dir;
    const auto& spec = pkg.spec;
    const auto error_of = [&](const ks::include_dir& d) -> kloop::spec_error {
        try {
            (void)resolve_include_dir(spec, d);
        } catch (const kloop::spec_error& e) {
            return e;
        }
        ADD_FAILURE() << "resolved " << d.python_package << "/" << d.path;
        return kloop::spec_error("", 0, "", "");
    };
    {  // not installed
        const auto e = error_of(package_dir("kloop_pkg_not_installed", "include"));
        EXPECT_EQ(e.get_file(), (dir.path() / "op.toml").string());
        EXPECT_EQ(e.get_line(), 7);
        EXPECT_EQ(e.get_field(), "build.include_dirs[1].python_package");
        EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
        EXPECT_NE(std::string(e.what()).find("finds no package 'kloop_pkg_not_installed'"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("pip install nvidia-cutlass"), std::string::npos) << e.what();
    }
    {  // installed, the directory not in it
        const auto e = error_of(package_dir("kloop_pkg_errors", "source/lib"));
        EXPECT_EQ(e.get_field(), "build.include_dirs[1].path");
        EXPECT_NE(std::string(e.what()).find("'source/lib' is not a directory inside package 'kloop_pkg_errors'"),
                  std::string::npos)
            << e.what();
    }
    {  // an interpreter that is not there
        scoped_env bad("KLOOP_PYTHON", (dir.path() / "no-python").string());
        const auto e = error_of(package_dir("kloop_pkg_errors", "source/include"));
        EXPECT_EQ(e.get_field(), "build.include_dirs[1].python_package");
        EXPECT_NE(std::string(e.what()).find("could not start"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("KLOOP_PYTHON"), std::string::npos) << e.what();
    }
}
