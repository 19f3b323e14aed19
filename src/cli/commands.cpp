// kloop cli: the table of verbs (ninja's kTools idiom). Add a verb here and in its own file.
#include "cli/command.hpp"
#include "cli/verify_command.hpp"

namespace kloop::cli {

const std::vector<command_entry>& command_table() {
    static const std::vector<command_entry> table = {
        {"verify", "Gate a candidate against the op's reference, then benchmark it", &make_verify_command},
    };
    return table;
}

}  // namespace kloop::cli
