// Unit under test: backend/local_sources — the files a candidate is made of: quoted includes
// followed through local headers, Python imports followed through local modules, a header
// outside the allowed places refused, angle includes beside the candidate, declared files and
// directories ([candidate] files) and their refusals, the identity hash, the copy.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "backend/local_sources.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using kloop::backend::builder_kind;
using kloop::backend::copy_local_sources;
using kloop::backend::find_local_sources;
using kloop::backend::local_sources_sha256;

namespace {

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    kloop::platform::write_file_atomic(p, text);
}

std::vector<std::string> names(const kloop::backend::local_sources& s) {
    std::vector<std::string> out;
    for (const auto& f : s.files) out.push_back(f.generic_string());
    return out;
}

}  // namespace

TEST(LocalSourcesTest, QuotedIncludesAreFollowedThroughLocalHeaders) {
    kloop::platform::scoped_temp_dir dir("kloop-local-sources");
    const auto root = dir.path() / "cand";
    const auto inc = dir.path() / "spec-include";
    write(root / "kernel.cu", "#include <cuda_runtime.h>\n#include \"tile.cuh\"\n  #  include \"kloop/kernel.h\"\n"
                              "#include \"shared.h\"\n#include \"missing.h\"\n");
    write(root / "tile.cuh", "#pragma once\n#include \"detail/traits.cuh\"\n");
    write(root / "detail/traits.cuh", "#include \"../tile.cuh\"  // a cycle back\n#include \"helpers.cuh\"\n");
    write(root / "detail/helpers.cuh", "// no includes\n");
    write(root / "unused.cuh", "// not included\n");
    write(inc / "shared.h", "#include \"never_followed.h\"\n");
    const auto s = find_local_sources(root / "kernel.cu", builder_kind::nvcc, {inc});
    EXPECT_EQ(s.root, fs::absolute(root).lexically_normal());
    EXPECT_EQ(names(s), (std::vector<std::string>{"kernel.cu", "detail/helpers.cuh", "detail/traits.cuh", "tile.cuh"}));
}

TEST(LocalSourcesTest, AHeaderOutsideTheAllowedPlacesIsRefusedWithItsLine) {
    kloop::platform::scoped_temp_dir dir("kloop-local-sources");
    const auto root = dir.path() / "cand";
    write(root / "kernel.cpp", "// kernel\n#include \"../common/helpers.hpp\"\n");
    write(dir.path() / "common/helpers.hpp", "\n");
    try {
        (void)find_local_sources(root / "kernel.cpp", builder_kind::cpp, {});
        FAIL() << "accepted a header outside the candidate's directory";
    } catch (const kloop::usage_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("kernel.cpp:2"), std::string::npos) << what;
        EXPECT_NE(what.find("../common/helpers.hpp"), std::string::npos) << what;
        EXPECT_NE(what.find("include_dirs"), std::string::npos) << what;
    }
    // Allowed once its directory is an include dir.
    EXPECT_EQ(find_local_sources(root / "kernel.cpp", builder_kind::cpp, {dir.path() / "common"}).files.size(), 1u);
}

TEST(LocalSourcesTest, PythonImportsAreFollowedThroughLocalModules) {
    kloop::platform::scoped_temp_dir dir("kloop-local-sources");
    const auto root = dir.path() / "cand";
    write(root / "kernel.py",
          "import numpy as np\nimport helpers, os\nfrom pkg import mod as m\nfrom pkg.sub import thing\nfrom .rel import x\n");
    write(root / "helpers.py", "from configs import (TILE,\n  WARPS)\n");
    write(root / "configs.py", "TILE = 64\n");
    write(root / "pkg/__init__.py", "\n");
    write(root / "pkg/mod.py", "import json\n");
    write(root / "pkg/sub.py", "thing = 1\n");
    write(root / "rel.py", "x = 2\n");
    write(root / "unused.py", "\n");
    const auto s = find_local_sources(root / "kernel.py", builder_kind::python, {});
    EXPECT_EQ(names(s), (std::vector<std::string>{"kernel.py", "configs.py", "helpers.py", "pkg/__init__.py",
                                                  "pkg/mod.py", "pkg/sub.py", "rel.py"}));
}

