// Unit under test: cli/completion — the bash and zsh completion scripts generated from kloop's
// command line: valid syntax (bash -n; zsh -n when zsh is installed), and, run in a real bash,
// every verb and each verb's options complete, an option's choices complete, a number completes
// to nothing, file names complete (spaces included), the generator command lines never appear.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/completion.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
namespace kc = kloop::cli;
namespace kp = kloop::platform;

namespace {

kp::process_result run(std::vector<std::string> argv, const fs::path& cwd = {}) {
    kp::process_request r;
    r.argv = std::move(argv);
    r.cwd = cwd;
    r.timeout_s = 60;
    kp::posix_command_runner runner;
    return runner.run(r);
}

bool have(const std::string& tool) {
    return run({"sh", "-c", "command -v " + tool + " >/dev/null"}).succeeded();
}

class BashCompletionTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_script = m_dir.path() / "kloop.bash";
        kp::write_file_atomic(m_script, kc::bash_completion(kc::describe_command_line()));
    }

    // What `kloop <words...><TAB>` offers: the last word is the one being completed.
    std::vector<std::string> complete(const std::vector<std::string>& words, const fs::path& cwd = {}) {
        std::vector<std::string> argv = {"bash", "--norc", "--noprofile", "-c",
                                         "source \"$1\"; shift\n"
                                         "COMP_WORDS=(kloop \"$@\"); COMP_CWORD=$#\n"
                                         "COMP_LINE=\"${COMP_WORDS[*]}\"; COMP_POINT=${#COMP_LINE}\n"
                                         "_kloop\n"
                                         "printf '%s\\n' \"${COMPREPLY[@]}\"",
                                         "bash", m_script.string()};
        argv.insert(argv.end(), words.begin(), words.end());
        const auto r = run(argv, cwd);
        EXPECT_TRUE(r.succeeded()) << r.describe() << r.stderr_text;
        std::vector<std::string> out;
        std::stringstream lines(r.stdout_text);
        for (std::string l; std::getline(lines, l);)
            if (!l.empty()) out.push_back(l);
        std::sort(out.begin(), out.end());
        return out;
    }

    kp::scoped_temp_dir m_dir{"kloop-completion-test"};
    fs::path m_script;
};

}  // namespace

TEST_F(BashCompletionTest, IsValidBash) {
    const auto r = run({"bash", "-n", m_script.string()});
    EXPECT_TRUE(r.succeeded()) << r.describe() << r.stderr_text;
}

TEST_F(BashCompletionTest, EveryVerbCompletes) {
    const auto m = kc::describe_command_line();
    const auto all = complete({""});
    ASSERT_EQ(all.size(), m.verbs.size());
    for (const auto& v : m.verbs) EXPECT_TRUE(std::count(all.begin(), all.end(), v.name)) << v.name;
    EXPECT_EQ(complete({"ver"}), (std::vector<std::string>{"verify"}));
}

TEST_F(BashCompletionTest, EveryOptionOfEveryVerbCompletes) {
    const auto m = kc::describe_command_line();
    for (const auto& v : m.verbs) {
        const auto offered = complete({v.name, "-"});
        std::set<std::string> expected;
        for (const auto& o : v.options) expected.insert(o.names.begin(), o.names.end());
        EXPECT_EQ(std::set<std::string>(offered.begin(), offered.end()), expected) << v.name;
    }
    EXPECT_EQ(complete({"verify", "--cand"}), (std::vector<std::string>{"--candidate"}));
}

TEST_F(BashCompletionTest, TopLevelOptionsWithoutTheHiddenOnes) {
    const auto offered = complete({"--"});
    EXPECT_EQ(offered, (std::vector<std::string>{"--help", "--version"}));
}

