// kloop cli: the CLI11 application walked into a plain model (see cli_model.hpp).
#include "cli/cli_model.hpp"

#include <CLI/CLI.hpp>

#include <cctype>
#include <sstream>

namespace kloop::cli {

namespace {

// "TEXT:{targeted,full,source}" -> {"targeted", "full", "source"}: CLI11's IsMember describes its
// set in braces after the type.
std::vector<std::string> choices_of(const std::string& type) {
    std::vector<std::string> out;
    const auto open = type.find('{');
    const auto close = type.rfind('}');
    if (open == std::string::npos || close == std::string::npos || close < open) return out;
    std::stringstream items(type.substr(open + 1, close - open - 1));
    for (std::string item; std::getline(items, item, ',');) {
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.erase(item.begin());
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
        if (!item.empty()) out.push_back(item);
    }
    return out;
}

option_model describe_option(const CLI::Option& o) {
    option_model m;
    for (const auto& s : o.get_snames()) m.names.push_back("-" + s);
    for (const auto& l : o.get_lnames()) m.names.push_back("--" + l);
    if (m.names.empty()) m.positional = o.get_name(true);
    m.description = o.get_description();
    m.takes_value = o.get_items_expected_max() > 0;
    if (m.takes_value) {
        m.type = o.get_type_name();
        m.default_value = o.get_default_str();
        m.choices = choices_of(m.type);
    }
    m.repeatable = m.takes_value && (o.get_expected_max() > 1 || o.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll);
    m.required = o.get_required();
    return m;
}

void describe_options(const CLI::App& app, std::vector<option_model>& options, std::vector<option_model>* positionals) {
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) continue;  // hidden
        option_model m = describe_option(*o);
        if (!m.positional.empty()) {
            if (positionals != nullptr) positionals->push_back(std::move(m));
        } else {
            options.push_back(std::move(m));
        }
    }
}

}  // namespace

bool option_model::is_numeric() const {
    for (const char* t : {"INT", "UINT", "FLOAT", "NUMBER"})
        if (type == t || type.rfind(std::string(t) + ":", 0) == 0) return true;
    return false;
}

cli_model describe(const CLI::App& app) {
    cli_model m;
    m.name = app.get_name();
    m.description = app.get_description();
    m.footer = app.get_footer();
    describe_options(app, m.options, nullptr);
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->get_group().empty()) continue;  // hidden: a verb kloop runs itself
        verb_model v;
        v.name = sub->get_name();
        v.description = sub->get_description();
        describe_options(*sub, v.options, &v.positionals);
        m.verbs.push_back(std::move(v));
    }
    return m;
}

std::vector<exit_code_line> exit_codes_of(const std::string& footer) {
    std::vector<exit_code_line> out;
    std::stringstream lines(footer);
    for (std::string line; std::getline(lines, line);) {
        std::size_t i = 0;
        while (i < line.size() && line[i] == ' ') ++i;
        const std::size_t code_begin = i;
        while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
        if (i == code_begin || i == line.size() || line[i] != ' ') continue;
        const std::string code = line.substr(code_begin, i - code_begin);
        while (i < line.size() && line[i] == ' ') ++i;
        if (i < line.size()) out.push_back({code, line.substr(i)});
    }
    return out;
}

}  // namespace kloop::cli