TEST(LocalSourcesTest, TheIdentityCoversEveryFileAndTheCopyKeepsTheLayout) {
    kloop::platform::scoped_temp_dir dir("kloop-local-sources");
    const auto root = dir.path() / "cand";
    write(root / "kernel.cpp", "#include \"inc/a.hpp\"\n");
    write(root / "inc/a.hpp", "// A\n");
    const auto before = local_sources_sha256(find_local_sources(root / "kernel.cpp", builder_kind::cpp, {}));
    write(root / "inc/a.hpp", "// B\n");  // a header-only change
    const auto s = find_local_sources(root / "kernel.cpp", builder_kind::cpp, {});
    EXPECT_NE(local_sources_sha256(s), before);
    copy_local_sources(s, dir.path() / "staged");
    EXPECT_EQ(kloop::platform::read_file(dir.path() / "staged/inc/a.hpp"), "// B\n");
    EXPECT_TRUE(fs::is_regular_file(dir.path() / "staged/kernel.cpp"));
}

TEST(LocalSourcesTest, AngleIncludesThatResolveBesideTheCandidateCount) {
    kloop::platform::scoped_temp_dir dir("kloop-local-sources");
    const auto root = dir.path() / "cand";
    write(root / "kernel.cpp", "#include <vector>\n#include <tuning/params.hpp>\n");
    write(root / "tuning/params.hpp", "#include \"table.inc\"\n");
    write(root / "tuning/table.inc", "1, 2, 3\n");
    const auto s = find_local_sources(root / "kernel.cpp", builder_kind::cpp, {});
    EXPECT_EQ(names(s), (std::vector<std::string>{"kernel.cpp", "tuning/params.hpp", "tuning/table.inc"}));
}

TEST(LocalSourcesTest, DeclaredFilesAndDirectoriesTravelAndAreScanned) {
    kloop::platform::scoped_temp_dir dir("kloop-local-sources");
    const auto root = dir.path() / "cand";
    // A computed include the scan cannot see, a directory of configurations, a header they include.
    write(root / "kernel.cu", "#define CONFIG \"configs/big.cuh\"\n#include CONFIG\n");
    write(root / "configs/big.cuh", "#include \"../common.cuh\"\n");
    write(root / "configs/small.cuh", "\n");
    write(root / "configs/.swap", "editor state\n");
    write(root / "configs/__pycache__/x.pyc", "\n");
    write(root / "common.cuh", "\n");
    write(root / "table.bin", "\x01\x02");
    write(dir.path() / "elsewhere.cuh", "\n");
    fs::create_symlink(dir.path() / "elsewhere.cuh", root / "configs/linked.cuh");
    EXPECT_EQ(names(find_local_sources(root / "kernel.cu", builder_kind::nvcc, {})), (std::vector<std::string>{"kernel.cu"}));
    const auto s = find_local_sources(root / "kernel.cu", builder_kind::nvcc, {}, {"configs/", "table.bin"});
    EXPECT_EQ(names(s), (std::vector<std::string>{"kernel.cu", "common.cuh", "configs/big.cuh", "configs/small.cuh", "table.bin"}));
    // A changed declared file changes the version's identity.
    const auto before = local_sources_sha256(s);
    write(root / "configs/small.cuh", "// retuned\n");
    EXPECT_NE(local_sources_sha256(find_local_sources(root / "kernel.cu", builder_kind::nvcc, {}, {"configs", "table.bin"})), before);
}

TEST(LocalSourcesTest, ADeclaredFileThatIsNotThereOrLeavesTheDirectoryIsRefused) {
    kloop::platform::scoped_temp_dir dir("kloop-local-sources");
    const auto root = dir.path() / "cand";
    write(root / "kernel.py", "import torch\n");
    write(dir.path() / "outside/secret.py", "\n");
    fs::create_symlink(dir.path() / "outside", root / "linked");
    fs::create_symlink(dir.path() / "outside/secret.py", root / "link.py");
    for (const std::string entry : {"missing.py", "linked", "linked/secret.py", "link.py"}) {
        try {
            (void)find_local_sources(root / "kernel.py", builder_kind::python, {}, {entry});
            ADD_FAILURE() << "accepted '" << entry << "'";
        } catch (const kloop::usage_error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("[candidate] files: '" + entry + "'"), std::string::npos) << what;
        }
    }
}
