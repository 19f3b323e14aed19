// Unit under test: cli/cli — docs/cli.md shows exactly what `kloop [VERB] --help` prints.
// Regenerate the page with scripts/update-cli-doc.sh after changing an option.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/command.hpp"

namespace {

std::string read_doc() {
    std::ifstream in(std::string(KLOOP_TEST_SOURCE_DIR) + "/docs/cli.md");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string help_of(const std::string& verb) {
    std::vector<std::string> args;
    if (!verb.empty()) args.push_back(verb);
    args.push_back("--help");
    std::ostringstream out, err;
    EXPECT_EQ(kloop::cli::run(args, out, err), 0) << err.str();
    return out.str();
}

// The fenced block after `<!-- kloop-help VERB -->`, or nullopt.
std::optional<std::string> doc_block(const std::string& doc, const std::string& verb) {
    const std::string marker = verb.empty() ? "<!-- kloop-help -->" : "<!-- kloop-help " + verb + " -->";
    const auto at = doc.find(marker + "\n```text\n");
    if (at == std::string::npos) return std::nullopt;
    const auto begin = at + marker.size() + std::string("\n```text\n").size();
    const auto end = doc.find("\n```\n", begin);
    if (end == std::string::npos) return std::nullopt;
    return doc.substr(begin, end - begin + 1);
}

}  // namespace

TEST(CliDocTest, TopLevelHelpMatchesTheDoc) {
    const auto block = doc_block(read_doc(), "");
    ASSERT_TRUE(block.has_value()) << "docs/cli.md lacks the <!-- kloop-help --> block";
    EXPECT_EQ(*block, help_of("")) << "run scripts/update-cli-doc.sh";
}

TEST(CliDocTest, EveryVerbIsDocumentedWithItsExactHelp) {
    const auto doc = read_doc();
    for (const auto& entry : kloop::cli::command_table()) {
        const auto block = doc_block(doc, entry.name);
        ASSERT_TRUE(block.has_value()) << "docs/cli.md lacks <!-- kloop-help " << entry.name << " -->";
        EXPECT_EQ(*block, help_of(entry.name)) << "run scripts/update-cli-doc.sh (verb " << entry.name << ")";
    }
}

TEST(CliTest, UnknownVerbAndBadValuesAreUsageErrors) {
    std::ostringstream out, err;
    EXPECT_EQ(kloop::cli::run({"frobnicate"}, out, err), 2);
    EXPECT_NE(err.str().find("frobnicate"), std::string::npos) << err.str();
    std::ostringstream out2, err2;
    EXPECT_EQ(kloop::cli::run({"verify", "x", "--candidate", "y", "--timeout", "-3"}, out2, err2), 2);
    EXPECT_NE(err2.str().find("--timeout"), std::string::npos) << err2.str();
}

TEST(CliTest, MalformedSpecIsExit2NamingFileLineAndField) {
    const auto dir = std::filesystem::temp_directory_path() / "kloop-cli-bad-spec";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "ref.cpp") << "int x;\n";
    std::ofstream(dir / "op.toml") << "[op]\nname = \"bad\"\nreference = \"ref.cpp\"\nbackend = \"cpuu\"\n";
    std::ofstream(dir / "cand.cpp") << "int y;\n";
    std::ostringstream out, err;
    EXPECT_EQ(kloop::cli::run({"verify", dir.string(), "--candidate", (dir / "cand.cpp").string()}, out, err), 2);
    EXPECT_NE(err.str().find("op.toml:4"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find("backend"), std::string::npos) << err.str();
    std::filesystem::remove_all(dir);
}
