// Unit under test: cli/cli_model — the walk of kloop's CLI11 application: every verb of the
// table, every option and positional --help lists (and nothing else), value types, choices,
// defaults, and the exit codes of --help's footer.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli/cli.hpp"
#include "cli/cli_model.hpp"
#include "cli/command.hpp"

namespace kc = kloop::cli;

namespace {

std::string help_of(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    EXPECT_EQ(kc::run(args, out, err), 0) << err.str();
    return out.str();
}

// The option names a --help text lists: "-h,--help", "--timeout FLOAT..." at the start of an
// indented line.
std::set<std::string> names_in_help(const std::string& help) {
    std::set<std::string> names;
    std::stringstream lines(help);
    const std::regex item(R"(^  (-[-A-Za-z0-9]+(,-[-A-Za-z0-9]+)*))");
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, item)) continue;
        std::stringstream parts(m[1].str());
        for (std::string n; std::getline(parts, n, ',');) names.insert(n);
    }
    return names;
}

std::set<std::string> names_in_model(const std::vector<kc::option_model>& options) {
    std::set<std::string> names;
    for (const auto& o : options) names.insert(o.names.begin(), o.names.end());
    return names;
}

const kc::verb_model* find_verb(const kc::cli_model& m, const std::string& name) {
    for (const auto& v : m.verbs)
        if (v.name == name) return &v;
    return nullptr;
}

const kc::option_model* find_option(const kc::verb_model& v, const std::string& name) {
    for (const auto& o : v.options)
        if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) return &o;
    return nullptr;
}

}  // namespace

// Every verb of the table in order, but the hidden ones (kloop's own: a Slurm task), which the
// completion and the man page built from the model leave out.
TEST(CliModelTest, EveryVerbOfTheTableInOrder) {
    const auto m = kc::describe_command_line();
    EXPECT_EQ(m.name, "kloop");
    std::vector<const kc::command_entry*> listed;
    bool any_hidden = false;
    for (const auto& e : kc::command_table()) {
        if (e.hidden) any_hidden = true;
        else listed.push_back(&e);
    }
    EXPECT_TRUE(any_hidden) << "evaluate-sibling is kloop's own verb";
    ASSERT_EQ(m.verbs.size(), listed.size());
    for (std::size_t i = 0; i < m.verbs.size(); ++i) {
        EXPECT_EQ(m.verbs[i].name, listed[i]->name);
        EXPECT_EQ(m.verbs[i].description, listed[i]->description);
    }
    for (const auto& v : m.verbs) EXPECT_NE(v.name, "evaluate-sibling");
    EXPECT_EQ(help_of({"--help"}).find("evaluate-sibling"), std::string::npos);
}

TEST(CliModelTest, TheOptionsAreThoseHelpLists) {
    const auto m = kc::describe_command_line();
    EXPECT_EQ(names_in_model(m.options), names_in_help(help_of({"--help"})));
    for (const auto& v : m.verbs) {
        const auto from_help = names_in_help(help_of({v.name, "--help"}));
        EXPECT_FALSE(from_help.empty()) << v.name;
        EXPECT_EQ(names_in_model(v.options), from_help) << v.name;
    }
}

TEST(CliModelTest, TheGeneratorsAreNotInTheModel) {
    const auto m = kc::describe_command_line();
    const auto top = names_in_model(m.options);
    EXPECT_TRUE(top.count("--version"));
    EXPECT_FALSE(top.count("--generate-completion"));
    EXPECT_FALSE(top.count("--generate-man"));
}

TEST(CliModelTest, PositionalsFlagsValuesChoicesDefaults) {
    const auto m = kc::describe_command_line();
    const auto* verify = find_verb(m, "verify");
    ASSERT_NE(verify, nullptr);
    ASSERT_EQ(verify->positionals.size(), 1u);
    EXPECT_EQ(verify->positionals[0].positional, "op-dir");
    EXPECT_TRUE(verify->positionals[0].required);

    const auto* json = find_option(*verify, "--json");
    ASSERT_NE(json, nullptr);
    EXPECT_FALSE(json->takes_value);

    const auto* candidate = find_option(*verify, "--candidate");
    ASSERT_NE(candidate, nullptr);
    EXPECT_TRUE(candidate->takes_value);
    EXPECT_TRUE(candidate->required);
    EXPECT_FALSE(candidate->is_numeric());

    const auto* mode = find_option(*verify, "--mode");
    ASSERT_NE(mode, nullptr);
    EXPECT_TRUE(mode->repeatable);

    const auto* timeout = find_option(*verify, "--timeout");
    ASSERT_NE(timeout, nullptr);
    EXPECT_TRUE(timeout->is_numeric()) << timeout->type;
    EXPECT_EQ(timeout->default_value, "120");

    const auto* profile = find_verb(m, "profile");
    ASSERT_NE(profile, nullptr);
    const auto* set = find_option(*profile, "--set");
    ASSERT_NE(set, nullptr);
    EXPECT_EQ(set->choices, (std::vector<std::string>{"targeted", "full", "source"}));
}

TEST(CliModelTest, ExitCodesOfTheFooter) {
    const auto codes = kc::exit_codes_of(kc::describe_command_line().footer);
    std::vector<std::string> numbers;
    for (const auto& c : codes) numbers.push_back(c.code);
    EXPECT_EQ(numbers, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "130"}));
    EXPECT_EQ(codes.front().meaning, "success (gate green)");
    EXPECT_TRUE(kc::exit_codes_of("Exit codes:\n  no code here\n").empty());
}