TEST_F(BashCompletionTest, ChoicesNumbersAndFiles) {
    EXPECT_EQ(complete({"profile", "--set", ""}), (std::vector<std::string>{"full", "source", "targeted"}));
    EXPECT_EQ(complete({"profile", "--set", "f"}), (std::vector<std::string>{"full"}));
    EXPECT_TRUE(complete({"verify", "--timeout", ""}).empty());

    kp::scoped_temp_dir files("kloop-completion-files");
    kp::write_file_atomic(files.path() / "my kernel.cpp", "");
    kp::write_file_atomic(files.path() / "other.cpp", "");
    EXPECT_EQ(complete({"verify", "--candidate", "my"}, files.path()), (std::vector<std::string>{"my kernel.cpp"}));
    // A positional (the op directory) after the verb: file names too.
    EXPECT_EQ(complete({"verify", "oth"}, files.path()), (std::vector<std::string>{"other.cpp"}));
}

TEST(ZshCompletionTest, NamesEveryVerbAndOption) {
    const auto m = kc::describe_command_line();
    const std::string z = kc::zsh_completion(m);
    EXPECT_EQ(z.rfind("#compdef kloop\n", 0), 0u);
    for (const auto& v : m.verbs) {
        EXPECT_NE(z.find("'" + v.name + ":"), std::string::npos) << v.name;  // _describe's list
        EXPECT_NE(z.find("        (" + v.name + ")\n"), std::string::npos) << v.name;
        for (const auto& o : v.options)
            for (const auto& n : o.names) EXPECT_NE(z.find(n), std::string::npos) << v.name << " " << n;
    }
    EXPECT_NE(z.find("'*--set=["), std::string::npos);  // repeatable
    EXPECT_NE(z.find(":(targeted full source)'"), std::string::npos);
    EXPECT_NE(z.find("'--candidate=[Candidate source file"), std::string::npos);
    EXPECT_NE(z.find("'--json[Print the JSON record"), std::string::npos);  // a flag: no value
    EXPECT_NE(z.find("'--timeout=[Wall-clock limit per runner process, seconds]:FLOAT: '"), std::string::npos);
    EXPECT_NE(z.find("':op-dir:_files'"), std::string::npos);
    EXPECT_EQ(z.find("'--generate-completion="), std::string::npos);  // not an option of kloop
    EXPECT_EQ(z.find("'--generate-man["), std::string::npos);
}

TEST(ZshCompletionTest, IsValidZsh) {
    if (!have("zsh")) GTEST_SKIP() << "zsh is not installed";
    kp::scoped_temp_dir dir("kloop-completion-test");
    const fs::path script = dir.path() / "_kloop";
    kp::write_file_atomic(script, kc::zsh_completion(kc::describe_command_line()));
    const auto r = run({"zsh", "-n", script.string()});
    EXPECT_TRUE(r.succeeded()) << r.describe() << r.stderr_text;
}

TEST(CompletionCliTest, PrintedForTheGeneratorCommandLine) {
    std::ostringstream out, err;
    ASSERT_EQ(kc::run({"--generate-completion", "bash"}, out, err), 0) << err.str();
    EXPECT_EQ(out.str(), kc::bash_completion(kc::describe_command_line()));
    std::ostringstream zout;
    ASSERT_EQ(kc::run({"--generate-completion", "zsh"}, zout, err), 0) << err.str();
    EXPECT_EQ(zout.str(), kc::zsh_completion(kc::describe_command_line()));
    std::ostringstream bad_out, bad_err;
    EXPECT_EQ(kc::run({"--generate-completion", "fish"}, bad_out, bad_err), 2);
    EXPECT_NE(bad_err.str().find("fish"), std::string::npos) << bad_err.str();
    std::ostringstream none_out, none_err;
    EXPECT_EQ(kc::run({"--generate-completion"}, none_out, none_err), 2);
    EXPECT_NE(none_err.str().find("bash or zsh"), std::string::npos) << none_err.str();
    EXPECT_EQ(kc::help_text().find("generate"), std::string::npos);  // not in --help
}
